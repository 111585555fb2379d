"""Builds ONNX policies from known weights, as PyTorch exports them, with their mosaic
manifest, and computes reference outputs in numpy.

    python policies.py OUT_DIR --model gemm --env gridworld --obs-shape 148 \
        --actions left,right,forward,pickup,drop,toggle,done [--name NAME] [--seed 0] \
        [--hidden 32] [--observations OBS.json]

writes OUT_DIR/NAME.onnx and OUT_DIR/NAME.json (the manifest `kind = "onnx"` reads). With
`--observations` (a JSON object `{"obs": [[...], ...], "legal": [[true, ...], ...]}`, the
observations in the environment's layout, flattened row-major) it also writes
OUT_DIR/NAME.reference.json: for each observation the logits, the model's own action and
the greedy action under the legality mask, all computed in numpy from the same weights.

Models (`--model`), the weights drawn from numpy's generator seeded with `--seed`:

- `gemm`: CleanRL's actor, `Linear -> ReLU -> Linear` exported as Gemm (transB = 1),
  output `logits` (`--hidden 64,64`: two hidden layers of 64);
- `matmul`: `Linear -> Tanh -> Linear` exported as MatMul + Add, with a value head first and
  the action probabilities (Softmax) second, read by name; the manifest normalises the
  observation (scale, offset, mean, std, clip) as a saved VecNormalize would;
- `argmax`: Stable-Baselines3's deterministic export, the `gemm` network followed by ArgMax,
  output `actions` (int64);
- `cnn`: `Conv2d(3x3, padding 1) -> ReLU -> Flatten -> Linear` over an image observation,
  NCHW in the model, HWC in the environment (`--obs-shape H,W,C`).
"""

import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 32
CONV_CHANNELS = 4
OPSET = 17


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def draw(rng, *shape):
    return rng.normal(0.0, 0.5, size=shape).astype(np.float32)


def save(graph, path):
    model = helper.make_model(
        graph,
        producer_name="mosaic-test-fixtures",
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def obs_input(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *dims])


