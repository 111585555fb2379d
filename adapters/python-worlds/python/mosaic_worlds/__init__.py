"""mosaic's native worlds as Gymnasium and PettingZoo environments.

    import mosaic_worlds
    env = mosaic_worlds.MosaicEnv("gridworld")                      # Gymnasium, one agent
    par = mosaic_worlds.MosaicParallelEnv("soccer-2v2", observation="reference")

Keyword arguments are the world's settings (those of an experiment's `env_settings`);
`reset(seed=s)` plays the episode `mosaic run` plays with episode seed `s`.
"""

from ._native import World, world_names
from .gym_env import MosaicEnv
from .parallel_env import MosaicParallelEnv

__all__ = ["MosaicEnv", "MosaicParallelEnv", "World", "world_names", "parallel_env"]


def parallel_env(world: str, **kwargs) -> MosaicParallelEnv:
    """PettingZoo's constructor name: `MosaicParallelEnv(world, **kwargs)`."""
    return MosaicParallelEnv(world, **kwargs)
