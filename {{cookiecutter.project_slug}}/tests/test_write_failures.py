"""Step 1's files misshapen or failing to be written: one sentence each, nothing half-written.

A meta.json of the wrong shape, and a full disk while the image task's shards or meta.json are
written, are each answered with one sentence naming the file and what to do; the partial files are
gone. The shared steps' writes (model.keras, checkpoints, an export, run.json, report.md) are
tested on the fake task in every bake: tests/test_write_failures_shared.py. The full disk is
simulated where the real one bites (ENOSPC from the write, or TensorFlow's ResourceExhaustedError,
whose errno is not set); a real one on a tmpfs behaves the same.
"""

from __future__ import annotations

import errno
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import writes
from {{ cookiecutter.package_name }}.data import DataError
from {{ cookiecutter.package_name }}.tasks import read_meta
from {{ cookiecutter.package_name }}.tasks.image import data_step
from {{ cookiecutter.package_name }}.tasks.image import shards as shards_module
from {{ cookiecutter.package_name }}.writes import WriteError

FULL = "No space left on device"


def full_disk(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, FULL)


def tf_full_disk(*_: Any, **__: Any) -> None:
    """What TensorFlow's writers raise on a full disk: no errno, the reason in the text."""
    raise tf.errors.ResourceExhaustedError(None, None, f"/some/file; {FULL}")


# --- meta.json of the wrong shape -----------------------------------------------------------


def _meta(digits_data: Path) -> dict[str, Any]:
    return json.loads((digits_data / "meta.json").read_text(encoding="utf-8"))


MISSHAPEN = {
    "empty object": lambda meta: {},
    "array": lambda meta: [],
    "string": lambda meta: "x",
    "no image_shape": lambda meta: {k: v for k, v in meta.items() if k != "image_shape"},
    "num_classes a string": lambda meta: {**meta, "num_classes": "ten"},
    "count missing": lambda meta: {**meta, "splits": {**meta["splits"], "train": {"shards": []}}},
    "image_shape of two": lambda meta: {**meta, "image_shape": [8, 8]},
}


@pytest.mark.parametrize("case", MISSHAPEN)
def test_a_misshapen_meta_json_names_the_file_and_01_data(
    run_dir: Path, digits_data: Path, case: str
) -> None:
    """Every step reads meta.json through read_meta: a wrong shape is one sentence, no KeyError."""
    path = run_dir / "data" / "meta.json"
    path.write_text(json.dumps(MISSHAPEN[case](_meta(digits_data))), encoding="utf-8")
    with pytest.raises(DataError) as error:
        read_meta(run_dir)
    assert str(path) in str(error.value) and "run 01_data again" in str(error.value)
    assert_one_sentence(str(error.value))


def test_the_image_shape_check_is_the_image_tasks_own() -> None:
    """data/meta.py names no task: tasks.read_meta asks the image task's Data, which refuses a
    shape that is not [height, width, channels] of whole numbers of at least 1."""
    wrong = "image_shape=[8, 8], not [height, width, channels]"
    assert data_step.DATA.meta_problem({"image_shape": [8, 8]}) == wrong
    assert data_step.DATA.meta_problem({"image_shape": [8, 8, True]}) is not None
    assert data_step.DATA.meta_problem({"image_shape": [8, 8, 0]}) is not None
    assert data_step.DATA.meta_problem({"image_shape": [8, 8, 1]}) is None


def test_the_meta_json_01_data_writes_passes(run_dir: Path) -> None:
    """The check refuses nothing the data step writes (the digits, with their splits)."""
    assert read_meta(run_dir)["num_classes"] == 10


def test_a_full_disk_while_writing_shards_removes_them_and_names_01_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TFRecordWriter fails in its third shard: no shard, temp file or meta.json is left."""
    real_writer, opened = tf.io.TFRecordWriter, []

    def writer(path: str) -> Any:
        opened.append(path)
        handle = real_writer(path)
        if len(opened) == 3:
            handle.write = tf_full_disk
        return handle

    monkeypatch.setattr(shards_module.tf.io, "TFRecordWriter", writer)
    with pytest.raises(WriteError) as error:
        data_step.prepare(tmp_path, "digits", shards=2)
    message = str(error.value)
    assert "validation-00000-of-00002.tfrecord could not be written: the disk is full" in message
    assert message.endswith("then run 01_data again (the shards written so far are removed).")
    assert_one_sentence(message)
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == []


def test_a_full_disk_while_writing_meta_json_removes_the_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """meta.json is written last; when it cannot be, the shards it would list go too."""
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args: Any, prefix: str = "", **kwargs: Any) -> tuple[int, str]:
        if prefix.startswith(".meta.json"):
            full_disk()
        return real_mkstemp(*args, prefix=prefix, **kwargs)

    monkeypatch.setattr(writes.tempfile, "mkstemp", mkstemp)
    with pytest.raises(WriteError, match="meta.json could not be written: the disk is full"):
        data_step.prepare(tmp_path, "digits", shards=2)
    assert list((tmp_path / "data").iterdir()) == []
