"""A single-agent native world as a Gymnasium `Env`."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
from gymnasium import spaces

from ._observe import EpisodeSeeds, Observer, build_world


class MosaicEnv(gymnasium.Env):
    """A native world with one agent (gridworld, soccer-1v0, soccer-0v1, ...).

    `MosaicEnv("gridworld", layout="doorkey", size=5)`: the keyword arguments are the
    world's settings, as in an experiment's `env_settings` (`mosaic envs` lists them).
    `reset(seed=s)` plays the episode that `mosaic run` plays with episode seed `s`; a
    later `reset()` plays seed `s + 1`, and so on.

    `obs_type="symbolic"` (default) observes the world's symbolic vector (with soccer's
    `observation="reference"`, mosaic-multigrid's observation dict); `obs_type="rgb"`
    the agent's view as a picture. `info["action_mask"]` holds the legal actions (int8).
    `render_mode="rgb_array"` draws the whole world, `"ansi"` its text view.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 8}

    def __init__(self, world: str, render_mode: str | None = None, obs_type: str = "symbolic",
                 **settings):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}"
            )
        self.world = build_world(world, settings)
        if len(self.world.agents) != 1:
            raise ValueError(
                f"{world} has {len(self.world.agents)} agents: a Gymnasium Env drives one "
                "(use mosaic_worlds.MosaicParallelEnv)"
            )
        self.render_mode = render_mode
        self.observer = Observer(self.world, settings, obs_type)
        self.observation_space = self.observer.space
        self.action_space = spaces.Discrete(len(self.world.action_labels))
        self.action_labels = list(self.world.action_labels)
        self.seeds = EpisodeSeeds()
        self.episode_seed = None
        self.running = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode_seed = self.seeds.take(seed, self.np_random)
        self.world.reset(self.episode_seed)
        self.running = True
        obs, mask, extra = self.observer.observe(0)
        return obs, self._info(mask, extra)

    def step(self, action):
        if not self.running:
            raise RuntimeError(f"{self.world.name}: the episode is over, call reset()")
        rewards, terminated, truncated, events = self.world.step([int(action)])
        obs, mask, extra = self.observer.observe(0)
        info = self._info(mask, extra)
        info["events"] = json.loads(events)
        over = terminated[0] or truncated[0] or not self.world.acting()
        if over:
            self.running = False
            info["metrics"] = json.loads(self.world.metrics())
            outcome = self.world.outcome()
            if outcome is not None:
                info["outcome"] = outcome[0]
        # An episode the world ends without flagging it (none does today) counts as cut off.
        cut_off = bool(truncated[0]) or (over and not terminated[0])
        return obs, float(rewards[0]), bool(terminated[0]), cut_off, info

    def _info(self, mask, extra):
        info = {"action_mask": mask, "episode_seed": self.episode_seed}
        if extra is not None:
            info["extra"] = extra
        return info

    def render(self):
        if self.render_mode == "rgb_array":
            return self.observer.frame()
        if self.render_mode == "ansi":
            return self.world.text(0)
        return None
