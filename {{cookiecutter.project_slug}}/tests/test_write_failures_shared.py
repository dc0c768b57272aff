"""Writes that fail and records of the wrong shape, in the steps every task shares: one sentence
each, nothing half-written (moved from the image-only test_write_failures.py, which keeps step 1's
shards and meta.json). A run.json of the wrong shape, a read-only run folder, and a full disk while
model.keras, a checkpoint, an export or run.json are written are each answered with one sentence
naming the file and what to do; the partial files are gone and an earlier good file is kept. The
export and the meta.json checks run on the fake task (tests/fake_task.py).
"""

from __future__ import annotations

import argparse
import errno
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import export, tasks, train, writes
from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.export import savedmodel
from {{ cookiecutter.package_name }}.runner import commands, record
from {{ cookiecutter.package_name }}.train import Params
from {{ cookiecutter.package_name }}.train.loop import Loop
from {{ cookiecutter.package_name }}.train.state import Checkpoints
from {{ cookiecutter.package_name }}.writes import WriteError, write_json

FULL = "No space left on device"


def full_disk(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, FULL)


def tf_full_disk(*_: Any, **__: Any) -> None:
    """What TensorFlow's writers raise on a full disk: no errno, the reason in the text."""
    raise tf.errors.ResourceExhaustedError(None, None, f"/some/file; {FULL}")


def test_train_and_export_refuse_a_misshapen_meta_json_in_one_sentence(
    fake_run: Path, fake_exported: Path, tmp_path: Path
) -> None:
    """The probes of issue 27: `{}` and `[]` in train were a KeyError and a TypeError."""
    (fake_run / "data" / "meta.json").write_text("[]", encoding="utf-8")
    with pytest.raises(StepError, match="meta.json is not the meta.json 01_data writes"):
        train.check(fake_run, Params(), inputs=True)
    run = tmp_path / "exported"
    shutil.copytree(fake_exported, run)
    (run / "data" / "meta.json").write_text("{}", encoding="utf-8")
    with pytest.raises(StepError, match="run 01_data again"):
        export.check(run, export.Params(version=2), inputs=True)


# --- run.json of the wrong shape, and a read-only run folder, in `report` ----------------------

RECORD = {"profile": "smoke", "status": "ok", "started": "-", "notebooks": [], "attempts": []}


def report(folder: Path, headline: bool = False) -> int:
    return commands.report(argparse.Namespace(run_dir=folder, headline=headline), "prog")


@pytest.mark.parametrize(
    "content",
    [
        "[]",
        "{}",
        '{"steps": 5}',
        json.dumps({**RECORD, "notebooks": [{"status": "ok"}]}),
        json.dumps(
            {**RECORD, "notebooks": [{"name": "01_data", "status": "failed", "error": "x"}]}
        ),
        json.dumps({**RECORD, "attempts": [{"status": "ok"}]}),
        '{"profile": "smoke", "status": "ok", "sta',
    ],
    ids=["array", "empty", "steps", "no name", "error text", "attempt", "corrupt"],
)
@pytest.mark.parametrize("headline", [False, True], ids=["report", "headline"])
def test_report_on_a_misshapen_run_json_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, headline: bool
) -> None:
    """A run.json `run` did not write is named, exit 2, no traceback and no report written."""
    (tmp_path / "run.json").write_text(content, encoding="utf-8")
    assert report(tmp_path, headline) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "run.json") in err
    assert_one_sentence(err.removeprefix("prog: "))
    assert not (tmp_path / "report.md").exists()


