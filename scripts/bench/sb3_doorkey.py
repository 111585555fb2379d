"""Stable-Baselines3 PPO on MiniGrid DoorKey 5x5 with the hyperparameters of
examples/training/doorkey.toml; the reference side of scripts/bench/doorkey-vs-sb3.sh.

Prints one JSON line: the wall-clock seconds and environment steps until the success rate
of the last 100 training episodes first reached the target (null if it did not within the
budget), and the steps per second overall. The clock starts when training starts (after
imports and model construction), which favours this side.

Usage: python sb3_doorkey.py BUDGET_STEPS SEED TARGET
"""

import json
import sys
import time
from collections import deque

import gymnasium
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import torch
from minigrid.wrappers import ImgObsWrapper
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

WINDOW = 100


def doorkey():
    return gymnasium.wrappers.FlattenObservation(
        ImgObsWrapper(gymnasium.make("MiniGrid-DoorKey-5x5-v0"))
    )


class TimeToTarget(BaseCallback):
    """Stops training once the rolling success rate reaches the target."""

    def __init__(self, target):
        super().__init__()
        self.target = target
        self.recent = deque(maxlen=WINDOW)
        self.start = None
        self.reached = None

    def _on_training_start(self):
        self.start = time.perf_counter()

    def _on_step(self):
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is None:
                continue
            self.recent.append(episode["r"] > 0)
            if len(self.recent) == WINDOW and sum(self.recent) / WINDOW >= self.target:
                self.reached = (time.perf_counter() - self.start, self.num_timesteps)
                return False
        return True


def main():
    budget, seed, target = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    torch.set_num_threads(2)  # as the mosaic side's `threads = 2`
    envs = make_vec_env(doorkey, n_envs=16, seed=seed)
    model = PPO(
        "MlpPolicy",
        envs,
        n_steps=128,
        batch_size=16 * 128 // 4,
        n_epochs=4,
        learning_rate=lambda remaining: 2.5e-4 * remaining,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs={"net_arch": [64, 64], "activation_fn": torch.nn.Tanh},
        seed=seed,
        device="cpu",
    )
    callback = TimeToTarget(target)
    model.learn(total_timesteps=budget, callback=callback)
    elapsed = time.perf_counter() - callback.start
    seconds, steps = callback.reached or (None, None)
    print(
        json.dumps(
            {
                "seconds_to_target": seconds,
                "steps_to_target": steps,
                "steps": model.num_timesteps,
                "seconds": elapsed,
                "steps_per_s": model.num_timesteps / elapsed,
            }
        )
    )


if __name__ == "__main__":
    main()
