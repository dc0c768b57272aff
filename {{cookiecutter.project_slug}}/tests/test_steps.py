"""The step contract: one typed entry per step, lineage that refuses stale inputs, one sentence."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest
from helpers import assert_one_sentence
from nbclient import NotebookClient

from {{ cookiecutter.package_name }} import artifacts, lineage, runner, steps, writes
from {{ cookiecutter.package_name }}.artifacts import StaleInputError, StepError
from {{ cookiecutter.package_name }}.runner import cells

PACKAGE = "{{ cookiecutter.package_name }}"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
STEP_NAMES = [step.name for step in steps.available()]


@pytest.mark.parametrize("name", STEP_NAMES)
def test_each_notebooks_parameters_cell_is_its_steps_params(name: str) -> None:
    """The notebook's parameters cell and the package's Params hold the same names and defaults."""
    step = steps.BY_NAME[name]
    declared = papermill.inspect_notebook(str(NOTEBOOKS / f"{step.notebook}.ipynb"))
    in_cell = {key: ast.literal_eval(info["default"]) for key, info in declared.items()}
    assert in_cell.pop("run_dir") == "artifacts/interactive"
    assert in_cell == steps.defaults(step)


@pytest.mark.parametrize("name", STEP_NAMES)
def test_each_parameter_is_annotated_with_its_params_type(name: str) -> None:
    """`epochs: int = 5`: the cell's annotations are the Params types (the runner checks values
    against the cell, papermill --help-notebook shows them). A failure names the cell and line;
    `python -m <package>.runner.cells --write notebooks/*.ipynb` rewrites them."""
    path = NOTEBOOKS / f"{steps.BY_NAME[name].notebook}.ipynb"
    hints = cells.step_hints(path.stem)
    assert hints is not None and set(hints) == {"run_dir", *steps.defaults(name)}
    assert cells.drift(path, hints) == []


def test_the_annotation_rewriter_fixes_drift_and_keeps_values_and_comments(tmp_path: Path) -> None:
    """annotate() gives each line its Params type, keeps what follows `=`, and adds the typing
    import a cell with Optional or Union needs; drift() then finds nothing."""
    cell = nbformat.v4.new_code_cell(
        'run_dir = "artifacts/interactive"  # folder\n'
        "epochs: float = 5  # epochs (a = b)\n"
        "rate = None  # None: found"
    )
    cell.metadata["tags"] = ["parameters"]
    path = tmp_path / "03_train.ipynb"
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(
        nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": kernelspec}), path
    )
    hints = {"run_dir": str, "epochs": int, "rate": float | str | None}
    drifted = cells.drift(path, hints)
    assert len(drifted) == 3 and "cell 0 line 2: epochs is annotated float" in drifted[1]
    assert cells.annotate(path, hints) == 4  # three lines and the import
    source = nbformat.read(path, as_version=4).cells[0].source
    assert source.splitlines() == [
        "from typing import Optional, Union",
        "",
        'run_dir: str = "artifacts/interactive"  # folder',
        "epochs: int = 5  # epochs (a = b)",
        "rate: Union[float, str, None] = None  # None: found",
    ]
    assert cells.drift(path, hints) == [] and cells.annotate(path, hints) == 0
    found = papermill.inspect_notebook(str(path))
    assert found["rate"]["inferred_type_name"] == "Union[float, str, None]"
    exec(source, {})  # the cell still runs as Python


@pytest.mark.parametrize("name", STEP_NAMES)
def test_params_are_frozen_and_every_field_has_help(name: str) -> None:
    """Parameters travel as one immutable value, and the CLI can explain each of them."""
    params = steps.module(name).Params()
    field = dataclasses.fields(params)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(params, field.name, field.default)
    assert all(item.metadata.get("help") for item in dataclasses.fields(params))


def test_an_unknown_parameter_is_refused_naming_what_the_step_takes() -> None:
    with pytest.raises(StepError) as refused:
        steps.params_from("export", {"versoin": 2})
    assert_one_sentence(str(refused.value))
    assert "'versoin'" in str(refused.value) and "version" in str(refused.value)


def test_a_value_of_the_wrong_type_is_refused_before_the_step_sees_it() -> None:
    with pytest.raises(StepError) as refused:
        steps.params_from("export", {"version": "two"})
    assert_one_sentence(str(refused.value))
    assert "version='two'" in str(refused.value) and "int" in str(refused.value)
    with pytest.raises(StepError):
        steps.params_from("export", {"overwrite": 1})  # a number is not a yes/no


def test_a_whole_number_for_a_float_parameter_becomes_a_float() -> None:
    params = steps.params_from("data", {"val_fraction": 0, "run_dir": "ignored"})
    assert params.val_fraction == 0.0 and isinstance(params.val_fraction, float)


def test_a_step_error_shows_in_jupyter_as_its_sentence_not_a_traceback() -> None:
    """JupyterLab and papermill both render the error through IPython: one line, no frames."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            f"from {PACKAGE}.artifacts import MissingInputError\n"
            "raise MissingInputError('data/meta.json is missing: run 01_data first.')"
        )
    ]
    NotebookClient(notebook, kernel_name="python3", allow_errors=True, timeout=120).execute()
    # The project's kernel (kernel.py) may first show its "Loading TensorFlow" line.
    (error,) = [out for out in notebook.cells[0].outputs if out["output_type"] == "error"]
    assert error["ename"] == "MissingInputError"
    assert len(error["traceback"]) == 1, error["traceback"]
    assert "run 01_data first." in error["traceback"][0]
    assert "Traceback" not in error["traceback"][0]


