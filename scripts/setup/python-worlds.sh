#!/usr/bin/env bash
# Builds the native worlds' Python extension (adapters/python-worlds, the `mosaic-worlds`
# package: PyO3 + maturin) and installs it into the venv "envs" of python-envs.sh, which
# holds maturin, numpy, Gymnasium and PettingZoo. A debug build in the repository's own
# target dir, so a rebuild only compiles what changed; skipped when the installed build
# was made from the same sources (a marker keyed by their hash).
# Prints (for eval):  MOSAIC_PY_WORLDS=<python that imports mosaic_worlds>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

eval "$("$ROOT/scripts/setup/python-envs.sh")"
VENV_BIN="$(dirname "$MOSAIC_PY_ENVS")"

# The sources the extension is built from: the crates it links and the Python package.
sources_hash() {
    (cd "$ROOT" && find core protocols adapters -type f \
        \( -name '*.rs' -o -name '*.py' -o -name '*.toml' \) -not -path '*/tests/*' -print0 \
        | sort -z | xargs -0 sha256sum; sha256sum Cargo.lock Cargo.toml) | sha256sum | cut -c1-12
}

install_worlds() {
    local marker
    marker="$VENV_BIN/../.mosaic-worlds-$(sources_hash)"
    [[ -f "$marker" ]] && return 0
    log "building the mosaic_worlds extension into $VENV_BIN/.. (log: $MOSAIC_CACHE/logs/python-worlds.log)"
    local t0=$SECONDS
    rm -f "$VENV_BIN"/../.mosaic-worlds-*
    # maturin's build backend runs the `maturin` program: the venv's, on PATH.
    with_progress "mosaic_worlds build" python-worlds env PATH="$VENV_BIN:$PATH" \
        "$MOSAIC_PY_ENVS" -m pip install --no-input --no-build-isolation --no-deps \
        --force-reinstall "$ROOT/adapters/python-worlds"
    quiet python-worlds "$MOSAIC_PY_ENVS" -c 'import mosaic_worlds; mosaic_worlds.MosaicEnv("gridworld").reset(seed=0)'
    touch "$marker"
    log "mosaic_worlds built and installed in $((SECONDS - t0)) s"
}

with_lock python-worlds install_worlds
echo "MOSAIC_PY_WORLDS=$MOSAIC_PY_ENVS"
