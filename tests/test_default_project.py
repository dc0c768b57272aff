"""The default bake, installed into this environment, passes its own tests and runs its notebooks.

This is what a user does right after baking, so it is tested end to end: the project is installed
into the same virtual environment (no second TensorFlow install), then its own `make test` and
`make run PROFILE=smoke` run exactly as the baked README tells the user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from conftest import Baked

VENV = Path(sys.prefix)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(bake: Callable[[dict], Baked]) -> Path:
    """The default bake, installed (editable, with its dev extra) into this environment."""
    # The default answers, spelled out so this bake is not the one the file-set tests inspect.
    path = bake({"project_name": "TF GPU Project"}).root
    make(path, "setup")
    return path


@pytest.fixture(scope="module")
def smoke_run(project: Path) -> Path:
    """`make run PROFILE=smoke` once, as the README says; the project's own smoke tests read this
    run (SHARED_SMOKE_RUN) instead of running the chain again, which saves one run of the chain."""
    run_dir = project / "artifacts" / "template-test"
    done = make(project, "run", "PROFILE=smoke", f"ARGS=--run-dir {run_dir}", check=False)
    log = {"args": done.args, "returncode": done.returncode}
    log |= {"stdout": done.stdout, "stderr": done.stderr}
    Path(f"{run_dir}.runner.json").write_text(json.dumps(log), encoding="utf-8")
    if done.returncode != 0:
        pytest.fail(f"make run failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}")
    return run_dir


def make(
    project: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the baked project's Makefile against this environment, as a user's shell would (no
    PYTEST_CURRENT_TEST: with it, ipykernel stops copying C++ stderr into notebooks)."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    result = subprocess.run(
        ["make", "-C", str(project), *args, f"VENV={VENV}"],
        capture_output=True,
        text=True,
        env={**environ, **(env or {})},
    )
    if check and result.returncode != 0:
        output = f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
        pytest.fail(f"make {' '.join(args)} failed:\n{output}")
    return result


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The baked project's console script, as the user types it."""
    return subprocess.run(
        [str(VENV / "bin" / "tf_gpu_project"), *args],
        cwd=project,
        capture_output=True,
        text=True,
    )


def test_installs_into_this_environment_without_a_second_tensorflow(project: Path) -> None:
    """The baked package imports from this environment, beside the one TensorFlow it has."""
    result = subprocess.run(
        [sys.executable, "-c", "import tf_gpu_project, tensorflow; print(tensorflow.__file__)"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(VENV)), result.stdout


def test_own_test_suite_passes(project: Path, smoke_run: Path) -> None:
    """`make test MARKERS="not slow" NBVAL=` in the baked project (its unit tests) passes. Its
    slow tests (test_own_slow_tests_pass) and its notebooks under nbval, which train and time the
    same digits model as the smoke run again, with the notebooks' longer defaults
    (test_own_notebooks_pass_under_nbval), run in make test-full, so that `make test` here stays
    under 15 minutes on two cores."""
    result = make(
        project, "test", "MARKERS=not slow", "NBVAL=", env={"SHARED_SMOKE_RUN": str(smoke_run)}
    )
    assert " passed" in result.stdout, result.stdout[-3000:]
    assert " failed" not in result.stdout, result.stdout[-3000:]
    assert " deselected" in result.stdout, "the slow tests were not left to make test-full"
    assert "--nbval" not in result.stdout, "NBVAL= did not leave the notebooks out"


def test_make_test_runs_the_notebooks_under_nbval_unless_told_not_to(project: Path) -> None:
    """A user's `make test` ends with nbval on notebooks/ (the command that
    test_own_notebooks_pass_under_nbval runs), and NBVAL= leaves it out."""
    lines = make(project, "-n", "test").stdout.splitlines()  # a sub-make adds "Entering directory"
    planned = [line for line in lines if " -m pytest" in line]
    assert planned[-1].endswith(" -m pytest --nbval-lax --nbval-current-env notebooks"), planned
    assert "--nbval" not in make(project, "-n", "test", "NBVAL=").stdout


@pytest.mark.full
def test_own_notebooks_pass_under_nbval(project: Path) -> None:
    """The last command of the baked project's `make test`: every notebook, executed under nbval
    with its defaults, as JupyterLab runs it, passes."""
    result = subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "pytest", "--nbval-lax", "--nbval-current-env",
         "notebooks"],
        cwd=project,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and " failed" not in result.stdout, result.stdout[-3000:]