def test_report_in_a_read_only_folder_names_it_and_keeps_the_earlier_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root ignores chmod, so the folder's refusal is simulated where the write starts."""
    (tmp_path / "run.json").write_text(json.dumps(RECORD), encoding="utf-8")
    (tmp_path / "report.md").write_text("the earlier report\n", encoding="utf-8")

    def read_only(*_: Any, **__: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(writes.tempfile, "mkstemp", read_only)
    assert report(tmp_path) == 2
    err = capsys.readouterr().err.removeprefix("prog: ")
    assert f"{tmp_path / 'report.md'} could not be written: {tmp_path} is not writable" in err
    assert "the earlier one is kept" in err
    assert_one_sentence(err)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "the earlier report\n"


# --- a full disk ----------------------------------------------------------------------------


def test_write_json_on_a_full_disk_keeps_the_earlier_file_and_says_what_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared writer of every JSON (metrics, run.json, meta.json): a sentence, no temp file."""
    path = write_json(tmp_path / "metrics" / "train.json", {"good": 1})
    real_fdopen = writes.os.fdopen

    class Full:
        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            self.handle = real_fdopen(fd, *args, **kwargs)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *_: Any) -> None:
            self.handle.close()

        def write(self, text: str) -> None:
            self.handle.write(text[:10])
            self.handle.flush()
            full_disk()

    monkeypatch.setattr(writes.os, "fdopen", Full)
    with pytest.raises(WriteError) as error:
        write_json(path, {"good": 2}, then="run 03_train again")
    message = str(error.value)
    free = writes._size(shutil.disk_usage(tmp_path).free).split()[1]  # the unit, at least
    assert message.startswith(f"{path} could not be written: the disk is full (")
    assert f"free in {path.parent}" in message and free in message
    assert message.endswith("the earlier one is kept; free some space, then run 03_train again.")
    assert_one_sentence(message)
    assert json.loads(path.read_text(encoding="utf-8")) == {"good": 1}
    assert list(path.parent.iterdir()) == [path]


def test_other_write_errors_pass_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a full disk or a read-only folder becomes a sentence; a bug stays a bug."""

    def broken(*_: Any, **__: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writes.tempfile, "mkstemp", broken)
    with pytest.raises(OSError, match="Input/output error"):
        write_json(tmp_path / "x.json", {})


def test_a_full_disk_while_saving_model_keras_keeps_the_earlier_model(tmp_path: Path) -> None:
    """Half a .keras file is removed, the earlier model.keras stays, and 03_train resumes."""
    (tmp_path / "model.keras").write_bytes(b"the earlier model")

    def save(path: Path) -> None:
        Path(path).write_bytes(b"half a mod")
        full_disk()

    loop = SimpleNamespace(folder=tmp_path, model=SimpleNamespace(save=save))
    with pytest.raises(WriteError) as error:
        Loop._save_model(loop)  # type: ignore[arg-type]
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'model.keras'} could not be written: the disk is full")
    assert "run 03_train again with the same run_dir (it resumes" in message
    assert_one_sentence(message)
    assert (tmp_path / "model.keras").read_bytes() == b"the earlier model"
    assert [path.name for path in tmp_path.iterdir()] == ["model.keras"]


def test_a_full_disk_while_saving_a_checkpoint_keeps_the_last_whole_one(tmp_path: Path) -> None:
    """TensorFlow's SaveV2 fails in ckpt-2_temp/: that folder goes, the pointer names ckpt-1."""
    epoch = tf.Variable(0)
    checkpoints = Checkpoints(
        tmp_path, tf.train.Checkpoint(epoch=epoch), epoch, chief=True, state={}
    )
    checkpoints.save(1, [{"epoch": 1}])
    real_save = checkpoints.manager.save

    def save(checkpoint_number: int) -> str:
        if checkpoint_number == 1:
            return real_save(checkpoint_number=checkpoint_number)
        partial = tmp_path / "checkpoints" / f"ckpt-{checkpoint_number}_temp"
        partial.mkdir()
        (partial / "part-00000-of-00001.data-00000-of-00001.tempstate1").write_bytes(b"half")
        tf_full_disk()

    checkpoints.manager.save = save  # type: ignore[method-assign]
    with pytest.raises(WriteError) as error:
        checkpoints.save(2, [{"epoch": 1}, {"epoch": 2}])
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'checkpoints' / 'ckpt-2'} could not be written: the")
    assert (
        "run 03_train again with the same run_dir (it resumes from the last checkpoint)" in message
    )
    assert_one_sentence(message)
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("ckpt-1")
    assert not list((tmp_path / "checkpoints").glob("ckpt-2*"))


