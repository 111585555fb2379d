#!/usr/bin/env bash
# Side by side: Stable-Baselines3 PPO (PyTorch on the CPU, from PyPI) on MiniGrid's
# DoorKey-5x5 against `mosaic train` on the native gridworld's DoorKey 5x5, with the same
# hyperparameters (examples/training/doorkey.toml: 16 environments, 128-step rollouts, 4
# epochs of 4 minibatches, learning rate 2.5e-4 annealed over the budget, entropy 0.01, a
# 64-64 tanh MLP, 2 threads each). For each side: the wall-clock seconds and environment
# steps until the success rate of the last 100 training episodes first reaches 0.9; then
# their ratio (goal: mosaic at least 10x faster). Both run one after the other in this run.
#
# Usage: scripts/bench/doorkey-vs-sb3.sh [SEED]
# Needs: the venv of adapters/external/python/requirements-sb3.txt (PyTorch with its CUDA
# libraries as PyPI ships them, several GB), made and cached on first use.
# The binary is $MOSAIC_BIN, else target/release/mosaic (built if missing).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$root/scripts/setup/common.sh"
seed="${1:-1}"
target=0.9
training="$root/examples/training/doorkey.toml"
budget=$(sed -n 's/^total_steps = \([0-9]*\)$/\1/p' "$training")

ensure_venv sb3
python="$(venv_dir sb3)/bin/python"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s/^seed = .*/seed = $seed/" "$training" >"$work/doorkey.toml"

log "mosaic train: DoorKey 5x5, $budget steps"
start_ms=$(date +%s%3N)
"$bin" train "$work/doorkey.toml" --out "$work" --run-id doorkey --progress false >/dev/null
end_ms=$(date +%s%3N)

log "Stable-Baselines3 PPO: MiniGrid-DoorKey-5x5-v0, at most $budget steps"
sb3=$("$python" "$root/scripts/bench/sb3_doorkey.py" "$budget" "$seed" "$target" | tail -n 1)

"$python" - "$work/doorkey/episodes.jsonl" "$start_ms" "$end_ms" "$budget" "$target" "$sb3" <<'PY'
import json, sys
from collections import deque

episodes_path, start_ms, end_ms, budget, target = sys.argv[1:6]
start_ms, end_ms, budget, target = int(start_ms), int(end_ms), int(budget), float(target)
sb3 = json.loads(sys.argv[6])

# mosaic: the first training episode at which the last 100 reach the target.
recent, steps, ours = deque(maxlen=100), 0, None
with open(episodes_path) as lines:
    for line in lines:
        episode = json.loads(line)
        steps += episode["steps"]
        recent.append(bool(episode["metrics"].get("success")))
        if len(recent) == 100 and sum(recent) / 100 >= target:
            ours = ((episode["timestamp"] - start_ms) / 1000, steps)
            break
total_s = (end_ms - start_ms) / 1000

def side(name, reached, seconds, steps_per_s):
    if reached:
        return f"{name:<18} {reached[0]:8.1f} s, {reached[1]:>7} steps to {target} success ({steps_per_s:,.0f} steps/s)"
    return f"{name:<18} not reached within {budget} steps ({seconds:.1f} s, {steps_per_s:,.0f} steps/s)"

print(side("mosaic train", ours, total_s, budget / total_s))
theirs = sb3["seconds_to_target"] and (sb3["seconds_to_target"], sb3["steps_to_target"])
print(side("Stable-Baselines3", theirs, sb3["seconds"], sb3["steps_per_s"]))
if ours and theirs:
    print(f"wall-clock to {target} success: mosaic {theirs[0] / ours[0]:.1f}x faster (goal >= 10x)")
elif ours:
    print(f"wall-clock to {target} success: mosaic more than {sb3['seconds'] / ours[0]:.1f}x faster "
          f"(Stable-Baselines3 did not reach it within the budget; goal >= 10x)")
else:
    print(f"mosaic did not reach {target} success within {budget} steps")
PY
