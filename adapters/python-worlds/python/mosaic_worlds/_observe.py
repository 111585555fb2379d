"""What the Gymnasium and PettingZoo wrappers share: building a world from keyword
settings, its spaces, its observations as numpy arrays, and the episode seeds."""

from __future__ import annotations

import json
import string

import numpy as np
from gymnasium import spaces

from . import _native

#: Observation types (`obs_type`): the world's symbolic vector (soccer's `observation =
#: "reference"` setting turns it into mosaic-multigrid's observation dict), or the agent's
#: own view as an RGB picture.
OBS_TYPES = ("symbolic", "rgb")

#: The constant mission of mosaic-multigrid's soccer observation dict.
SOCCER_MISSION = "maximize reward"


def build_world(name: str, settings: dict) -> _native.World:
    """The world `name` with `settings` (an experiment's `env_settings`); a bad name or
    setting is a ValueError naming it."""
    try:
        text = json.dumps(settings)
    except TypeError as err:
        raise ValueError(f"settings of `{name}` must be plain values: {err}") from None
    return _native.World(name, text)


class Observer:
    """Turns one world's observations into what its observation space holds."""

    def __init__(self, world: _native.World, settings: dict, obs_type: str):
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {OBS_TYPES}, not {obs_type!r}")
        self.world = world
        self.obs_type = obs_type
        self.reference_view = None
        if obs_type == "rgb":
            self.space = self._picture_space()
        elif world.name.startswith("soccer-") and settings.get("observation") == "reference":
            view = int(settings.get("view_size", 3))
            self.reference_view = view
            self.space = spaces.Dict(
                {
                    "image": spaces.Box(0, 255, (view, view, 3), np.int64),
                    "direction": spaces.Discrete(4),
                    "mission": spaces.Text(
                        max_length=64, charset=string.ascii_letters + " "
                    ),
                }
            )
        elif world.symbolic_shape:
            self.space = spaces.Box(-np.inf, np.inf, tuple(world.symbolic_shape), np.float32)
        else:
            raise ValueError(f"{world.name} has no symbolic observation: use obs_type='rgb'")

    def _picture_space(self) -> spaces.Box:
        # The size of an agent's view is fixed by the settings; a throwaway episode shows it.
        self.world.reset(0)
        view = self.world.view(0)
        if view is None:
            raise ValueError(f"{self.world.name} draws no view for its agents")
        height, width, _ = view
        return spaces.Box(0, 255, (height, width, 3), np.uint8)

    def observe(self, agent: int):
        """`agent`'s observation, its legal-action mask (int8) and its extra information."""
        data, legal, info = self.world.observe(agent)
        mask = np.asarray(legal, dtype=np.int8)
        extra = json.loads(info) if info else None
        if self.obs_type == "rgb":
            height, width, rgb = self.world.view(agent)
            obs = np.frombuffer(rgb, dtype=np.uint8).reshape(height, width, 3).copy()
        else:
            vector = np.frombuffer(data, dtype="<f4")
            if self.reference_view is None:
                obs = vector.reshape(self.space.shape).copy()
            else:
                view = self.reference_view
                obs = {
                    "image": vector[:-1].astype(np.int64).reshape(view, view, 3),
                    "direction": np.int64(vector[-1]),
                    "mission": SOCCER_MISSION,
                }
        return obs, mask, extra

    def frame(self):
        """The whole world as an RGB array, or None when the world draws none."""
        picture = self.world.render()
        if picture is None:
            return None
        height, width, rgb = picture
        return np.frombuffer(rgb, dtype=np.uint8).reshape(height, width, 3).copy()


class EpisodeSeeds:
    """Episode seeds as `mosaic run` hands them out: `reset(seed=s)` plays episode seed
    `s`, each later `reset()` the next one (`s + 1`, `s + 2`, ..., the procedural seed
    plan). Never seeded, the first seed is drawn from `rng`."""

    def __init__(self):
        self.next = None

    def take(self, seed: int | None, rng: np.random.Generator) -> int:
        if seed is not None:
            if seed < 0:
                raise ValueError(f"seed must be non-negative, not {seed}")
            self.next = int(seed)
        elif self.next is None:
            self.next = int(rng.integers(0, 2**63))
        seed, self.next = self.next, (self.next + 1) % 2**64
        return seed
