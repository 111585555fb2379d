"""The round trip: a policy fitted in Python on the extension's soccer-1v0 (the reference
observation dict), exported to ONNX with the `onnx` package, runs back in mosaic as
`kind = "onnx"`, alone and transferred into a soccer-2v2 team, and takes exactly the
actions Python computed on the same observations, with the same rewards."""

import json
import subprocess
from collections import defaultdict

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mosaic_worlds import MosaicEnv, MosaicParallelEnv

SETTINGS = {"observation": "reference", "max_steps": 64}
SEED = 100
EPISODES = 3


def flat(obs):
    """The reference dict as the model's input row: mosaic's `reference` vector."""
    return np.append(obs["image"].reshape(-1), obs["direction"]).astype(np.float32)


def act(weights, bias, obs, mask):
    """Greedy action of the linear policy over the legal actions, in float32 like mosaic."""
    logits = weights @ flat(obs) + bias
    return int(np.argmax(np.where(mask.astype(bool), logits, -np.inf)))


def episode_return(env, weights, bias, seed):
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(act(weights, bias, obs, info["action_mask"]))
        total += reward
        done = terminated or truncated
    return total


def fit_linear_policy(env, iterations=4, population=12, elite=3, seed=0):
    """A few steps of the cross-entropy method over a linear policy's weights (numpy only):
    the mean of the best candidates by return on training seeds (not the test's)."""
    rng = np.random.default_rng(seed)
    actions, length = env.action_space.n, flat(env.reset(seed=0)[0]).size
    mean, std = np.zeros(actions * (length + 1)), np.full(actions * (length + 1), 0.3)
    for _ in range(iterations):
        candidates = rng.normal(mean, std, size=(population, mean.size)).astype(np.float32)
        scores = []
        for theta in candidates:
            weights, bias = theta[: actions * length].reshape(actions, length), theta[actions * length :]
            scores.append(sum(episode_return(env, weights, bias, s) for s in (1000, 1001)))
        best = candidates[np.argsort(scores)[-elite:]]
        mean, std = best.mean(axis=0), best.std(axis=0) + 0.05
    theta = mean.astype(np.float32)
    return theta[: actions * length].reshape(actions, length), theta[actions * length :]


def export_onnx(weights, bias, labels, directory):
    """CleanRL's actor as PyTorch exports it (one Gemm, transB = 1) and its manifest."""
    actions, length = weights.shape
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["obs", "w", "b"], ["logits"], transB=1)],
        "linear_actor",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", length])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", actions])],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = directory / "solo.onnx"
    onnx.save(model, path)
    manifest = {
        "schema": "mosaic.onnx-policy/1",
        "env": "soccer-1v0",
        "obs_shape": [length],
        "action_labels": labels,
        "observation": {"layout": {"type": "vector"}},
        "output": {"kind": "logits"},
        "source": "cross-entropy method on mosaic_worlds' soccer-1v0 (test)",
    }
    (directory / "solo.json").write_text(json.dumps(manifest))
    return path


def python_steps_solo(weights, bias):
    """(episode, step, agent) -> (action, reward), played by the Gymnasium env."""
    env = MosaicEnv("soccer-1v0", **SETTINGS)
    steps = {}
    for episode in range(EPISODES):
        obs, info = env.reset(seed=SEED if episode == 0 else None)
        done, step = False, 0
        while not done:
            action = act(weights, bias, obs, info["action_mask"])
            obs, reward, terminated, truncated, info = env.step(action)
            steps[(episode, step, "green_0")] = (action, np.float32(reward))
            done, step = terminated or truncated, step + 1
    return steps


def python_steps_team(weights, bias):
    """The same policy for all four players of soccer-2v2, by the PettingZoo env."""
    env = MosaicParallelEnv("soccer-2v2", **SETTINGS)
    steps = {}
    for episode in range(EPISODES):
        obs, infos = env.reset(seed=SEED if episode == 0 else None)
        step = 0
        while env.agents:
            actions = {a: act(weights, bias, obs[a], infos[a]["action_mask"]) for a in env.agents}
            obs, rewards, _, _, infos = env.step(actions)
            for agent, action in actions.items():
                steps[(episode, step, agent)] = (action, np.float32(rewards[agent]))
            step += 1
    return steps


def mosaic_steps(run_dir, operator):
    steps = {}
    with open(run_dir / "steps.jsonl") as f:
        for line in f:
            record = json.loads(line)
            if record["operator_id"] != operator or record["action"] is None:
                continue
            assert record["kind"] == "onnx" and record["decision_source"] == "policy", record
            key = (record["episode_index"], record["step_index"], record["agent_id"])
            steps[key] = (record["action"], np.float32(record["reward"]))
    return steps


EXPERIMENT = """
name = "python-round-trip"
episodes = {episodes}
seeds = {{ plan = "procedural", base = {seed} }}

[[operators]]
id = "solo"
env = "soccer-1v0"
env_settings = {{ observation = "reference", max_steps = 64 }}
[operators.agents]
green_0 = {{ kind = "onnx", model = "{model}", greedy = true }}

[[operators]]
id = "team"
env = "soccer-2v2"
env_settings = {{ observation = "reference", max_steps = 64 }}
[operators.agents]
"*" = {{ kind = "onnx", model = "{model}", greedy = true, transfer = true }}
"""


def test_a_policy_fitted_in_python_plays_the_same_actions_in_mosaic(tmp_path, mosaic_bin):
    env = MosaicEnv("soccer-1v0", **SETTINGS)
    weights, bias = fit_linear_policy(env)
    model = export_onnx(weights, bias, env.action_labels, tmp_path)
    experiment = tmp_path / "round-trip.toml"
    experiment.write_text(EXPERIMENT.format(episodes=EPISODES, seed=SEED, model=model))
    played = subprocess.run(
        [mosaic_bin, "run", str(experiment), "--out", str(tmp_path), "--run-id", "rt"],
        capture_output=True,
        text=True,
    )
    assert played.returncode == 0, played.stderr

    solo = python_steps_solo(weights, bias)
    assert mosaic_steps(tmp_path / "rt", "solo") == solo
    team = python_steps_team(weights, bias)
    assert mosaic_steps(tmp_path / "rt", "team") == team
    # Every episode ran its 64 steps or ended on a win, and the policy did not just stand.
    assert len(solo) >= EPISODES and len({a for a, _ in solo.values()}) > 1
    assert len(team) == 4 * len({k[:2] for k in team})
