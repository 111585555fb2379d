"""The PettingZoo side: PettingZoo's parallel API test on every native world, soccer's
reference observation dict, turn-based masks, and episodes identical to the native world's."""

import json

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from mosaic_worlds import MosaicParallelEnv, World, parallel_env, world_names


@pytest.mark.parametrize("world", world_names())
def test_pettingzoo_parallel_api_test_passes(world):
    # Short episodes, so that the test sees several end; board games end by themselves.
    settings = {} if world in ("connect-four", "tic-tac-toe") else {"max_steps": 60}
    parallel_api_test(MosaicParallelEnv(world, **settings), num_cycles=200)


@pytest.mark.parametrize("world", ["soccer-1v1", "soccer-3v3"])
def test_parallel_api_test_passes_with_the_reference_dict(world):
    parallel_api_test(MosaicParallelEnv(world, observation="reference"), num_cycles=100)


def test_reference_observation_is_mosaic_multigrids_dict_for_every_team_size():
    spaces = []
    for world in ["soccer-1v0", "soccer-1v1", "soccer-2v2", "soccer-3v3"]:
        env = parallel_env(world, observation="reference", view_size=5)
        obs, infos = env.reset(seed=0)
        assert list(obs) == env.possible_agents
        for agent, o in obs.items():
            assert set(o) == {"image", "direction", "mission"}
            assert o["image"].shape == (5, 5, 3) and o["image"].dtype == np.int64
            assert 0 <= o["direction"] < 4 and o["mission"] == "maximize reward"
            # The agent's own cell, (v/2, v-1) in MultiGrid's order, shows what it carries.
            assert o["image"][2, 4, 0] in (1, 6)
            assert env.observation_space(agent).contains(o)
            assert infos[agent]["action_mask"].tolist() == [1] * 8
        spaces.append(env.observation_space(env.possible_agents[0]))
    # One space for every team size: a policy trained alone plays in a team.
    assert all(space == spaces[0] for space in spaces)


def test_turn_based_worlds_mask_in_the_observation_and_let_one_agent_act():
    env = MosaicParallelEnv("connect-four")
    obs, infos = env.reset(seed=3)
    rng = np.random.default_rng(3)
    moves = 0
    while env.agents:
        acting = [a for a in env.agents if infos[a]["acting"]]
        assert len(acting) == 1
        for agent in env.agents:
            mask = obs[agent]["action_mask"]
            assert np.array_equal(mask, infos[agent]["action_mask"])
            assert mask.any() == (agent in acting)
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) if a in acting else 0
                   for a in env.agents}
        obs, rewards, terminated, truncated, infos = env.step(actions)
        moves += 1
    assert 7 <= moves <= 42
    outcomes = sorted(info["outcome"] for info in infos.values())
    assert outcomes in (["draw", "draw"], ["loss", "win"])


def test_an_illegal_action_or_a_missing_one_is_a_value_error():
    env = MosaicParallelEnv("tic-tac-toe")
    obs, infos = env.reset(seed=0)
    first = next(a for a in env.agents if infos[a]["acting"])
    env.step({first: 4})
    second = next(a for a in env.agents if a != first)
    with pytest.raises(ValueError, match="tic-tac-toe"):
        env.step({second: 4})
    with pytest.raises(ValueError, match=f"no action for acting agent {second}"):
        env.step({})
    with pytest.raises(ValueError, match="action_mask"):
        MosaicParallelEnv("tic-tac-toe", action_mask="both")


def test_episodes_are_the_native_worlds_for_the_same_seed():
    settings = {"observation": "reference", "max_steps": 50}
    env = MosaicParallelEnv("soccer-2v2", **settings)
    world = World("soccer-2v2", json.dumps(settings))
    rng = np.random.default_rng(11)
    obs, _ = env.reset(seed=9)
    world.reset(9)
    while env.agents:
        actions = {agent: int(rng.integers(8)) for agent in env.agents}
        obs, rewards, terminated, truncated, _ = env.step(actions)
        native = world.step([actions[a] for a in env.possible_agents])
        for i, agent in enumerate(env.possible_agents):
            data, _, _ = world.observe(i)
            flat = np.append(obs[agent]["image"].reshape(-1), obs[agent]["direction"])
            assert np.array_equal(flat.astype(np.float32), np.frombuffer(data, dtype="<f4"))
            assert rewards[agent] == np.float32(native[0][i])
            assert (terminated[agent], truncated[agent]) == (native[1][i], native[2][i])
    assert world.steps == 50 or any(terminated.values())
