"""Writes the MiniGrid reference fixtures used by the gridworld tests.

Run with a Python that has `minigrid` (tested with 3.2.0) installed:

    python make_minigrid_fixtures.py

- minigrid_views.json: random layouts (DoorKey 8x8 and 11x11, GoToObject 8x8 with four
  objects), doors open, closed or locked, with and without a carried key, and random agent
  poses; each case holds the full grid encoding and the agent's `image` observation.
- minigrid_trajectories.json: DoorKey and GoToObject episodes under biased random actions;
  each case holds the start state and, per step, the action, the agent's position,
  direction, carried object, reward and termination flags, with some views.
"""

import json
import random

from minigrid.core.world_object import Door, Key
from minigrid.envs import DoorKeyEnv, GoToObjectEnv


def grid_rows(env):
    """The full grid encoding, row-major: [y][x][channel]."""
    return env.grid.encode().transpose(1, 0, 2).reshape(-1).tolist()


def views():
    rng = random.Random(7)
    cases = []
    layouts = [
        (DoorKeyEnv, dict(size=8)),
        (GoToObjectEnv, dict(size=8, numObjs=4)),
        (DoorKeyEnv, dict(size=11)),
    ]
    for env_cls, kwargs in layouts:
        env = env_cls(**kwargs)
        for seed in range(6):
            env.reset(seed=seed)
            for x in range(env.width):
                for y in range(env.height):
                    cell = env.grid.get(x, y)
                    if isinstance(cell, Door) and seed % 3 == 1:
                        cell.is_locked, cell.is_open = False, True
                    if isinstance(cell, Door) and seed % 3 == 2:
                        cell.is_locked, cell.is_open = False, False
            if seed % 2 == 1:
                env.carrying = Key("yellow")
            free = [
                (x, y)
                for x in range(env.width)
                for y in range(env.height)
                if env.grid.get(x, y) is None or env.grid.get(x, y).can_overlap()
            ]
            for _ in range(3):
                env.agent_pos = rng.choice(free)
                env.agent_dir = rng.randrange(4)
                cases.append(
                    {
                        "size": env.width,
                        "see_through_walls": env.see_through_walls,
                        "grid": grid_rows(env),
                        "agent": [int(env.agent_pos[0]), int(env.agent_pos[1])],
                        "dir": int(env.agent_dir),
                        "carrying": list(env.carrying.encode()) if env.carrying else None,
                        "image": env.gen_obs()["image"].reshape(-1).tolist(),
                    }
                )
    return cases


def trajectories():
    rng = random.Random(11)
    cases = []
    setups = [
        (DoorKeyEnv, dict(size=5), 8),
        (DoorKeyEnv, dict(size=8, max_steps=120), 8),
        (GoToObjectEnv, dict(size=6), 16),
        (GoToObjectEnv, dict(size=8, numObjs=5), 16),
    ]
    for env_cls, kwargs, seeds in setups:
        env = env_cls(**kwargs)
        doorkey = env_cls is DoorKeyEnv
        # Biased towards actions that change the world; few episode-ending goto actions.
        weights = [2, 2, 5, 2, 1, 2, 1] if doorkey else [2, 2, 5, 2, 1, 0.1, 0.3]
        for seed in range(seeds):
            env.reset(seed=seed)
            case = {
                "task": "doorkey" if doorkey else "goto",
                "size": env.width,
                "max_steps": env.max_steps,
                "grid": grid_rows(env),
                "agent": [int(env.agent_pos[0]), int(env.agent_pos[1])],
                "dir": int(env.agent_dir),
                "mission": env.mission,
                "target": None if doorkey else [int(v) for v in env.target_pos],
                # [action, x, y, dir, carried object index or 0, reward, terminated, truncated]
                "steps": [],
                # [step index, image]
                "images": [],
            }
            for t in range(env.max_steps):
                action = rng.choices(range(7), weights)[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                carried = env.carrying.encode()[0] if env.carrying else 0
                case["steps"].append(
                    [
                        action,
                        int(env.agent_pos[0]),
                        int(env.agent_pos[1]),
                        int(env.agent_dir),
                        int(carried),
                        round(float(reward), 6),
                        int(terminated),
                        int(truncated),
                    ]
                )
                if t % 40 == 0 or terminated or truncated:
                    case["images"].append([t, obs["image"].reshape(-1).tolist()])
                if terminated or truncated:
                    break
            case["final_grid"] = grid_rows(env)
            cases.append(case)
    return cases


if __name__ == "__main__":
    for name, cases in [("minigrid_views.json", views()), ("minigrid_trajectories.json", trajectories())]:
        with open(name, "w") as out:
            json.dump(cases, out, separators=(",", ":"))
