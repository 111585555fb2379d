#!/usr/bin/env bash
# Build times of one revision on this machine: a clean build, then two incremental rebuilds
# per given file: after touching it, and after an edit (a private function appended to it,
# which changes the crate and so rebuilds everything that depends on it). The revision is checked out into a temporary worktree with its own
# target directory, so the build of the working copy is not disturbed and every revision
# starts from nothing. Run on a quiet machine; compare revisions from the same run.
#
#   scripts/bench/build-times.sh REVISION "CARGO BUILD ARGUMENTS" FILE...
#   scripts/bench/build-times.sh HEAD "-p mosaic" core/src/lib.rs actors/llm/src/backend.rs
#
# Prints one line per build: what was built, wall seconds, CPU seconds (user + system).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"

if [[ $# -lt 2 ]]; then
    echo "usage: $0 REVISION \"CARGO BUILD ARGUMENTS\" FILE..." >&2
    exit 2
fi
revision="$1"
read -r -a build_args <<<"$2"
shift 2

scratch="$(mktemp -d "${TMPDIR:-/tmp}/mosaic-build-times.XXXXXX")"
cleanup() {
    git -C "$root" worktree remove --force "$scratch/tree" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$scratch/tree" "$revision" >/dev/null
export CARGO_TARGET_DIR="$scratch/target"
cd "$scratch/tree"
# Download outside the measurement: the figures are compile times, not network times.
cargo fetch --locked --quiet

measure() {
    local label="$1"
    /usr/bin/time -f "%e %U %S" -o "$scratch/time" cargo build --locked --quiet "${build_args[@]}"
    read -r wall user system <"$scratch/time"
    printf '%-48s wall %8.1f s   cpu %8.1f s\n' "$label" "$wall" "$(echo "$user + $system" | bc)"
}

echo "revision $(git rev-parse --short HEAD), cargo build ${build_args[*]}, $(nproc) cores"
measure "clean"
for file in "$@"; do
    if [[ ! -f "$file" ]]; then
        echo "no such file at $revision: $file" >&2
        exit 2
    fi
    touch "$file"
    measure "touch $file"
    cp "$file" "$scratch/original"
    printf '\n#[allow(dead_code)]\nfn build_time_probe() {}\n' >>"$file"
    measure "edit $file"
    cp "$scratch/original" "$file"
    measure "undo the edit"
done
