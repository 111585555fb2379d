"""Shared fixtures: the mosaic binary the round-trip test runs."""

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def mosaic_bin():
    """The `mosaic` program built with feature `onnx` (`MOSAIC_BIN`, else `mosaic` on PATH)."""
    path = os.environ.get("MOSAIC_BIN") or shutil.which("mosaic")
    if not path:
        pytest.fail(
            "set MOSAIC_BIN to a mosaic binary built with feature onnx "
            "(cargo build -p mosaic --features onnx; target/debug/mosaic)"
        )
    return path
