#!/usr/bin/env bash
# Sharding benchmark: the cost of splitting a run into shards and merging them. Runs one
# native experiment (soccer-2v2, random players, 200-step episodes) twice at equal total
# parallelism: unsharded with 4 lanes, and as 4 shards of 1 lane each, run at once, then
# merged. Each round prints both wall times (the sharded one with the merge), their ratio
# (goal: within 10%), the merge's throughput in step records/s (goal: at least 1M/s) and,
# as the floor no merge can beat, the time to copy the shards' step logs with `cat` and
# sync them. The rounds alternate the two runs; the last lines give the medians.
#
# Usage: scripts/bench/shard-merge.sh [EPISODES] [ROUNDS]
#   EPISODES  default 2000 (about 1.6M step records)
#   ROUNDS    default 5
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
episodes="${1:-2000}"
rounds="${2:-5}"

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
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ratios=()
rates=()
for round in $(seq "$rounds"); do
    rm -rf "$work/whole" "$work/shards" "$work/merged" "$work/copy.jsonl"
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

    start=$(now)
    cat "$work"/shards/bench.shard-*-of-4/steps.jsonl* >"$work/copy.jsonl"
    sync "$work/copy.jsonl"
    copy=$(elapsed "$start" "$(now)")

    ratio=$(awk -v s="$sharded" -v w="$whole" 'BEGIN { printf "%.3f", s / w }')
    rate=$(sed -n 's/.*(\([0-9]*\) step records\/s).*/\1/p' <<<"$merged_line")
    ratios+=("$ratio")
    rates+=("$rate")
    echo "round $round: unsharded ${whole} s; 4 shards ${runs} s, with merge ${sharded} s;" \
        "ratio ${ratio}; merge ${rate} step records/s; copying the logs ${copy} s"
done

records=$(wc -l <"$work/whole/bench/steps.jsonl")
echo "episodes: $episodes, step records: $records, rounds: $rounds"
printf '%s\n' "${ratios[@]}" | median | awk '{ printf "median sharded / unsharded: %.3f (goal <= 1.10)\n", $1 }'
printf '%s\n' "${rates[@]}" | median | awk '{ printf "median merge: %.0f step records/s (goal >= 1000000)\n", $1 }'
