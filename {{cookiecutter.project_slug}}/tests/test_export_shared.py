"""Export on the fake task (tests/fake_task.py), in every bake: the step's refusals of broken or
stale inputs, safe writes and versions, parity that can fail, and what a killed export left. Each
task's own signature, payload and REST answers are tested in its own files;
tests/test_shared_steps.py checks the fake export's signature and its parity after a reload.

One untrained fake model is exported once for the whole file by export.run; a test that breaks
something works on a copy (run_copy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

import fake_task
import keras
import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import export, lineage
from {{ cookiecutter.package_name }}.artifacts import MissingInputError, StaleInputError, StepError
from {{ cookiecutter.package_name }}.writes import WriteError

pytestmark = pytest.mark.usefixtures("fake_module")  # the fake task is the task of every test


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as 01_data and 03_train leave it: data/ with meta.json, and model.keras."""
    return fake_task.write_model(tmp_path_factory.mktemp("fake-export") / "run")


@pytest.fixture(scope="module")
def exported(run: Path, fake_module) -> dict[str, Any]:
    """The step as the notebook runs it: export/1, parity, saved_model_cli, metrics/export.json."""
    return export.run(run, export.Params(version=1, overwrite=False), verbose=False)


@pytest.fixture
def run_copy(run: Path, exported: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the exported run folder, for a test that breaks something in it."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def test_a_savedmodel_of_other_weights_fails_parity(run_copy: Path) -> None:
    """Parity can fail: model.keras retrained (other weights) against the old export."""
    fake_task.write_model(run_copy, seed=1)
    parity = export.check_parity(run_copy, run_copy / "export" / "1", max_examples=8)
    assert parity["max_abs_diff"] > parity["tolerance"]
    assert parity["parity_ok"] is False, parity["verdict"]


def test_check_without_inputs_looks_at_the_values_only(tmp_path: Path) -> None:
    """The runner's pre-flight check: values refused, an empty folder not looked at."""
    export.check(tmp_path / "nothing-here", export.Params(), inputs=False)
    with pytest.raises(export.ExportError, match="overwrite='no'") as refused:
        export.check(tmp_path, export.Params(overwrite="no"), inputs=False)
    assert_one_sentence(str(refused.value))
    with pytest.raises(MissingInputError, match="03_train"):
        export.check(tmp_path, export.Params())


def test_a_model_trained_on_replaced_data_is_refused_naming_03_train(run_copy: Path) -> None:
    """model.keras recorded as made from other data than data/ holds now: retrain first."""
    lineage.record(run_copy, "model", "train", {"data": "0" * 64})
    with pytest.raises(StaleInputError, match="re-run 03_train before 04_export") as refused:
        export.check(run_copy, export.Params(version=2))
    assert_one_sentence(str(refused.value))
    lineage.record(run_copy, "model", "train", {"data": lineage.fingerprint(run_copy, "data")})
    export.check(run_copy, export.Params(version=2))  # trained on the data there now: accepted


def test_an_export_folder_that_cannot_be_written_is_refused_before_loading(
    run_copy: Path,
) -> None:
    """export/ is a file here: refused in one sentence before any model is loaded."""
    shutil.rmtree(run_copy / "export")
    (run_copy / "export").write_text("not a folder")
    with pytest.raises(StepError, match="is a file, not a folder") as refused:
        export.check(run_copy, export.Params(version=2))
    assert_one_sentence(str(refused.value))
    assert str(refused.value).startswith(f"the export folder {run_copy / 'export'} cannot be used")


def cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(5000))


def damaged_byte(path: Path) -> None:
    """One byte of the weights flipped: still a zip archive, but its CRC no longer matches."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        weights = archive.getinfo("model.weights.h5")
    raw[weights.header_offset + 200] ^= 0xFF
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", [cut_short, random_bytes, damaged_byte])
def test_a_broken_model_file_is_refused_naming_03_train(run_copy: Path, damage: Any) -> None:
    """A model.keras cut short or damaged: one sentence before any work, not "File not found"."""
    damage(run_copy / "model.keras")
    with pytest.raises(export.ExportError) as refused:
        export.check(run_copy, export.Params(version=2))
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"model.keras in {run_copy} cannot be read (")
    assert message.endswith("): re-run 03_train.") and "File not found" not in message
    assert not (run_copy / "export" / "2").exists()


def test_a_model_file_keras_cannot_load_is_one_sentence_too(run_copy: Path) -> None:
    """A whole archive whose model Keras cannot build passes the cheap check; the load says so."""
    with zipfile.ZipFile(run_copy / "model.keras", "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": "NoSuchLayer", "config": {}}))
        archive.writestr("model.weights.h5", b"not hdf5")
    lineage.record(run_copy, "model", "train", {"data": lineage.fingerprint(run_copy, "data")})
    with pytest.raises(export.ExportError, match="re-run 03_train") as refused:
        export.export_savedmodel(run_copy, version=2)
    assert_one_sentence(str(refused.value))
    assert not (run_copy / "export" / "2").exists()


def test_an_existing_version_is_refused_unless_overwrite(run: Path) -> None:
    """Exporting over a version needs overwrite=True; then the old folder is replaced whole."""
    target = Path(export.export_savedmodel(run, version=2)["export_dir"])
    (target / "stale.txt").write_text("from the first export")
    with pytest.raises(export.ExportError, match="overwrite=True") as refused:
        export.export_savedmodel(run, version=2)
    assert str(target) in str(refused.value)
    assert_one_sentence(str(refused.value))
    with pytest.raises(export.ExportError, match="overwrite=True"):
        export.run(run, export.Params(version=2, overwrite=False), verbose=False)
    assert (target / "stale.txt").is_file()
    export.export_savedmodel(run, version=2, overwrite=True)
    assert (target / "saved_model.pb").is_file() and not (target / "stale.txt").exists()


def test_a_failed_write_leaves_no_half_export(
    run: Path, exported: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash while writing leaves neither a new version folder nor a temporary one behind."""
    archive = type(keras.export.ExportArchive())  # Keras 3 hands out the backend's subclass
    write_out = archive.write_out

    def write_then_fail(self: Any, filepath: str, *args: Any, **kwargs: Any) -> None:
        write_out(self, filepath, *args, **kwargs)
        raise OSError("No space left on device")

    monkeypatch.setattr(archive, "write_out", write_then_fail)
    existing = Path(exported["export_dir"])
    (existing / "marker.txt").write_text("the version being served")
    before = sorted(path.name for path in existing.parent.iterdir())
    with pytest.raises(WriteError, match="export/7 could not be written: the disk is full"):
        export.export_savedmodel(run, version=7)
    with pytest.raises(WriteError, match="the disk is full .*; the earlier one is kept"):
        export.export_savedmodel(run, version=1, overwrite=True, replace_served=True)
    assert sorted(path.name for path in existing.parent.iterdir()) == before
    assert (existing / "marker.txt").is_file() and (existing / "saved_model.pb").is_file()


