"""Plays a seeded episode of a mosaic-multigrid 7.0.0 soccer environment and prints, for
every step, the state and each agent's observation dict (image and direction), as JSON.

    python reference_episode.py ENV_ID VIEW_SIZE SEED STEPS

The actions are drawn from random.Random(SEED), eight per agent and step, so the same
arguments always give the same episode. The test `reference_observations.rs` rebuilds
each printed state in the native soccer and compares its `reference` observations.

The observations printed are `env.gen_obs()` of the state printed beside them. They are
what `step()` returns except on a step that scores: the package computes `step()`'s
observations before its walk-in scoring, so those still show the scorer carrying the
ball and no respawned ball. `stale` marks these steps.
"""
import json
import random
import sys

import gymnasium as gym
import mosaic_multigrid.envs  # noqa: F401  (registers the environments)


def state(env):
    """Everything the observations depend on, in plain JSON."""
    loose = env._find_loose_ball_pos()
    carrier = [i for i, a in enumerate(env.agents) if a.state.carrying is not None]
    return {
        "players": [
            {
                "x": int(a.state.pos[0]),
                "y": int(a.state.pos[1]),
                "dir": int(a.state.dir),
                "cooldown": int(getattr(a, "action_cooldown", 0)),
            }
            for a in env.agents
        ],
        "ball": {"loose": list(loose)} if loose is not None else {"carried": carrier[0]},
        "goals": [env.team_scores.get(1, 0), env.team_scores.get(2, 0)],
        "steps": env.step_count,
        "terminated": bool(all(a.state.terminated for a in env.agents)),
    }


def observations(obs):
    return [
        {"image": obs[i]["image"].tolist(), "direction": int(obs[i]["direction"])}
        for i in sorted(obs)
    ]


def main():
    env_id, view_size, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    env = gym.make(env_id, view_size=view_size).unwrapped
    obs, _ = env.reset(seed=seed)
    actions = random.Random(seed)
    records = [{"state": state(env), "obs": observations(obs)}]
    for _ in range(steps):
        joint = {i: actions.randrange(8) for i in range(len(env.agents))}
        returned, _, terms, truncs, _ = env.step(joint)
        current = observations(env.gen_obs())
        records.append({
            "actions": joint,
            "state": state(env),
            "obs": current,
            "stale": current != observations(returned),
        })
        if all(terms.values()) or all(truncs.values()):
            break
    print(json.dumps({"env": env_id, "view_size": view_size, "seed": seed, "records": records}))


main()
