#!/usr/bin/env bash
# Soak benchmark: does a long run stay in bounded memory? Runs a recorded experiment of
# many short episodes (tic-tac-toe, random against random, 2 lanes) with the release
# binary and samples the process's resident memory (VmRSS) as episodes complete. Prints
# one line per sample — episodes done, RSS in MB — and a closing line with the growth per
# 100k episodes between the first quarter and the end (goal: about 0, i.e. bounded).
#
# Usage: scripts/bench/soak.sh [EPISODES] [SAMPLE_SECONDS]
#   EPISODES        default 400000
#   SAMPLE_SECONDS  default 2
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
episodes="${1:-400000}"
every="${2:-2}"

work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/soak.toml" <<EOF
name = "soak"
episodes = $episodes
parallelism = 2
seeds = { plan = "procedural", base = 1 }

[[operators]]
id = "ttt"
env = "tic-tac-toe"

[operators.agents]
"*" = { kind = "random" }
EOF

"$bin" run "$work/soak.toml" --out "$work/runs" --run-id soak >"$work/out.txt" 2>"$work/err.txt" &
pid=$!
episodes_file="$work/runs/soak/episodes.jsonl"
samples=()
printf '%12s %10s\n' episodes rss_mb
while kill -0 "$pid" 2>/dev/null; do
    sleep "$every"
    rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n "$rss_kb" ]] || break
    done_count=$(wc -l <"$episodes_file" 2>/dev/null || echo 0)
    printf '%12d %10.1f\n' "$done_count" "$(awk -v kb="$rss_kb" 'BEGIN {print kb / 1024}')"
    samples+=("$done_count:$rss_kb")
done
wait "$pid" || { cat "$work/err.txt" >&2; exit 1; }

# Growth per 100k episodes while episodes run: from the first sample past a quarter of the
# run to the first sample with all episodes done. The peak includes the closing summary.
first="" last="" peak=0
for s in "${samples[@]}"; do
    n=${s%%:*} r=${s##*:}
    (( r > peak )) && peak=$r
    if [[ -z "$first" && $n -ge $((episodes / 4)) ]]; then first=$s; fi
    if [[ -n "$first" && ( -z "$last" || ${last%%:*} -lt $episodes ) ]]; then last=$s; fi
done
if [[ -n "$first" && "$first" != "$last" ]]; then
    awk -v n0="${first%%:*}" -v r0="${first##*:}" -v n1="${last%%:*}" -v r1="${last##*:}" -v total="$episodes" 'BEGIN {
        printf "soak: %d episodes; RSS %.1f MB at %d episodes, %.1f MB at %d; growth %.2f MB per 100k episodes\n",
            total, r0 / 1024, n0, r1 / 1024, n1, (r1 - r0) / 1024 / ((n1 - n0) / 100000)
    }'
    awk -v peak="$peak" 'BEGIN { printf "soak: peak RSS %.1f MB (the closing summary included)\n", peak / 1024 }'
else
    echo "soak: too few samples to measure growth (run more episodes or sample more often)"
fi
tail -n 3 "$work/out.txt"
