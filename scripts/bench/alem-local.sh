#!/usr/bin/env bash
# ALEM's example experiments with the bundled local model: one episode of every operator of
# every examples/experiments/alem-*.toml, recorded with the model, then replayed from the
# run's response cache with no model configured at all; the replay must hold the same
# trajectories as the recording (`mosaic compare`: every step and episode record equal but
# for wall times, latencies and timestamps). Prints, per file, the decisions, how many the model's
# answers parsed into legal actions, timeouts, prompt tokens per decision, the wall times of
# recording and replay, and whether the replay held the same trajectories; exits 1 if any
# file failed.
#
# The files are run as written (prompts, history, ablation settings) except for
# `episodes = 1`, a shorter episode (`max_steps`, default 3 steps) and a shorter answer
# budget (`max_tokens`, default 256 instead of ALEM's 8,192, which the small model fills
# with rambling): on two cores the 135M model takes seconds per decision, and ALEM's
# episodes run to 10,000 steps. ALEM's prompt is longer than the model's default 2,048
# tokens per slot, so the server runs a slot per agent (each agent's next prompt extends
# its last, which the slot keeps) with a stretched context (YaRN). The model is far too
# small to play well: this checks that every setting runs end to end and replays exactly,
# not how well the model plays.
#
# Usage: scripts/bench/alem-local.sh [MAX_STEPS] [MAX_TOKENS] [NAME...]
#   MAX_STEPS   steps per episode (default 3)
#   MAX_TOKENS  answer budget of every agent (default 256)
#   NAME        only these examples, e.g. alem-homogeneous (default: every alem-*.toml)
# Server shape: MOSAIC_LLAMA_SLOTS (default 3), MOSAIC_LLAMA_CONTEXT (default 16384),
# MOSAIC_LLAMA_ARGS (default: YaRN from the model's 8,192 tokens).
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
max_steps="${1:-3}"
max_tokens="${2:-256}"
shift $(($# < 2 ? $# : 2))
if (($#)); then
    examples=()
    for name in "$@"; do
        examples+=("$root/examples/experiments/$name.toml")
    done
else
    examples=("$root"/examples/experiments/alem-*.toml)
fi

set -a
eval "$("$root/scripts/setup/llm-server.sh")"
set +a
export MOSAIC_LLAMA_SLOTS="${MOSAIC_LLAMA_SLOTS:-3}"
export MOSAIC_LLAMA_CONTEXT="${MOSAIC_LLAMA_CONTEXT:-16384}"
export MOSAIC_LLAMA_ARGS="${MOSAIC_LLAMA_ARGS:---rope-scaling yarn --rope-scale 2 --yarn-orig-ctx 8192}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# The LLM figures of a run, summed over its operators and agents, from `mosaic report`.
llm_figures() {
    "$bin" report "$1" --format json | python3 -c '
import json, sys
report = json.load(sys.stdin)
rows = [g["llm"] for op in report["operators"] for g in op["groups"] if g.get("llm")]
total = lambda key: sum(r.get(key, 0) for r in rows)
decisions, parsed, timeouts = total("decisions"), total("parse_ok"), total("timeouts")
mean_prompt = total("prompt_tokens") / max(decisions, 1)
print(f"{decisions} decisions, {parsed} parsed, {timeouts} timeouts, "
      f"{mean_prompt:.0f} prompt tokens per decision")'
}

# timed NAME WHAT CMD...: runs CMD with its output in a log and prints its wall seconds; on
# failure names it and shows the log's tail.
timed() {
    local name=$1 what=$2 start log="$work/$1.$2.log"
    shift 2
    start="$(now)"
    if ! "$@" >"$log" 2>&1; then
        echo "$name: the ${what}ing failed:" >&2
        tail -n 20 "$log" >&2
        return 1
    fi
    elapsed "$start" "$(now)"
}

printf 'server: %s slot(s) x %s tokens, args: %s\n' \
    "$MOSAIC_LLAMA_SLOTS" "$MOSAIC_LLAMA_CONTEXT" "$MOSAIC_LLAMA_ARGS"
failed=0
for example in "${examples[@]}"; do
    name="$(basename "$example" .toml)"
    if [[ ! -f "$example" ]]; then
        echo "$name: no such example ($example)" >&2
        failed=1
        continue
    fi
    file="$work/$name.toml"
    sed -e 's/^episodes = .*/episodes = 1/' -e "s/^max_steps = .*/max_steps = $max_steps/" \
        -e "s/max_tokens = [0-9]*/max_tokens = $max_tokens/g" "$example" >"$file"
    if ! grep -q '^episodes = 1$' "$file" || ! grep -q "^max_steps = $max_steps\$" "$file"; then
        echo "$name: no top-level 'episodes' or 'max_steps' line to shorten" >&2
        failed=1
        continue
    fi
    if ! recorded="$(timed "$name" record "$bin" run "$file" --out "$work/recorded" \
        --run-id "$name")"; then
        failed=1
        continue
    fi
    # No model configured at all: any request would fail.
    if ! replayed="$(timed "$name" replay env -u MOSAIC_LLAMA_SERVER -u MOSAIC_LLM_MODEL \
        "$bin" run "$file" --out "$work/replayed" --run-id "$name" \
        --llm-cache replay --llm-cache-from "$work/recorded/$name")"; then
        failed=1
        continue
    fi
    # `mosaic compare` of two runs exits 0 when they hold the same trajectories: every
    # record equal but for the volatile fields (wall times, latencies, timestamps).
    equal=yes
    if ! "$bin" compare "$work/recorded/$name" "$work/replayed/$name" \
        >"$work/$name.compare.log" 2>&1; then
        equal=no
        failed=1
        tail -n 20 "$work/$name.compare.log" >&2
    fi
    printf '%s: %s; recorded in %s s, replayed in %s s without the model, same trajectories: %s\n' \
        "$name" "$(llm_figures "$work/recorded/$name")" "$recorded" "$replayed" "$equal"
done
exit "$failed"