def test_what_a_killed_export_left_is_removed_by_the_next_and_never_counts(
    run_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A runner killed mid-export leaves export/.N.tmp-*: no list of versions counts it, and the
    next export of N removes it in one line; a temporary folder whose process still runs stays,
    and a version a killed overwrite had moved aside is put back, not removed."""
    from {{ cookiecutter.package_name }}.export import files
    from {{ cookiecutter.package_name }}.export.params import next_version
    from {{ cookiecutter.package_name }}.optimize.base import latest_export

    gone = _dead_pid()
    folder = run_copy / "export"
    one = folder / "1"
    killed = [
        folder / f".3.tmp-{files._host()}-{gone}-k1l2",  # this host, its process is gone
        folder / ".3.tmp-x8y9z0a1",  # an older export's name, without host and process
    ]
    alive = folder / f".3.tmp-{files._host()}-{os.getpid()}-w7r1"  # still being written
    for path in (*killed, alive):
        shutil.copytree(one, path)
    top = max(int(path.name) for path in folder.iterdir() if path.name.isdigit())
    assert next_version(run_copy) == top + 1 and latest_export(run_copy) == folder / str(top)
    shutil.rmtree(folder / "3", ignore_errors=True)  # an earlier test's version 3, if any
    export.run(run_copy, export.Params(version=3, overwrite=False))
    said = [line for line in capsys.readouterr().out.splitlines() if "interrupted" in line]
    names = ", ".join(path.name for path in killed)
    assert said == [f"Removed what an interrupted export left in {folder}: {names}"]
    assert not any(path.exists() for path in killed) and alive.is_dir()
    moved = folder / f".9.tmp-{files._host()}-{gone}-q4.old"  # killed between the two renames
    shutil.copytree(one, moved)
    with pytest.raises(export.ExportError, match="exists already"):
        export.export_savedmodel(run_copy, version=9)
    assert (folder / "9" / "saved_model.pb").is_file() and not moved.exists()


def _dead_pid() -> int:
    """The process id of a process that has ended (and been reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_the_parity_check_in_a_fresh_process_is_not_silent(
    run_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fresh process loads TensorFlow and the export, minutes on a busy machine: a line says
    so while it runs, and again with its time when it is done (it was a silent wait)."""
    from {{ cookiecutter.package_name }} import progress
    from {{ cookiecutter.package_name }}.export import entry as step

    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.setattr(progress, "LINE_EVERY", 0.05)
    real = step.check_parity

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(step, "check_parity", slow)
    shutil.rmtree(run_copy / "export" / "4", ignore_errors=True)
    export.run(run_copy, export.Params(version=4, overwrite=False))
    said = capsys.readouterr().out
    moving = re.findall(r"Parity: the export reloaded in a fresh process: [^\n]*", said)
    assert len(moving) >= 2 and "done in" in moving[-1], said


@pytest.mark.parametrize("version", [0, -1, 1.5, "1", True, None])
def test_a_bad_version_is_refused_in_one_sentence(run: Path, version: Any) -> None:
    """Versions are whole numbers >= 1, the folder names TF Serving loads."""
    with pytest.raises(export.ExportError, match=re.escape(f"version={version!r}")) as refused:
        export.export_savedmodel(run, version=version)
    assert_one_sentence(str(refused.value))


def test_a_run_without_a_model_names_03_train(tmp_path: Path) -> None:
    """No model.keras: one sentence that says to run 03_train first."""
    with pytest.raises(MissingInputError, match="03_train") as missing:
        export.export_savedmodel(tmp_path, version=1)
    assert_one_sentence(str(missing.value))
    assert not (tmp_path / "export").exists()
