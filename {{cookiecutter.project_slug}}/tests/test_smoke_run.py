"""The project's own papermill smoke run: the real notebook chain, headless, through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from {{ cookiecutter.package_name }} import artifacts, runner

PACKAGE = "{{ cookiecutter.package_name }}"
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob(runner.NOTEBOOK_GLOB))
PROFILES = sorted(path.stem for path in (ROOT / "configs").glob("*.yaml"))
Smoke = tuple[Path, subprocess.CompletedProcess]


def run_cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    # As outside pytest: ipykernel copies what C++ writes to stderr into the notebook only when
    # PYTEST_CURRENT_TEST is unset, and that is what the quiet-notebook test must see.
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}
    return subprocess.run(
        [sys.executable, "-m", PACKAGE, "run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Smoke:
    """One smoke run of the whole chain, shared by the tests that read what it wrote.

    SHARED_SMOKE_RUN names a smoke run made already by `make run` (the template's own test makes
    one), with what the runner printed in <run>.runner.json: then that run is read, not repeated.
    """
    shared = os.environ.get("SHARED_SMOKE_RUN")
    if shared:
        log = json.loads(Path(f"{shared}.runner.json").read_text(encoding="utf-8"))
        return Path(shared), subprocess.CompletedProcess(**log)
    run_dir = (tmp_path_factory.mktemp("smoke") / "run").resolve()
    return run_dir, run_cli("--profile", "smoke", "--run-dir", str(run_dir))


def test_documented_profiles_ship() -> None:
    """configs/ holds the smoke, default and gpu profiles the README and CI name."""
    assert {"smoke", "default", "gpu"} <= set(PROFILES)


@pytest.mark.parametrize("profile", PROFILES)
def test_shipped_profile_validates_against_shipped_notebooks(profile: str) -> None:
    """Every key of every profile is a parameter a notebook declares, with a fitting value."""
    plan = runner.plan_run(profile, project_dir=ROOT)
    assert list(plan.notebooks) == [path.stem for path in NOTEBOOKS]
    spec = yaml.safe_load((ROOT / "configs" / f"{profile}.yaml").read_text(encoding="utf-8"))
    for name, values in (spec.get("notebooks") or {}).items():
        for key, value in (values or {}).items():
            assert plan.parameters[name][key] == value, f"{profile}: {name}.{key}"


def test_unknown_parameter_exits_2_naming_the_allowed_ones() -> None:
    """A mistyped -p name stops the CLI at once with exit 2 and lists the parameters that exist."""
    done = run_cli("--profile", "smoke", "-p", "nonexistent_param=1", timeout=120)
    assert done.returncode == 2, done.stderr
    assert "'nonexistent_param'" in done.stderr and "matmul_size" in done.stderr


@pytest.mark.slow
def test_smoke_run_succeeds(smoke: Smoke) -> None:
    """`run --profile smoke` runs the whole chain and exits 0."""
    run_dir, done = smoke
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Run folder: {run_dir}" in done.stdout
    # It ends with the headline (a line per notebook), the total time and both reports.
    out = [line for line in done.stdout.splitlines() if not line.startswith("make")]  # make -C
    last = out[out.index(f"Run {run_dir.name}: ok") + 1 :]
    assert [line.split(":")[0].strip() for line in last[: len(NOTEBOOKS)]] == [
        path.stem for path in NOTEBOOKS
    ], last
    assert last[-3].startswith("  Total: ") and "status ok" in last[-3], last
    assert last[-2:] == [
        f"Report: {run_dir / 'report.md'}",
        f"Report (HTML, works offline): {run_dir / 'report.html'}",
    ]


@pytest.mark.slow
def test_every_notebook_executed_with_outputs(smoke: Smoke) -> None:
    """Each notebook of the chain lands executed in <run>/notebooks, every code cell run."""
    run_dir, _ = smoke
    assert NOTEBOOKS, "the project has no notebooks/NN_*.ipynb"
    for source in NOTEBOOKS:
        executed = nbformat.read(run_dir / "notebooks" / source.name, as_version=4)
        code = [cell for cell in executed.cells if cell.cell_type == "code"]
        assert all(cell.execution_count is not None for cell in code), source.name
        assert any(cell.outputs for cell in code), f"{source.name} has no outputs"
        assert executed.metadata.papermill.exception is None, source.name


@pytest.mark.slow
def test_the_learning_rate_plans_say_whose_batch_they_draw(smoke: Smoke) -> None:
    """03's plans are drawn for the run's global batch and rate, or say what stands in for a
    value found only when training starts (they described a batch of 1024 at a rate of 0.016
    whatever the run used)."""
    run_dir, _ = smoke
    executed = nbformat.read(run_dir / "notebooks" / "03_train.ipynb", as_version=4)
    said = "".join(
        output.get("text", "")
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    profile = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text(encoding="utf-8"))
    asked = profile["notebooks"]["03_train"]
    if "auto" in (asked.get("batch_size"), asked.get("learning_rate")):
        assert "so these plans use a global batch of 1024 at 0.001 in their place" in said
    else:  # no learning_rate given: the rate training resolves
        batch, rate = asked["batch_size"], asked.get("learning_rate")
        given = f"{rate:g}." if rate is not None else ""
        assert f"Plans for this run: global batch {batch}, learning_rate {given}" in said


@pytest.mark.slow
def test_environment_metrics_written(smoke: Smoke) -> None:
    """00_environment writes metrics/environment.json with the keys later steps read."""
    run_dir, _ = smoke
    metrics = json.loads((run_dir / "metrics" / "environment.json").read_text())
    assert {"gpu_available", "device_used"} <= set(metrics)


@pytest.mark.slow
def test_run_record_and_report(smoke: Smoke) -> None:
    """run.json marks every notebook ok with its smoke parameters; report.md shows the metrics."""
    run_dir, _ = smoke
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["profile"] == "smoke"
    assert [entry["name"] for entry in record["notebooks"]] == [path.stem for path in NOTEBOOKS]
    assert all(entry["status"] == "ok" for entry in record["notebooks"]), record["notebooks"]
    assert record["notebooks"][0]["parameters"]["run_dir"] == str(run_dir)
    assert "### environment" in (run_dir / "report.md").read_text()


@pytest.mark.slow
def test_the_run_is_quiet_live_and_reported(smoke: Smoke) -> None:
    """No stderr output in any executed notebook and no TensorFlow log line in the runner's
    output; progress as whole lines (no carriage returns) with the notebooks' own progress; the
    report's headline names every notebook and embeds every figure the steps wrote."""
    run_dir, done = smoke
    for source in NOTEBOOKS:
        executed = nbformat.read(run_dir / "notebooks" / source.name, as_version=4)
        noisy = [
            "".join(output.get("text", ""))[:200]
            for cell in executed.cells
            for output in cell.get("outputs", [])
            if output.get("name") == "stderr"
        ]
        assert not noisy, f"{source.name}: {noisy}"
    said = done.stdout + done.stderr
    assert "I0000" not in said and "cuInit" not in said and "\r" not in done.stdout, said
    assert "» Epoch 2/2:" in done.stdout and "» TFRecords, train:" in done.stdout, done.stdout
    report = (run_dir / "report.md").read_text()
    headline = report.split("## Headline")[1].split("## Steps")[0]
    for source in NOTEBOOKS:
        assert f"- **{source.stem}**:" in headline, headline
    listed = []
    for step in artifacts.STEPS:
        path = run_dir / "metrics" / f"{step}.json"
        if path.is_file():
            listed += json.loads(path.read_text()).get("figures", [])
    assert len(listed) >= len(NOTEBOOKS), listed  # every step draws at least one figure
    for relative in listed:
        assert (run_dir / relative).is_file() and f"]({relative})" in report, relative
    assert (run_dir / "report.html").stat().st_size > 100_000