def test_a_failed_save_on_a_stop_signal_keeps_the_epochs_checkpoint(tmp_path: Path) -> None:
    """A stop signal mid-epoch 3 saves a checkpoint of its own number: its failure removes only
    its own files, and the pointer and files of ckpt-2 stay, so the next run resumes there (it
    had reused ckpt-2's number, and the cleanup deleted ckpt-2)."""
    epoch = tf.Variable(0)
    checkpoints = Checkpoints(
        tmp_path, tf.train.Checkpoint(epoch=epoch), epoch, chief=True, state={}
    )
    checkpoints.save(2, [{"epoch": 1}, {"epoch": 2}])
    folder = tmp_path / "checkpoints"
    kept = sorted(path.name for path in folder.glob("ckpt-2.*"))
    real_save = checkpoints.manager.save
    numbers = []

    def save(checkpoint_number: int) -> str:
        numbers.append(checkpoint_number)
        partial = folder / f"ckpt-{checkpoint_number}_temp"
        partial.mkdir()
        (partial / "part-00000-of-00001.data-00000-of-00001.tempstate1").write_bytes(b"half")
        tf_full_disk()

    checkpoints.manager.save = save  # type: ignore[method-assign]
    with pytest.raises(WriteError):
        checkpoints.save(2, [{"epoch": 1}, {"epoch": 2}], mid_epoch=True)
    assert sorted(path.name for path in folder.glob("ckpt-2.*")) == kept
    assert tf.train.latest_checkpoint(str(folder)).endswith("ckpt-2")
    assert numbers[0] > 2
    assert not list(folder.glob(f"ckpt-{numbers[0]}*"))
    tf.train.Checkpoint(epoch=epoch).restore(str(folder / "ckpt-2")).assert_consumed()

    checkpoints.manager.save = real_save  # type: ignore[method-assign]
    first = checkpoints.save(2, [{"epoch": 1}, {"epoch": 2}], mid_epoch=True)
    second = checkpoints.save(2, [{"epoch": 1}, {"epoch": 2}], mid_epoch=True)
    assert len({Path(first).name, Path(second).name, "ckpt-2"}) == 3  # none overwrites another
    assert sorted(path.name for path in folder.glob("ckpt-2.*")) == kept
    # The next run reads the epochs from the checkpoint, not from its number (100002 epochs).
    from {{ cookiecutter.package_name }}.train import resume

    latest = tf.train.latest_checkpoint(str(folder))
    assert latest == second
    assert resume.epochs_held(tf.train.load_checkpoint(latest), latest) == 2


def test_a_full_disk_while_writing_an_export_leaves_no_version_and_keeps_the_earlier(
    fake_exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SavedModel write fails (TensorFlow's SaveV2): no export/2, no temp folder, export/1
    untouched, and the sentence names the folder and the space left."""
    run = tmp_path / "run"
    shutil.copytree(fake_exported, run)
    before = (run / "export" / "1" / "saved_model.pb").read_bytes()

    class Archive:
        def write_out(self, folder: str, verbose: bool = False) -> None:
            (Path(folder) / "saved_model.pb").write_bytes(b"half")
            tf_full_disk()

    monkeypatch.setattr(tasks.current().export, "build_archive", lambda *_: Archive())
    for version, overwrite in ((2, False), (1, True)):
        with pytest.raises(WriteError) as error:
            savedmodel.export_savedmodel(run, version=version, overwrite=overwrite)
        message = str(error.value)
        assert message.startswith(f"{run / 'export' / str(version)} could not be written: the disk")
        assert message.endswith("free some space, then run 04_export again.")
        assert_one_sentence(message)
    assert sorted(path.name for path in (run / "export").iterdir()) == ["1"]
    assert (run / "export" / "1" / "saved_model.pb").read_bytes() == before


def test_a_full_disk_while_the_runner_saves_run_json_keeps_the_earlier_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """record.save on a full disk: one sentence naming run.json; the earlier run.json stays."""
    (tmp_path / "run.json").write_text('{"earlier": true}\n', encoding="utf-8")
    monkeypatch.setattr(writes.tempfile, "mkstemp", full_disk)
    with pytest.raises(WriteError) as error:
        record.save(tmp_path, {**RECORD, "attempts": []}, [])
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'run.json'} could not be written: the disk is full")
    assert "run again with the same --run-dir" in message
    assert_one_sentence(message)
    assert (tmp_path / "run.json").read_text(encoding="utf-8") == '{"earlier": true}\n'
