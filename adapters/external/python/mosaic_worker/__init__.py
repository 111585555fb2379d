"""Serve Gymnasium and PettingZoo environments and Python policies to mosaic.

Wrapping an environment takes a few lines::

    import gymnasium as gym
    from mosaic_worker import serve_env
    raise SystemExit(serve_env(gym.make("CartPole-v1", render_mode="rgb_array"), "cartpole"))

When mosaic starts the worker (it sets ``MOSAIC_PROTOCOL``), importing this package first
keeps stdout for protocol frames: whatever else prints to stdout goes to the log.
"""

import os as _os

from .env import AecEnv, GymnasiumEnv, ParallelEnv, serve_aec, serve_env, serve_parallel
from .policy import Context, random_decide, serve_policy
from .protocol import PROTOCOL, Channel, WorkerError, encode_frame, guard_stdout, serve

if _os.environ.get("MOSAIC_PROTOCOL") and not _os.environ.get("MOSAIC_WORKER_LISTEN"):
    guard_stdout()

__all__ = [
    "AecEnv",
    "Channel",
    "Context",
    "GymnasiumEnv",
    "PROTOCOL",
    "ParallelEnv",
    "WorkerError",
    "encode_frame",
    "guard_stdout",
    "random_decide",
    "serve",
    "serve_aec",
    "serve_env",
    "serve_parallel",
    "serve_policy",
]