@pytest.mark.slow
def test_steps_rerun_out_of_order_never_leave_the_run_folder_lying(
    smoke: Smoke, tmp_path: Path
) -> None:
    """Issue 10's sequence on a copy of the smoke run: new data, then retrain, then a stale export.

    Training on replaced data starts from epoch 0 and says why; step 5 refuses the export made from
    the previous model; a re-export into an existing version is refused before any notebook runs,
    and the successful 04 notebook of the first run is untouched; a bad value exits 2 at once.
    """
    source, done = smoke
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    good_export = (run_dir / "notebooks" / "04_export.ipynb").read_bytes()

    new_data = run_cli(
        "--profile", "smoke", "--only", "01", "-p", "seed=7", "-p", "val_fraction=0.5",
        "--run-dir", str(run_dir),
    )  # fmt: skip
    assert new_data.returncode == 0, new_data.stdout + new_data.stderr

    retrain = run_cli(
        "--profile", "smoke", "--only", "03", "-p", "epochs=3", "--run-dir", str(run_dir)
    )  # fmt: skip
    assert retrain.returncode == 0, retrain.stdout + retrain.stderr
    train = json.loads((run_dir / "metrics" / "train.json").read_text())
    assert train["initial_epoch"] == 0 and train["epochs_completed"] == 3, train["history"]
    trained = nbformat.read(run_dir / "notebooks" / "03_train.ipynb", as_version=4)
    said = "".join(
        output.get("text", "") for cell in trained.cells for output in cell.get("outputs", [])
    )
    assert "other data" in said, "03 did not say why it started over"

    stale = run_cli("--profile", "smoke", "--only", "05", "--run-dir", str(run_dir), timeout=120)
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert "04_export" in stale.stderr and "Traceback" not in stale.stderr

    again = run_cli("--profile", "smoke", "--only", "04", "--run-dir", str(run_dir), timeout=120)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "exists already" in again.stderr
    assert (run_dir / "notebooks" / "04_export.ipynb").read_bytes() == good_export

    fresh = tmp_path / "fresh"
    started = time.perf_counter()
    refused = run_cli("--profile", "smoke", "-p", "epochs=0", "--run-dir", str(fresh), timeout=60)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "epochs=0" in refused.stderr
    assert not fresh.exists()
    print(f"epochs=0 refused in {time.perf_counter() - started:.1f} s")
