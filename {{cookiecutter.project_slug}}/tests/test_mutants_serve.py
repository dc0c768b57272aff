"""Serving's promises that the label tests cannot see: a rollback goes back one stable version at a
time, and a failed write never leaves TF Serving a half-written config.

TF Serving polls models.config: a file it reads half-written drops the model or its labels until
the next poll. Here writes run under a file-size limit (RLIMIT_FSIZE, as a full disk would stop
them), and each config must then be the old one, whole; a temporary file and a rename give that,
a direct write does not.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import pytest
from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from {{ cookiecutter.package_name }} import serve

resource = pytest.importorskip("resource", reason="RLIMIT_FSIZE is POSIX-only")
SERVING_FILES = ("models.config", "batching.config", "monitoring.config", "versions.json")


def _export(run_dir: Path, version: int) -> None:
    (run_dir / "export" / str(version)).mkdir(parents=True, exist_ok=True)
    (run_dir / "export" / str(version) / "saved_model.pb").write_bytes(b"stand-in")
    serve.record_export(run_dir, {"version": version, "parity_ok": True, "max_abs_diff": 0.0})


def _labels(run_dir: Path) -> tuple[list[int], dict[str, int]]:
    text = (run_dir / "serving" / "models.config").read_text(encoding="utf-8")
    parsed = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    (model,) = parsed.model_config_list.config
    return list(model.model_version_policy.specific.versions), dict(model.version_labels)


def _promote(run_dir: Path, version: int) -> None:
    """Promote an unloaded version: served first, then labelled (TF Serving's two steps)."""
    serve.promote(run_dir, version)
    serve.promote(run_dir, version)
    assert _labels(run_dir)[1]["stable"] == version


def test_rollback_goes_back_to_the_previous_stable_then_the_one_before(tmp_path: Path) -> None:
    """Three stables in turn (1, 2, 3): a rollback gives stable to 2, the next to 1."""
    for version in (1, 2, 3):
        _export(tmp_path, version)
    _promote(tmp_path, 2)
    _promote(tmp_path, 3)
    assert _labels(tmp_path) == ([2, 3], {"stable": 3})
    said = serve.rollback(tmp_path)
    assert "version 2 is stable again" in said and "version 3 is unloaded" in said
    assert _labels(tmp_path) == ([1, 2], {"stable": 2})  # 1 stays loaded for the next rollback
    serve.rollback(tmp_path)
    assert _labels(tmp_path) == ([1], {"stable": 1})
    with pytest.raises(serve.ServeError, match="Nothing to roll back to"):
        serve.rollback(tmp_path)


@contextlib.contextmanager
def _file_size_limit(size: int):
    """Writes past `size` bytes fail with EFBIG (OSError) in this process, as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@pytest.mark.parametrize("action", ["canary", "promote", "rollback"])
def test_a_write_that_fails_midway_leaves_every_serving_file_whole(
    tmp_path: Path, action: str
) -> None:
    for version in (1, 2):
        _export(tmp_path, version)
    if action == "rollback":
        _promote(tmp_path, 2)
    folder = tmp_path / "serving"
    before = {name: (folder / name).read_bytes() for name in SERVING_FILES}
    calls = {
        "canary": lambda: serve.canary(tmp_path, 2),
        "promote": lambda: serve.promote(tmp_path, 2),
        "rollback": lambda: serve.rollback(tmp_path),
    }
    with _file_size_limit(64), pytest.raises(OSError):
        calls[action]()
    after = {name: (folder / name).read_bytes() for name in SERVING_FILES}
    assert after == before
    assert [path.name for path in folder.iterdir() if path.name.startswith(".")] == []


def test_a_config_is_replaced_by_a_new_file_not_rewritten_in_place(tmp_path: Path) -> None:
    """A reader that opened models.config before the change reads the old file to its end."""
    for version in (1, 2):
        _export(tmp_path, version)
    path = tmp_path / "serving" / "models.config"
    with path.open(encoding="utf-8") as reader:
        head = reader.read(10)
        serve.canary(tmp_path, 2)
        old = head + reader.read()
    assert _labels(tmp_path)[1] == {"stable": 1, "canary": 2}
    parsed = text_format.Parse(old, model_server_config_pb2.ModelServerConfig())
    assert dict(parsed.model_config_list.config[0].version_labels) == {"stable": 1}