def test_a_run_folder_that_cannot_be_written_is_refused_in_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(StepError) as refused:
        writes.check_writable(blocker / "run")
    assert_one_sentence(str(refused.value))
    assert "is a file" in str(refused.value)

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(writes.tempfile, "mkstemp", denied)
    with pytest.raises(StepError) as refused:
        writes.check_writable(tmp_path)
    assert_one_sentence(str(refused.value))
    assert "cannot be written (Permission denied" in str(refused.value)


# --- lineage ------------------------------------------------------------------------------------


def fake_data(run_dir: Path, seed: int) -> None:
    """A data folder as 01_data leaves it, as far as fingerprints go: meta.json and its shards."""
    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    (run_dir / "data" / "train-00000-of-00001.tfrecord").write_bytes(b"x" * (10 + seed))
    meta = {"seed": seed, "splits": {"train": {"shards": ["train-00000-of-00001.tfrecord"]}}}
    writes.write_json(run_dir / artifacts.META_FILE, meta)


def test_fingerprints_follow_the_content_not_the_time(tmp_path: Path) -> None:
    fake_data(tmp_path, seed=1)
    first = lineage.fingerprint(tmp_path, "data")
    fake_data(tmp_path, seed=1)
    assert lineage.fingerprint(tmp_path, "data") == first
    (tmp_path / "data" / "train-00000-of-00001.tfrecord").write_bytes(b"shorter")
    assert lineage.fingerprint(tmp_path, "data") != first  # a shard replaced by another
    assert lineage.fingerprint(tmp_path, "model") is None


def test_an_artifact_made_from_replaced_data_is_refused_naming_the_step_to_rerun(
    tmp_path: Path,
) -> None:
    fake_data(tmp_path, seed=1)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"weights")
    lineage.record(tmp_path, "model", "train", {"data": lineage.fingerprint(tmp_path, "data")})
    lineage.check_made_from(tmp_path, "model", needed_by="04_export")  # current: no refusal
    assert "current" in lineage.describe(tmp_path, "model")

    fake_data(tmp_path, seed=2)  # 01_data again, with another seed
    assert lineage.stale_inputs(tmp_path, "model") == ["data"]
    with pytest.raises(StaleInputError) as refused:
        lineage.check_made_from(tmp_path, "model", needed_by="04_export")
    assert_one_sentence(str(refused.value))
    assert "re-run 03_train before 04_export" in str(refused.value)
    assert "replaced by 01_data" in str(refused.value)


def test_a_record_of_an_earlier_artifact_says_nothing_about_the_current_one(
    tmp_path: Path,
) -> None:
    """A model.keras replaced by hand has no record: it is taken as it is, and said unchecked."""
    fake_data(tmp_path, seed=1)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"weights")
    lineage.record(tmp_path, "model", "train", {"data": "an-old-fingerprint"})
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"other weights")
    assert lineage.made_from(tmp_path, "model") is None
    lineage.check_made_from(tmp_path, "model", needed_by="04_export")
    assert "no lineage record" in lineage.describe(tmp_path, "model")
    ledger = json.loads((tmp_path / artifacts.LINEAGE_FILE).read_text(encoding="utf-8"))
    assert ledger["model"]["step"] == "train"


