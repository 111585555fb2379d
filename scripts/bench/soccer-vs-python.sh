#!/usr/bin/env bash
# Raw random-play speed of soccer-2v2: the native Rust environment against the Python
# reference (MosaicMultiGrid-S-2v2-IndAgObs-v1 from mosaic-multigrid 7.0.0), one thread
# each, 4 agents acting uniformly at random, no frames. Prints both JSON lines and a
# summary line with the ratio (goal: at least 100x).
#
# Usage: scripts/bench/soccer-vs-python.sh [RUST_STEPS] [PYTHON_STEPS]
#
# The Python interpreter is $MOSAIC_PY_MULTIGRID, else the MOSAIC_PY_MULTIGRID=<python>
# line printed by scripts/setup/python-envs.sh. The Python side runs
# scripts/bench/multigrid_soccer.py (or $MOSAIC_PY_SOCCER_BENCH) with PYTHON_STEPS as its
# argument; like the Rust example it must print a JSON line with "steps_per_s".
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rust_steps="${1:-2000000}"
py_steps="${2:-20000}"

python="${MOSAIC_PY_MULTIGRID:-}"
if [[ -z "$python" ]]; then
    setup="$root/scripts/setup/python-envs.sh"
    if [[ ! -x "$setup" ]]; then
        echo "soccer-vs-python: set MOSAIC_PY_MULTIGRID or provide $setup" >&2
        exit 1
    fi
    python="$("$setup" | sed -n 's/^MOSAIC_PY_MULTIGRID=//p' | tail -n 1)"
    if [[ -z "$python" ]]; then
        echo "soccer-vs-python: $setup printed no MOSAIC_PY_MULTIGRID=<python> line" >&2
        exit 1
    fi
fi
py_bench="${MOSAIC_PY_SOCCER_BENCH:-$root/scripts/bench/multigrid_soccer.py}"
if [[ ! -f "$py_bench" ]]; then
    echo "soccer-vs-python: missing $py_bench" >&2
    exit 1
fi

rust_line="$(cd "$root" && cargo run --quiet --release -p mosaic-soccer \
    --example soccer_speed -- "$rust_steps" | grep steps_per_s | tail -n 1)"
py_line="$("$python" "$py_bench" "$py_steps" | grep steps_per_s | tail -n 1)"
echo "rust:   $rust_line"
echo "python: $py_line"

"$python" - "$rust_line" "$py_line" <<'PY'
import json
import sys

rust, python = (json.loads(line) for line in sys.argv[1:3])
ratio = rust["steps_per_s"] / python["steps_per_s"]
print(json.dumps({
    "env": "soccer-2v2",
    "rust_steps_per_s": round(rust["steps_per_s"]),
    "python_steps_per_s": round(python["steps_per_s"]),
    "ratio": round(ratio, 1),
    "goal_ratio": 100,
    "met": ratio >= 100,
}))
PY
