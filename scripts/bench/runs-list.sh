#!/usr/bin/env bash
# Listing many runs: `mosaic runs DIR` over RUNS finished runs (tic-tac-toe, random against
# random, 2 episodes each, recorded with the release binary), timed from their
# `progress.json` files and again with those files removed (as runs recorded before them:
# every run's store is opened). Prints both times and their ratio (goal: ≤ 1 s for 1,000
# runs).
#
# Usage: scripts/bench/runs-list.sh [RUNS] [REPEATS]
#   RUNS     default 1000
#   REPEATS  default 3 (the best time of each way is printed)
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs="${1:-1000}"
repeats="${2:-3}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/small.toml" <<EOF
name = "small"
episodes = 2
seeds = { plan = "procedural", base = 1 }

[[operators]]
id = "ttt"
env = "tic-tac-toe"

[operators.agents]
"*" = { kind = "random" }
EOF

# One run recorded, copied: recording a thousand runs would take minutes.
"$bin" run "$work/small.toml" --out "$work/seed" --run-id seed --durability flush >/dev/null
mkdir -p "$work/runs"
for ((i = 0; i < runs; i++)); do
    # With its times: a progress file is trusted only while episodes.jsonl is untouched.
    cp -a "$work/seed/seed" "$work/runs/run-$i"
done

time_list() {
    local best=""
    for ((r = 0; r < repeats; r++)); do
        local start end took
        start=$(date +%s.%N)
        "$bin" runs "$work/runs" >"$work/listed"
        end=$(date +%s.%N)
        took=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')
        if [[ -z "$best" ]] || awk -v a="$took" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best="$took"
        fi
    done
    echo "$best"
}

listed=$(($(wc -l <"$work/seed/seed/episodes.jsonl")))
quick=$(time_list)
cp "$work/listed" "$work/listed-quick"
find "$work/runs" -name progress.json -delete
slow=$(time_list)
if ! cmp -s "$work/listed-quick" "$work/listed"; then
    echo "runs-list: the two listings differ" >&2
    diff "$work/listed-quick" "$work/listed" | head >&2
    exit 1
fi
printf '%s runs (%s episodes each): from progress.json %s s | opening every store %s s | ratio %s\n' \
    "$runs" "$listed" "$quick" "$slow" "$(awk -v a="$slow" -v b="$quick" 'BEGIN { printf "%.1fx", a / b }')"
echo "goal: <= 1 s for 1000 runs"
