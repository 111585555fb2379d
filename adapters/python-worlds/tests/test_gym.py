"""The Gymnasium side: Gymnasium's own checker, settings as keyword arguments, errors that
name the input, and episodes identical to the native world's for the same seed."""

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from mosaic_worlds import MosaicEnv, World


@pytest.mark.parametrize(
    "world, kwargs",
    [
        ("gridworld", {}),
        ("gridworld", {"task": "goto", "size": 7}),
        ("gridworld", {"render_mode": "rgb_array", "obs_type": "rgb"}),
        ("gridworld", {"render_mode": "ansi"}),
        ("soccer-1v0", {}),
        ("soccer-1v0", {"observation": "reference", "render_mode": "rgb_array"}),
        ("soccer-0v1", {"observation": "reference", "view_size": 7}),
    ],
)
def test_gymnasium_check_env_passes(world, kwargs):
    env = MosaicEnv(world, **kwargs)
    check_env(env, skip_render_check=env.render_mode is None)


def test_settings_are_keyword_arguments():
    env = MosaicEnv("gridworld", size=8, max_steps=12)
    obs, info = env.reset(seed=3)
    assert obs.shape == env.observation_space.shape
    steps = 0
    truncated = terminated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(6)  # `done`: nothing happens
        steps += 1
    assert (steps, truncated, terminated) == (12, True, False)
    assert info["outcome"] == "loss" and "metrics" in info
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MosaicEnv("gridworld", sise=5), "sise"),
        (lambda: MosaicEnv("gridworld", size=99), "size"),
        (lambda: MosaicEnv("socer-1v0"), "socer-1v0"),
        (lambda: MosaicEnv("soccer-2v2"), "4 agents"),
        (lambda: MosaicEnv("gridworld", obs_type="pixels"), "obs_type"),
        (lambda: MosaicEnv("gridworld", render_mode="human"), "render_mode"),
        (lambda: MosaicEnv("gridworld", size=object()), "plain values"),
    ],
)
def test_bad_input_is_a_value_error_naming_it(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def native_vector(world, agent=0):
    data, legal, _ = world.observe(agent)
    return np.frombuffer(data, dtype="<f4"), legal


def flat_reference(obs):
    """mosaic-multigrid's dict as mosaic's `reference` vector."""
    return np.append(obs["image"].reshape(-1), obs["direction"]).astype(np.float32)


def test_episodes_are_the_native_worlds_for_the_same_seed():
    env = MosaicEnv("soccer-1v0", observation="reference", max_steps=80)
    world = World("soccer-1v0", json.dumps({"observation": "reference", "max_steps": 80}))
    rng = np.random.default_rng(5)
    # reset(seed=41), then reset() twice: episode seeds 41, 42, 43 as `mosaic run` hands them out.
    for episode, seed in enumerate([41, 42, 43]):
        obs, info = env.reset(seed=41 if episode == 0 else None)
        assert info["episode_seed"] == seed
        world.reset(seed)
        vector, _ = native_vector(world)
        assert np.array_equal(flat_reference(obs), vector)
        done = False
        while not done:
            action = int(rng.integers(8))
            obs, reward, terminated, truncated, _ = env.step(action)
            rewards, world_terminated, world_truncated, _ = world.step([action])
            vector, _ = native_vector(world)
            assert np.array_equal(flat_reference(obs), vector)
            assert reward == np.float32(rewards[0])
            assert (terminated, truncated) == (world_terminated[0], world_truncated[0])
            done = terminated or truncated


def test_same_seed_same_episode_other_seed_other_episode():
    env = MosaicEnv("gridworld", size=6)

    def episode(seed):
        first, _ = env.reset(seed=seed)
        seen = [first]
        for action in [0, 2, 2, 1, 2, 3, 2, 2]:
            seen.append(env.step(action)[0])
        return np.stack(seen)

    assert np.array_equal(episode(7), episode(7))
    assert not np.array_equal(episode(7), episode(8))
