#!/usr/bin/env bash
# The skirmish world against JaxMARL's SMAX, in one run:
#   fidelity: over EPISODES seeded episodes each, the heuristic team against a uniformly
#     random team, in SMAX's `smacv2_5_units` scenario and the same settings here (unit
#     types drawn uniformly from SMAX's six and mirrored, surrounded-or-reflected starts,
#     edges kill, 100 steps); prints both outcome counts and a bootstrap interval of the
#     difference in the heuristic's win rate (the goal: 0 inside it);
#   speed: one environment stepped on one thread, symbolic observations and random legal
#     actions here, a jitted step per call and a compiled scan in SMAX (the goal: at least
#     100x the faster of the two by the wall clock; also given per CPU-second).
#
# Usage: scripts/bench/skirmish-vs-smax.sh [EPISODES] [SPEED_SECONDS]
# Needs: a Python venv with jaxmarl (adapters/external/python/requirements-smax.txt),
# created and cached under $MOSAIC_CACHE/venvs like the test venvs (about 1 GB).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
episodes="${1:-500}"
seconds="${2:-5}"
source "$root/scripts/setup/common.sh"

ensure_venv smax
venv="$(venv_dir smax)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/fidelity.toml" <<TOML
name = "skirmish-smax-fidelity"
episodes = $episodes
parallelism = 2
seeds = { plan = "procedural", base = 0 }

[[operators]]
id = "random_vs_heuristic"
env = "skirmish"
env_settings = { unit_types = ["marine", "marauder", "stalker", "zealot", "zergling", "hydralisk"], blue_units = 5, red_units = 5, start_positions = "surrounded_and_reflect", walls_kill = true, max_steps = 100 }

[operators.agents]
"*" = { kind = "random" }
red_0 = { kind = "scripted" }
red_1 = { kind = "scripted" }
red_2 = { kind = "scripted" }
red_3 = { kind = "scripted" }
red_4 = { kind = "scripted" }
TOML

log "mosaic: $episodes episodes"
(cd "$root" && cargo run --quiet -p mosaic -- run "$work/fidelity.toml" --out "$work/runs" \
    --run-id fidelity >"$work/run.log" 2>&1) || { cat "$work/run.log" >&2; exit 1; }
log "mosaic: speed"
rust_speed="$(cd "$root" && cargo run --quiet --release -p mosaic-skirmish --example skirmish_speed -- \
    "$seconds" '{"unit_types": ["marine", "marauder", "stalker", "zealot", "zergling", "hydralisk"], "start_positions": "surrounded_and_reflect", "walls_kill": true, "max_steps": 100}')"
log "SMAX: $episodes episodes and speed (compiles first; minutes)"
smax="$("$venv/bin/python" "$root/scripts/bench/smax_reference.py" "$episodes" "$seconds" 2>/dev/null | tail -n 1)"

"$venv/bin/python" - "$work/runs/fidelity/episodes.jsonl" "$rust_speed" "$smax" <<'PY'
import json
import random
import sys

episodes_path, rust_speed, smax = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ours = []
for line in open(episodes_path):
    record = json.loads(line)
    metrics = record.get("metrics", {})
    red, blue = metrics.get("won_red", 0.0), metrics.get("won_blue", 0.0)
    ours.append(1 if red >= 1 else (-1 if blue >= 1 else 0))
theirs = [1] * smax["heuristic_wins"] + [-1] * smax["random_wins"] + [0] * smax["timeouts"]


def win_rate(xs):
    return sum(1 for x in xs if x == 1) / len(xs)


rng = random.Random(0)
diffs = sorted(
    win_rate(rng.choices(ours, k=len(ours))) - win_rate(rng.choices(theirs, k=len(theirs)))
    for _ in range(10_000)
)
low, high = diffs[249], diffs[9_749]
smax_best = max(smax["steps_per_s_jit"], smax["steps_per_s_scan"])
ours_speed = rust_speed["steps_per_s"]
print(json.dumps({
    "fidelity": {
        "episodes": len(ours),
        "mosaic": {"heuristic_wins": ours.count(1), "random_wins": ours.count(-1), "timeouts": ours.count(0)},
        "smax": {k: smax[k] for k in ("heuristic_wins", "random_wins", "timeouts")},
        "win_rate_difference": round(win_rate(ours) - win_rate(theirs), 4),
        "bootstrap_95": [round(low, 4), round(high, 4)],
        "agree": low <= 0.0 <= high,
    },
    "speed": {
        "mosaic_steps_per_s": round(ours_speed),
        "mosaic_cpu_steps_per_s": round(rust_speed["cpu_steps_per_s"] or 0),
        "smax_steps_per_s_jit": round(smax["steps_per_s_jit"]),
        "smax_steps_per_cpu_s_jit": round(smax["steps_per_cpu_s_jit"]),
        "smax_steps_per_s_scan": round(smax["steps_per_s_scan"]),
        "ratio": round(ours_speed / smax_best, 1),
        # Per CPU-second on both sides: on a shared machine the wall clock also counts
        # time spent waiting for a core.
        "ratio_cpu": round((rust_speed["cpu_steps_per_s"] or 0) / smax["steps_per_cpu_s_jit"], 1),
        "goal_ratio": 100,
        "met": ours_speed / smax_best >= 100,
    },
}, indent=2))
PY
