#!/usr/bin/env bash
# Sharding benchmark: the cost of splitting a run into shards and merging them. Runs one
# native experiment (soccer-2v2, random players, 200-step episodes) twice at equal total
# parallelism: unsharded with 4 lanes, and as 4 shards of 1 lane each, run at once, then
# merged. Prints both wall times (the sharded one with the merge), their ratio (goal:
# within 10%), and the merge's throughput in step records/s (goal: at least 1M/s), all
# measured in this run.
#
# Usage: scripts/bench/shard-merge.sh [EPISODES]
#   EPISODES  default 2000 (about 1.6M step records)
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
episodes="${1:-2000}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/bench.toml" <<TOML
name = "shard-bench"
episodes = $episodes
max_steps = 200
seeds = { plan = "procedural", base = 3 }

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = { "*" = { kind = "random" } }
TOML

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

start=$(now)
"$bin" run "$work/bench.toml" --out "$work/whole" --run-id bench --parallelism 4 >/dev/null
whole=$(elapsed "$start" "$(now)")

start=$(now)
pids=()
for k in 0 1 2 3; do
    "$bin" run "$work/bench.toml" --out "$work/shards" --run-id bench --shard "$k/4" \
        --parallelism 1 >/dev/null &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
runs=$(elapsed "$start" "$(now)")
merged_line=$("$bin" merge "$work"/shards/bench.shard-*-of-4 --out "$work/merged")
sharded=$(elapsed "$start" "$(now)")

records=$(wc -l <"$work/whole/bench/steps.jsonl")
echo "episodes: $episodes, step records: $records"
echo "unsharded, 4 lanes:            ${whole} s"
echo "4 shards x 1 lane, run:         ${runs} s"
echo "4 shards x 1 lane, with merge:  ${sharded} s"
awk -v s="$sharded" -v w="$whole" 'BEGIN { printf "sharded / unsharded:           %.3f (goal <= 1.10)\n", s / w }'
echo "merge: $merged_line"