@pytest.mark.full
def test_own_slow_tests_pass(project: Path, smoke_run: Path) -> None:
    """`make test-slow` in the baked project passes: whole-chain reruns, kill -9 and SIGTERM,
    multi-worker training, the real SLURM; its smoke-run tests read the run `make run` made."""
    result = make(project, "test-slow", env={"SHARED_SMOKE_RUN": str(smoke_run)})
    assert " passed" in result.stdout, result.stdout[-3000:]
    assert " failed" not in result.stdout, result.stdout[-3000:]


def test_smoke_run_executes_the_notebook_chain(project: Path, smoke_run: Path) -> None:
    """`make run PROFILE=smoke` executes every notebook into the run folder and writes metrics."""
    run_dir = smoke_run
    executed = sorted((run_dir / "notebooks").glob("*.ipynb"))
    assert [path.name for path in executed] == [
        path.name for path in sorted((project / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    ]
    for path in executed:
        notebook = nbformat.read(path, as_version=4)
        assert any(cell.get("outputs") for cell in notebook.cells), f"{path.name} has no outputs"
    environment = json.loads((run_dir / "metrics" / "environment.json").read_text())
    assert environment["gpu_available"] is False
    assert environment["device_used"] == "CPU"
    train = json.loads((run_dir / "metrics" / "train.json").read_text())
    assert "tuned" in train["parameter_sources"].values(), "03 did not train on 02's values"
    # The smoke profile asks for both finders: they ran, and training took what they chose.
    assert train["parameter_sources"]["batch_size"] == "batch-size finder"
    assert train["parameter_sources"]["learning_rate"] == "range test"
    finder = json.loads((run_dir / "metrics" / "batch_finder.json").read_text())
    assert finder["batch"] == train["global_batch_size"]
    export = json.loads((run_dir / "metrics" / "export.json").read_text())
    assert export["top1_agreement"] == 1.0
    optimize = json.loads((run_dir / "metrics" / "optimize.json").read_text())
    status = {(line["name"], line["precision"]): line for line in optimize["backends"]}
    assert set(status) == {(b, p) for b in ("onnx", "tensorrt", "tf_trt") for p in ("fp32", "int8")}
    fp32 = status["onnx", "fp32"]
    assert fp32["status"] == "ran" and fp32["parity_ok"] is True, fp32["reason"]
    # int8 is calibrated, measured and judged by the stated rule on any CPU; whether it keeps
    # the answers of this run's model is a result the report states, not a condition of success.
    int8 = status["onnx", "int8"]
    assert int8["status"] in {"ran", "failed"} and int8["int8_format"]["reason"], int8
    assert int8["top1_agreement"] is not None and int8["accuracy_drop"] is not None, int8
    assert (int8["status"] == "ran") is int8["parity_ok"], int8
    for precision in ("fp32", "int8"):  # the smoke profile's precisions
        for skipped in ("tensorrt", "tf_trt"):  # no GPU, no TensorRT build here: said, not faked
            line = status[skipped, precision]
            assert line["status"] == "skipped" and line["reason"], line
    assert optimize["best_backend"] in {"onnx (fp32)", "onnx (int8)"}  # measured, not asserted


def test_doctor_prints_a_verdict_without_a_gpu(project: Path) -> None:
    """`<package> doctor` says plainly that there is no GPU and exits 0."""
    result = cli(project, "doctor", "--matmul-size", "64")
    assert result.returncode == 0, result.stderr
    assert "No GPU — running on CPU" in result.stdout


# An unknown -p name refused with the allowed ones: the bake's own
# test_smoke_run.py::test_unknown_parameter_exits_2_naming_the_allowed_ones, in its make test above.
