"""One non-default Python x TensorFlow pair, installed in its own venv and run on the smoke profile.

The oldest TensorFlow offered on a Python other than the default, so a pair that no longer
installs is caught here and not only by the weekly matrix (.github/workflows/pairs.yml). The venv
lives under build/pairs/ and is kept, so a second local run only reinstalls the project; with
EXTRA_PAIR_REQUIRED=1 (.ci/run) a missing interpreter fails instead of skipping.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import TEMPLATE, Baked

pytestmark = [pytest.mark.slow, pytest.mark.pair]

PYTHON, TENSORFLOW = "3.12", "2.18"
ANSWERS = {
    "project_name": "TF GPU Pair",
    "python_version": PYTHON,
    "tensorflow_version": TENSORFLOW,
}
VENV = TEMPLATE / "build" / "pairs" / f"py{PYTHON}-tf{TENSORFLOW}" / ".venv"


def interpreter(version: str) -> str | None:
    """A Python `version` that runs: $EXTRA_PAIR_PYTHON, pythonX.Y on PATH, or pyenv's."""
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [os.environ.get("EXTRA_PAIR_PYTHON"), shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def test_oldest_tensorflow_on_another_python_installs_and_runs(
    bake: Callable[[dict], Baked],
) -> None:
    python = interpreter(PYTHON)
    if python is None:
        message = (
            f"No working python{PYTHON} here (PATH, pyenv or EXTRA_PAIR_PYTHON): the pair "
            f"Python {PYTHON} x TensorFlow {TENSORFLOW} cannot be installed."
        )
        if os.environ.get("EXTRA_PAIR_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    baked = bake(ANSWERS)
    run_dir = baked.root / "artifacts" / "pair-smoke"
    command = [
        "make", "-C", str(baked.root), "run", f"VENV={VENV}", f"BASE_PYTHON={python}",
        "EXTRAS=onnx", "PIP_FLAGS=--no-compile", "PROFILE=smoke", f"ARGS=--run-dir {run_dir}",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"

    environment = json.loads((run_dir / "metrics" / "environment.json").read_text())
    assert environment["python_version"].startswith(f"{PYTHON}."), environment["python_version"]
    assert environment["tensorflow_version"].startswith(f"{TENSORFLOW}."), environment
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "ok", run
    notebooks = sorted(path.name for path in (baked.root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    executed = sorted(path.name for path in (run_dir / "notebooks").glob("*.ipynb"))
    assert executed == notebooks
    optimize = json.loads((run_dir / "metrics" / "optimize.json").read_text())
    onnx = [line for line in optimize["backends"] if line["name"] == "onnx"]
    assert onnx and all(line["status"] == "ran" for line in onnx), onnx
