"""Writes reference_views.json: agent views computed by the reference implementation.

Run with the PyPI package installed (pip install mosaic-multigrid==7.0.0):
    python reference_views.py > reference_views.json
Each scenario places the four players and the ball by hand, then records the `image`
observation of every agent for view sizes 3 and 7.
"""
import json

import gymnasium as gym
import mosaic_multigrid.envs  # noqa: F401  (registers the environments)
from mosaic_multigrid.core.constants import Color
from mosaic_multigrid.core.world_object import Ball

SCENARIOS = [
    {  # ball carried; players side by side near the green goal
        "players": [[2, 5, 2], [3, 5, 0], [2, 4, 3], [13, 2, 1]],
        "ball": {"carried_by": 2},
    },
    {  # corner; two players sharing a cell; loose ball
        "players": [[1, 1, 3], [5, 3, 2], [4, 3, 0], [5, 3, 1]],
        "ball": {"at": [3, 3]},
    },
    {  # on the blue goal facing the wall; views reaching past the pitch
        "players": [[14, 5, 0], [12, 2, 3], [8, 8, 1], [13, 5, 0]],
        "ball": {"at": [10, 9]},
    },
    {  # along the bottom wall
        "players": [[7, 9, 0], [7, 8, 1], [9, 9, 2], [3, 2, 3]],
        "ball": {"carried_by": 1},
    },
]


def views(view_size, scenario):
    env = gym.make("MosaicMultiGrid-S-2v2-IndAgObs-v1", view_size=view_size).unwrapped
    env.reset(seed=0)
    grid = env.grid
    for x in range(env.width):
        for y in range(env.height):
            obj = grid.get(x, y)
            if obj is not None and obj.type.value == "ball":
                grid.set(x, y, None)
    for agent, (x, y, d) in zip(env.agents, scenario["players"]):
        agent.state.pos = (x, y)
        agent.state.dir = d
        agent.state.carrying = None
    ball = Ball(color=Color.from_index(0), index=0)
    if "carried_by" in scenario["ball"]:
        env.agents[scenario["ball"]["carried_by"]].state.carrying = ball
    else:
        x, y = scenario["ball"]["at"]
        grid.set(x, y, ball)
    obs = env.gen_obs()
    return [obs[i]["image"].tolist() for i in range(len(env.agents))]


out = []
for scenario in SCENARIOS:
    entry = dict(scenario)
    entry["views"] = {str(v): views(v, scenario) for v in (3, 7)}
    out.append(entry)
print(json.dumps({"reference": "mosaic-multigrid 7.0.0", "scenarios": out}))
