"""A native world, any number of agents, as a PettingZoo `ParallelEnv`."""

from __future__ import annotations

import functools
import json

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ._observe import EpisodeSeeds, Observer, build_world

#: Where the legal-action mask goes (`action_mask`): `infos[agent]["action_mask"]`, or
#: the observation becomes `{"observation": ..., "action_mask": ...}` as in PettingZoo's
#: classic games.
MASK_PLACES = ("info", "observation")


class MosaicParallelEnv(ParallelEnv):
    """A native world (soccer-2v2, coord-world, skirmish, connect-four, ...) for
    multi-agent trainers.

    `MosaicParallelEnv("soccer-2v2", observation="reference")`: the keyword arguments are
    the world's settings, as in an experiment's `env_settings`. `reset(seed=s)` plays the
    episode `mosaic run` plays with episode seed `s`; a later `reset()` plays `s + 1`.

    Every live agent gets an action entry each step. In turn-based worlds (the board
    games) only the agent whose turn it is acts: the others' entries are ignored and
    their masks are all zeros; `infos[agent]["acting"]` says whose turn it is. The mask
    is in `infos[agent]["action_mask"]` and, with `action_mask="observation"` (the default
    of turn-based worlds), also in a `{"observation", "action_mask"}` observation dict.
    """

    metadata = {"render_modes": ["rgb_array"], "name": "mosaic_worlds", "render_fps": 8}

    def __init__(self, world: str, render_mode: str | None = None, obs_type: str = "symbolic",
                 action_mask: str | None = None, **settings):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}"
            )
        self.world = build_world(world, settings)
        self.turn_based = self.world.stepping == "sequential"
        if action_mask is None:
            action_mask = "observation" if self.turn_based else "info"
        if action_mask not in MASK_PLACES:
            raise ValueError(f"action_mask must be one of {MASK_PLACES}, not {action_mask!r}")
        self.mask_in_observation = action_mask == "observation"
        self.render_mode = render_mode
        self.observer = Observer(self.world, settings, obs_type)
        self.possible_agents = list(self.world.agents)
        self.agents = []
        self.index = {agent: i for i, agent in enumerate(self.possible_agents)}
        self.teams = dict(zip(self.possible_agents, self.world.teams))
        self.action_labels = list(self.world.action_labels)
        actions = len(self.action_labels)
        observation = self.observer.space
        if self.mask_in_observation:
            observation = spaces.Dict(
                {"observation": observation, "action_mask": spaces.Box(0, 1, (actions,), np.int8)}
            )
        self._observation_space = observation
        self._action_space = {agent: spaces.Discrete(actions) for agent in self.possible_agents}
        self.seeds = EpisodeSeeds()
        self.rng = np.random.default_rng()
        self.episode_seed = None

    # Every agent observes the same kind of thing: one space object, as PettingZoo asks.
    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return self._action_space[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.episode_seed = self.seeds.take(seed, self.rng)
        self.world.reset(self.episode_seed)
        self.agents = list(self.possible_agents)
        return self._observations(self.agents)

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError(f"{self.world.name}: the episode is over, call reset()")
        joint = [None] * len(self.possible_agents)
        for i in self.world.acting():
            agent = self.possible_agents[i]
            if agent not in actions:
                raise ValueError(f"{self.world.name}: no action for acting agent {agent}")
            joint[i] = int(actions[agent])
        rewards, terminated, truncated, events = self.world.step(joint)
        live = self.agents
        over = not self.world.acting()
        term = {a: bool(terminated[self.index[a]]) for a in live}
        # An episode the world ends without flagging an agent counts as cut off for it.
        trunc = {a: bool(truncated[self.index[a]]) or (over and not term[a]) for a in live}
        obs, infos = self._observations(live)
        events = json.loads(events)
        for agent in live:
            infos[agent]["events"] = events
        if over:
            outcome = self.world.outcome()
            metrics = json.loads(self.world.metrics())
            for agent in live:
                infos[agent]["metrics"] = metrics
                if outcome is not None:
                    infos[agent]["outcome"] = outcome[self.index[agent]]
        rew = {a: float(rewards[self.index[a]]) for a in live}
        self.agents = [a for a in live if not (term[a] or trunc[a])]
        return obs, rew, term, trunc, infos

    def _observations(self, agents):
        acting = set(self.world.acting())
        obs, infos = {}, {}
        for agent in agents:
            i = self.index[agent]
            observation, mask, extra = self.observer.observe(i)
            if i not in acting:
                mask = np.zeros_like(mask)
            info = {"action_mask": mask, "acting": i in acting, "episode_seed": self.episode_seed}
            if extra is not None:
                info["extra"] = extra
            if self.mask_in_observation:
                observation = {"observation": observation, "action_mask": mask}
            obs[agent], infos[agent] = observation, info
        return obs, infos

    def render(self):
        if self.render_mode == "rgb_array":
            return self.observer.frame()
        return None