def build_gemm(rng, length, actions, hidden=(HIDDEN,)):
    sizes = [length, *hidden, actions]
    weights = [(draw(rng, out, inp), draw(rng, out)) for inp, out in zip(sizes, sizes[1:])]
    nodes, initializers, current = [], [], "obs"
    for k, (w, b) in enumerate(weights):
        last = k == len(weights) - 1
        out = "logits" if last else f"h{k}"
        nodes.append(helper.make_node("Gemm", [current, f"w{k}", f"b{k}"], [out], transB=1))
        initializers += [tensor(f"w{k}", w), tensor(f"b{k}", b)]
        if not last:
            nodes.append(helper.make_node("Relu", [out], [f"a{k}"]))
            current = f"a{k}"
    graph = helper.make_graph(
        nodes,
        "cleanrl_actor",
        [obs_input("obs", [length])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", actions])],
        initializers,
    )

    def forward(x):
        for k, (w, b) in enumerate(weights):
            x = x @ w.T + b
            if k < len(weights) - 1:
                x = np.maximum(x, 0.0)
        return x

    return graph, forward


def build_matmul(rng, length, actions):
    # PyTorch stores Linear weights [out, in]; its MatMul export carries them transposed.
    w1, b1 = draw(rng, length, HIDDEN), draw(rng, HIDDEN)
    w2, b2 = draw(rng, HIDDEN, actions), draw(rng, actions)
    wv, bv = draw(rng, HIDDEN, 1), draw(rng, 1)
    nodes = [
        helper.make_node("MatMul", ["obs", "w1"], ["m1"]),
        helper.make_node("Add", ["m1", "b1"], ["h1"]),
        helper.make_node("Tanh", ["h1"], ["a1"]),
        helper.make_node("MatMul", ["a1", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["a1", "wv"], ["mv"]),
        helper.make_node("Add", ["mv", "bv"], ["value"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sb3_mlp_policy",
        [obs_input("obs", [length])],
        [
            helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", actions]),
        ],
        [
            tensor("w1", w1),
            tensor("b1", b1),
            tensor("w2", w2),
            tensor("b2", b2),
            tensor("wv", wv),
            tensor("bv", bv),
        ],
    )

    def forward(x):
        logits = np.tanh(x @ w1 + b1) @ w2 + b2
        # The manifest reads probabilities: mosaic acts on their logarithm.
        shifted = logits - logits.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    return graph, forward


def build_argmax(rng, length, actions):
    graph, forward = build_gemm(rng, length, actions)
    graph.node.append(helper.make_node("ArgMax", ["logits"], ["actions"], axis=1, keepdims=0))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("actions", TensorProto.INT64, ["batch"]))
    graph.name = "sb3_deterministic"
    return graph, forward


def build_cnn(rng, shape, actions):
    height, width, channels = shape
    kernel, kernel_bias = draw(rng, CONV_CHANNELS, channels, 3, 3), draw(rng, CONV_CHANNELS)
    flat = CONV_CHANNELS * height * width
    w, b = draw(rng, actions, flat) * 0.2, draw(rng, actions)
    nodes = [
        helper.make_node(
            "Conv", ["obs", "k", "kb"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w", "b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn_actor",
        [obs_input("obs", [channels, height, width])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", actions])],
        [tensor("k", kernel), tensor("kb", kernel_bias), tensor("w", w), tensor("b", b)],
    )

    def forward(x):
        # x: [batch, channels, height, width]; cross-correlation with zero padding, as Conv.
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((x.shape[0], CONV_CHANNELS, height, width), dtype=np.float64)
        for dy in range(3):
            for dx in range(3):
                patch = padded[:, :, dy : dy + height, dx : dx + width]
                out += np.einsum("nchw,oc->nohw", patch, kernel[:, :, dy, dx])
        out = np.maximum(out + kernel_bias[None, :, None, None], 0.0)
        return out.reshape(x.shape[0], -1) @ w.T + b

    return graph, forward


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--model", choices=["gemm", "matmul", "argmax", "cnn"], required=True)
    parser.add_argument("--env", required=True)
    parser.add_argument("--obs-shape", required=True, help="comma-separated, e.g. 148 or 6,7,2")
    parser.add_argument("--actions", required=True, help="the action labels, comma-separated")
    parser.add_argument("--name")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--observations")
    parser.add_argument("--hidden", default=str(HIDDEN), help="gemm: hidden layer sizes")
    args = parser.parse_args()

    shape = [int(d) for d in args.obs_shape.split(",")]
    labels = args.actions.split(",")
    length = int(np.prod(shape))
    name = args.name or args.model
    rng = np.random.default_rng(args.seed)
    observation = {"layout": {"type": "vector"}}
    output = {"kind": "logits"}
    if args.model == "gemm":
        hidden = [int(h) for h in args.hidden.split(",")]
        graph, forward = build_gemm(rng, length, len(labels), hidden)
    elif args.model == "argmax":
        graph, forward = build_argmax(rng, length, len(labels))
        output = {"kind": "action", "name": "actions"}
    elif args.model == "matmul":
        graph, forward = build_matmul(rng, length, len(labels))
        output = {"kind": "probabilities", "name": "probs"}
        observation.update(
            scale=0.5,
            offset=-0.25,
            mean=[round(float(v), 3) for v in rng.normal(0.0, 0.3, size=length)],
            std=[round(float(v), 3) for v in rng.uniform(0.5, 2.0, size=length)],
            clip=1.5,
        )
    else:
        if len(shape) != 3:
            parser.error("--model cnn needs --obs-shape H,W,C")
        graph, forward = build_cnn(rng, shape, len(labels))
        observation = {"layout": {"type": "image", "env": "hwc", "model": "chw"}, "scale": 0.5}

    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, name)
    save(graph, stem + ".onnx")
    manifest = {
        "schema": "mosaic.onnx-policy/1",
        "env": args.env,
        "obs_shape": shape,
        "action_labels": labels,
        "observation": observation,
        "output": output,
        "source": f"mosaic test fixture `{args.model}`, numpy seed {args.seed}",
    }
    with open(stem + ".json", "w") as f:
        json.dump(manifest, f, indent=2)

    if args.observations:
        with open(args.observations) as f:
            given = json.load(f)
        obs = np.asarray(given["obs"], dtype=np.float64).reshape(-1, length)
        legal = np.asarray(given["legal"], dtype=bool)
        x = obs * observation.get("scale", 1.0) + observation.get("offset", 0.0)
        if "mean" in observation:
            x = (x - np.asarray(observation["mean"])) / np.asarray(observation["std"])
            x = np.clip(x, -observation["clip"], observation["clip"])
        if args.model == "cnn":
            x = x.reshape(-1, *shape).transpose(0, 3, 1, 2)
        logits = forward(x)
        own = logits.argmax(axis=1)
        masked = np.where(legal, logits, -np.inf).argmax(axis=1)
        if output["kind"] == "action":
            # Masks cannot steer a model that answers actions: an illegal one is replaced
            # by the first legal action.
            masked = np.where(legal[np.arange(len(own)), own], own, legal.argmax(axis=1))
        reference = {
            "logits": logits.tolist(),
            "model_action": own.tolist(),
            "greedy_action": masked.tolist(),
        }
        with open(stem + ".reference.json", "w") as f:
            json.dump(reference, f)


if __name__ == "__main__":
    main()
