# Sourced helper for scripts/setup/*.sh (bash). Not executable on its own.
#   MOSAIC_CACHE   where everything is installed (default: $XDG_CACHE_HOME/mosaic or ~/.cache/mosaic)
#   PYTHON         the interpreter used to create venvs / run pip (default: python3)
MOSAIC_CACHE="${MOSAIC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mosaic}"
PYTHON="${PYTHON:-python3}"
export MOSAIC_CACHE
mkdir -p "$MOSAIC_CACHE/locks" "$MOSAIC_CACHE/logs"

log() { printf '[setup] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# with_lock NAME CMD [ARGS...]: run CMD (a command or shell function) while holding an
# exclusive flock on $MOSAIC_CACHE/locks/NAME.lock, so concurrent callers (parallel
# tests) wait for each other instead of building the same thing twice. CMD should
# re-check its ".complete" marker once it holds the lock.
with_lock() {
    local name=$1; shift
    (
        exec 9>"$MOSAIC_CACHE/locks/$name.lock"
        if ! flock -n 9; then
            log "waiting for lock $name (another setup is running)"
            flock 9
        fi
        "$@"
    )
}

# quiet LOGNAME CMD [ARGS...]: run CMD with its output in $MOSAIC_CACHE/logs/LOGNAME.log;
# on failure show the log's tail on stderr and exit.
quiet() {
    local logf="$MOSAIC_CACHE/logs/$1.log"; shift
    if ! "$@" >>"$logf" 2>&1; then
        tail -n 40 "$logf" >&2
        die "command failed: $* (full log: $logf)"
    fi
}

# with_progress WHAT LOGNAME CMD [ARGS...]: like quiet, for long steps: while CMD runs, a
# line every $MOSAIC_PROGRESS_EVERY seconds (default 30) says how long it has taken and the
# last progress figure in its log (cmake's "[ 42%]"), so a long build is never silent.
with_progress() {
    local what=$1 logf="$MOSAIC_CACHE/logs/$2.log"; shift 2
    local every="${MOSAIC_PROGRESS_EVERY:-30}" t0=$SECONDS
    "$@" >>"$logf" 2>&1 &
    local pid=$! next=$((SECONDS + every))
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if (( SECONDS >= next )); then
            local pct
            # `|| true`: a log with no figure (cargo's) is no failure under pipefail.
            pct=$(grep -o '\[ *[0-9]*%\]' "$logf" 2>/dev/null | tail -n 1 | tr -d '[] ' || true)
            log "$what: $((SECONDS - t0)) s${pct:+, $pct done}"
            next=$((SECONDS + every))
        fi
    done
    if ! wait "$pid"; then
        tail -n 40 "$logf" >&2
        die "command failed: $* (full log: $logf)"
    fi
}

# hash_file FILE: short content hash (keys cache dirs by their requirements).
hash_file() { sha256sum "$1" | cut -c1-12; }

# The venvs of mosaic's Python sides, each from adapters/external/python/requirements-NAME.txt,
# cached under $MOSAIC_CACHE/venvs/NAME-<hash of that file>/.
PY_REQUIREMENTS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../adapters/external/python" && pwd)"

# venv_dir NAME: the venv's directory.
venv_dir() { echo "$MOSAIC_CACHE/venvs/$1-$(hash_file "$PY_REQUIREMENTS/requirements-$1.txt")"; }

# ensure_venv NAME [CHECK]: create venv NAME unless already complete (under its lock), then
# run the Python code CHECK in it, if given, before marking it complete.
ensure_venv() { with_lock "venv-$1" make_venv "$@"; }

make_venv() {
    local name=$1 check=${2:-} dir
    dir=$(venv_dir "$name")
    [[ -f "$dir/.complete" ]] && return 0
    log "creating venv $name in $dir (log: $MOSAIC_CACHE/logs/venv-$name.log)"
    local t0=$SECONDS
    rm -rf "$dir"
    quiet "venv-$name" "$PYTHON" -m venv "$dir"
    quiet "venv-$name" "$dir/bin/python" -m pip install --quiet --no-input \
        -r "$PY_REQUIREMENTS/requirements-$name.txt"
    if [[ -n "$check" ]]; then
        quiet "venv-$name" "$dir/bin/python" -c "$check"
    fi
    touch "$dir/.complete"
    log "venv $name ready in $((SECONDS - t0)) s"
}