def test_the_run_report_marks_an_artifact_whose_inputs_changed_as_stale(tmp_path: Path) -> None:
    """A green row for 04 is not the whole truth once 03 retrained: report.md says so."""
    fake_data(tmp_path, seed=1)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"weights")
    model_fp = lineage.fingerprint(tmp_path, "model")
    lineage.record(tmp_path, "model", "train", {"data": lineage.fingerprint(tmp_path, "data")})
    (tmp_path / artifacts.EXPORT_DIR / "1").mkdir(parents=True)
    (tmp_path / artifacts.EXPORT_DIR / "1" / "saved_model.pb").write_bytes(b"graph")
    lineage.record(tmp_path, "export/1", "export", {"model": model_fp})
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"retrained weights")  # 03 again
    record = {"profile": "p", "status": "ok", "started": "t", "notebooks": []}
    report = runner.write_report(tmp_path, record).read_text(encoding="utf-8")
    rows = {line.split(" | ")[0]: line for line in report.splitlines() if line.startswith("| ")}
    assert "**stale**: model changed since" in rows["| export/1"]
    assert "replaced or removed" in rows["| model"]  # no record of the retrained model.keras


@pytest.mark.parametrize("loss", ["corrupt", "missing"])
def test_export_and_optimize_refuse_a_model_whose_lineage_json_was_lost(
    exported_run: Path, tmp_path: Path, loss: str
) -> None:
    """With lineage.json unreadable or gone, nothing says model.keras was trained on the data
    there: the real checkers (run's preflight) refuse instead of exporting it as if it were."""
    run = tmp_path / "run"
    shutil.copytree(exported_run, run)
    ledger = run / artifacts.LINEAGE_FILE
    if loss == "corrupt":
        ledger.write_text("{", encoding="utf-8")
    else:
        ledger.unlink()
    with pytest.raises(StepError) as refused:
        steps.preflight(run, {"04_export": {"version": 2}})
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"04_export refuses to start: model in {run} has unknown lineage")
    assert message.endswith("re-run 03_train before 04_export.")
    with pytest.raises(StepError, match="^05_optimize refuses to start: .*unknown lineage"):
        steps.preflight(run, {"05_optimize": {}})
    record = {"profile": "p", "status": "ok", "started": "t", "notebooks": []}
    report = runner.write_report(run, record).read_text(encoding="utf-8")
    rows = {line.split(" | ")[0]: line for line in report.splitlines() if line.startswith("| ")}
    assert "**unknown**: lineage.json" in rows["| model"]


@pytest.mark.parametrize("how", ["copied in", "replaced by hand"])
def test_export_and_optimize_refuse_a_model_without_its_training_record(
    exported_run: Path, tmp_path: Path, how: str
) -> None:
    """A model.keras 03_train did not record (a training that died after writing it, a file
    copied in) was exported and made the stable version (issue 45): now refused, naming 03_train."""
    run = tmp_path / "run"
    shutil.copytree(exported_run, run)
    ledger = run / artifacts.LINEAGE_FILE
    if how == "copied in":  # the ledger holds the data and the export, nothing of the model
        entries = json.loads(ledger.read_text(encoding="utf-8"))
        entries.pop("model")
        ledger.write_text(json.dumps(entries), encoding="utf-8")
    else:  # a record of the model trained before, not of this one
        with (run / artifacts.MODEL_FILE).open("ab") as model:
            model.write(b"\0")  # still a whole archive: its index sits at the end
    (run / artifacts.METRICS_DIR / "train.json").unlink(missing_ok=True)
    with pytest.raises(StepError) as refused:
        steps.preflight(run, {"04_export": {"version": 2}})
    message = str(refused.value)
    assert_one_sentence(message)
    assert message == (
        f"04_export refuses to start: {run / artifacts.MODEL_FILE} has no training record "
        "(03_train records the model it writes in lineage.json, beside metrics/train.json; this "
        "one was copied in or left by a training that did not finish): run 03_train before "
        "04_export."
    )
    with pytest.raises(StepError, match="^05_optimize refuses to start: .*no training record"):
        steps.preflight(run, {"05_optimize": {}})
    assert not (run / artifacts.EXPORT_DIR / "2").exists()


# --- the command line -----------------------------------------------------------------------------


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", PACKAGE, *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.mark.parametrize("name", ["data", "export", "optimize"])
def test_every_step_has_a_subcommand_that_lists_its_parameters(name: str) -> None:
    result = cli(name, "--help")
    assert result.returncode == 0, result.stderr
    for field in dataclasses.fields(steps.module(name).Params):
        assert f"{field.name} = {field.default!r}" in result.stdout


def test_a_step_subcommand_refuses_a_bad_value_with_exit_2_and_writes_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run"
    result = cli("export", "--run-dir", str(folder), "-p", "version=0")
    assert result.returncode == 2, result.stdout + result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith(f"{PACKAGE}: ")]
    assert len(ours) == 1 and "Traceback" not in result.stderr, result.stderr
    message = ours[0].removeprefix(f"{PACKAGE}: ")
    assert_one_sentence(message)
    assert "version=0" in message
    assert not folder.exists()
