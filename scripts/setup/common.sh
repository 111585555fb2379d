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

# hash_file FILE: short content hash (keys cache dirs by their requirements).
hash_file() { sha256sum "$1" | cut -c1-12; }
