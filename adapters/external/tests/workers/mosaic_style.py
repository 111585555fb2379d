"""A stand-in for MOSAIC's operator workers, speaking MOSAIC's wire format as its source
defines it (unprompted `init`, `cmd` commands, `ready` / `step` / `episode_end` or
`episode_done` / `agent_initialized` / `action_selected` / `stopped` replies, nested-list
render payloads). MOSAIC's workers are not published on PyPI, so the compatibility tests
drive this instead. Its env-owning `step` behaves like MOSAIC's random worker in
autonomous mode (3rd_party/mosaic/random_worker/random_worker/runtime.py of the MOSAIC
repository at commit 6106c0d1c011d00102684b09131cb809441d51ff): it ignores any action in
the command and takes one of its own, drawn from a generator seeded by the reset seed.

usage: mosaic_style.py
"""

import json
import random
import sys

EPISODE_STEPS = 5


def emit(obj):
    print(json.dumps(obj), flush=True)


def render(step):
    shade = (step * 40) % 256
    return {"mode": "rgb", "rgb": [[[shade, 0, 255 - shade]] * 4 for _ in range(3)], "width": 4, "height": 3}


emit({"type": "init", "run_id": "op_random_1", "worker": "random_worker", "version": "1.0"})
rng = random.Random(0)
step = 0
seed = 0
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        cmd = json.loads(line)
    except json.JSONDecodeError as exc:
        emit({"type": "error", "message": f"Invalid JSON: {exc}"})
        continue
    name = cmd.get("cmd", "")
    if name == "reset":
        seed = int(cmd.get("seed", 0))
        rng = random.Random(seed)
        step = 0
        emit({"type": "ready", "run_id": "op_random_1", "seed": cmd.get("seed"), "observation_shape": [7, 7, 3], "render_payload": render(0)})
    elif name == "step":
        action = rng.randrange(3)
        step += 1
        done = step >= EPISODE_STEPS
        emit({"type": "step", "step_index": step, "action": action, "reward": 1.0 if done else 0.0, "terminated": done, "truncated": False, "render_payload": render(step)})
        if done:
            emit({"type": "episode_end" if seed % 2 == 0 else "episode_done", "total_reward": 1.0, "episode_length": step})
    elif name == "init_agent":
        emit({"type": "agent_initialized", "game_name": cmd.get("game_name"), "player_id": cmd.get("player_id")})
    elif name == "select_action":
        mask = cmd.get("action_mask") or [True]
        legal = [i for i, ok in enumerate(mask) if ok]
        emit({"type": "action_selected", "player_id": cmd.get("player_id"), "action": rng.choice(legal), "action_str": "x"})
    elif name == "ping":
        emit({"type": "pong"})
    elif name == "stop":
        emit({"type": "stopped"})
        break
    else:
        emit({"type": "error", "message": f"Unknown command: {name}"})
