#!/usr/bin/env bash
# End-to-end speed of a recorded native run: examples/experiments/a7-scripted-vs-random.toml
# (soccer 2v2, scripted against random, 200-step limit, 2 episodes at a time) scaled to
# EPISODES episodes, run with `mosaic run` (release binary) into a fresh directory. Prints
# one line per configuration: the run's time as `mosaic run` reports it (the episodes,
# recorded and durable, without the closing summary table) and the whole command's; the
# environment steps per second recorded over the run's time (goal: ≥ 300,000) and over the
# whole command's; step records per second; and the bytes per step record of the step log.
#
# Usage: scripts/bench/recorded-throughput.sh [EPISODES] [REPEATS]
#   EPISODES  default 2000
#   REPEATS   default 3 (each configuration is run this many times, interleaved; the
#             best and the median are printed)
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing). With
# $MOSAIC_BIN_BASE set, that binary (another build, e.g. an older commit) runs too, in the
# same rounds, for a same-run comparison.
# Configurations: durability sync (the default), flush, and sync with --compress (the
# last only where the binary knows the flag).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
episodes="${1:-2000}"
repeats="${2:-3}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s/^episodes = .*/episodes = $episodes/" \
    "$root/examples/experiments/a7-scripted-vs-random.toml" >"$work/a7.toml"

# Configurations: "label|binary|arguments".
configs=()
add() {
    local label="$1" binary="$2"
    shift 2
    configs+=("$label|$binary|$*")
}
for name in bin base; do
    if [[ "$name" == base ]]; then
        [[ -n "${MOSAIC_BIN_BASE:-}" ]] || continue
        binary="$MOSAIC_BIN_BASE"
    else
        binary="$bin"
    fi
    add "$name sync" "$binary"
    if "$binary" run --help | grep -q -- '--durability'; then
        add "$name flush" "$binary" --durability flush
    fi
    if "$binary" run --help | grep -q -- '--compress'; then
        add "$name sync+zstd" "$binary" --compress
    fi
done

declare -A results
round=0
for ((r = 0; r < repeats; r++)); do
    for config in "${configs[@]}"; do
        IFS='|' read -r label binary args <<<"$config"
        round=$((round + 1))
        out="$work/runs-$round"
        # shellcheck disable=SC2086
        start=$(date +%s.%N)
        "$binary" run "$work/a7.toml" --out "$out" --run-id bench $args >"$work/out" 2>"$work/err"
        end=$(date +%s.%N)
        run="$out/bench"
        # "run bench (2000 episodes, 67918 steps in 0.74 s) in ..."
        read -r steps run_s < <(sed -n 's/.* episodes, \([0-9]*\) steps in \([0-9.]*\) s).*/\1 \2/p' "$work/out")
        log="$run/steps.jsonl"
        [[ -f "$run/steps.jsonl.zst" ]] && log="$run/steps.jsonl.zst"
        bytes=$(stat -c %s "$log")
        # Step records: one per agent alive at a step's start (4 in soccer).
        records=$((steps * 4))
        line=$(awk -v s="$start" -v e="$end" -v r="$run_s" -v steps="$steps" -v rec="$records" \
            -v b="$bytes" 'BEGIN { t = e - s; printf "%.3f %.3f %.0f %.0f %.0f %.1f", r, t,
                steps / r, steps / t, rec / r, b / rec }')
        results["$label"]+="$line;"
        rm -rf "$out"
    done
done

printf '%s episodes of a7-scripted-vs-random (%s steps), %s rounds; best run of each\n' \
    "$episodes" "$steps" "$repeats"
printf '%-16s %7s %8s %9s %10s %12s %13s %13s\n' config run_s median command_s \
    steps/s steps/s_cmd records/s bytes/record
for config in "${configs[@]}"; do
    IFS='|' read -r label _ _ <<<"$config"
    IFS=';' read -r -a runs <<<"${results[$label]}"
    sorted=$(printf '%s\n' "${runs[@]}" | sort -n)
    best=$(head -n 1 <<<"$sorted")
    median=$(sed -n "$(((${#runs[@]} + 1) / 2))p" <<<"$sorted")
    read -r r t sps sps_cmd rps bpr <<<"$best"
    printf '%-16s %7.3f %8.3f %9.3f %10s %12s %13s %13s\n' "$label" "$r" "${median%% *}" "$t" \
        "$sps" "$sps_cmd" "$rps" "$bpr"
done
echo "goal: >= 300000 environment steps/s recorded (steps/s: over the run's time)"
