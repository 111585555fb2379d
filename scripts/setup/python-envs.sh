#!/usr/bin/env bash
# Creates the Python venvs used by mosaic's Python adapters, cached under
# $MOSAIC_CACHE/venvs/<name>-<hash of adapters/external/python/requirements-<name>.txt>/.
# Prints (for eval):  MOSAIC_PY_ENVS=<python>  MOSAIC_PY_MULTIGRID=<python>
#                     MOSAIC_PY_ANALYSIS=<python>  MOSAIC_PY_K8S=<python>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

CHECK_ENVS='
import gymnasium, minigrid, pettingzoo, chess, mpe2, pytest, numpy, onnx, maturin
from pettingzoo.classic import chess_v6
from mpe2 import simple_spread_v3
gymnasium.make("MiniGrid-DoorKey-5x5-v0").reset(seed=0)
chess_v6.env().reset(seed=0)
simple_spread_v3.parallel_env().reset(seed=0)'
# Importing mosaic_multigrid registers its gymnasium ids; the first reset also
# JIT-compiles (and caches) the numba observation code.
CHECK_MULTIGRID='
import gymnasium, mosaic_multigrid
env = gymnasium.make("MosaicMultiGrid-S-2v2-IndAgObs-v1")
obs, _ = env.reset(seed=0)
env.step({i: 0 for i in obs})'
# rliable (the reference for the aggregates), pyarrow and polars (reading Parquet exports).
CHECK_ANALYSIS='
import numpy, pyarrow.parquet, polars
from rliable import library, metrics
metrics.aggregate_iqm(numpy.ones((3, 2)))'

# kubernetes-validate, for the manifests of `mosaic cluster k8s`.
CHECK_K8S='
import kubernetes_validate'

ensure_venv envs "$CHECK_ENVS"
ensure_venv multigrid "$CHECK_MULTIGRID"
ensure_venv analysis "$CHECK_ANALYSIS"
ensure_venv k8s "$CHECK_K8S"
log "ok: python venvs envs + multigrid + analysis + k8s ready in $MOSAIC_CACHE/venvs"
echo "MOSAIC_PY_ENVS=$(venv_dir envs)/bin/python"
echo "MOSAIC_PY_MULTIGRID=$(venv_dir multigrid)/bin/python"
echo "MOSAIC_PY_ANALYSIS=$(venv_dir analysis)/bin/python"
echo "MOSAIC_PY_K8S=$(venv_dir k8s)/bin/python"
