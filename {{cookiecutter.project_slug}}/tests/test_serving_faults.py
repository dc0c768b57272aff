"""Serving under faults: a damaged versions.json or models.config, a read-only or full serving/,
label weights that are not numbers. Each is one sentence naming the file or value and what to do,
exit status 2, no traceback, and no file left half-changed.

Like test_serving.py, no TF Serving binary runs: exports are stand-in folders recorded by step 4's
hook, and a read-only folder or a full disk is an OSError raised where the package writes.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import serve
from {{ cookiecutter.package_name }}.cli import main
from {{ cookiecutter.package_name }}.export import params as export_params
from {{ cookiecutter.package_name }}.serve import bench, state

PACKAGE = "{{ cookiecutter.package_name }}"
SERVING_FILES = ("models.config", "batching.config", "monitoring.config", "versions.json")
# What a crash, an editor or a hand-made copy can leave in versions.json.
BROKEN_STATES = {
    "cut short": "{",
    "empty": "",
    "a list": "[]",
    "null": "null",
    "keys missing": '{"stable": 3}',
    "a label that is no version": json.dumps(
        {
            "model_name": PACKAGE,
            "exports": {},
            "stable": "x",
            "canary": None,
            "history": [],
            "loading": None,
            "batching": {},
        }
    ),
    "a batching entry TF Serving refuses": None,  # filled from a real state below
}
ACTIONS = {
    "status": ["status"],
    "promote": ["promote", "--version", "2"],
    "canary": ["canary", "--version", "2"],
    "rollback": ["rollback"],
    "rewrite": ["rewrite"],
}


def fake_export(run_dir: Path, version: int) -> None:
    """export/<version>/ with a saved_model.pb, recorded by step 4 as having passed parity."""
    (run_dir / "export" / str(version)).mkdir(parents=True, exist_ok=True)
    (run_dir / "export" / str(version) / "saved_model.pb").write_bytes(b"stand-in")
    serve.record_export(run_dir, {"version": version, "parity_ok": True, "max_abs_diff": 0.0})


def two_versions(run_dir: Path) -> dict[str, bytes]:
    """Versions 1 (stable) and 2 (canary); the serving files' bytes."""
    fake_export(run_dir, 1)
    fake_export(run_dir, 2)
    serve.canary(run_dir, 2)
    return snapshot(run_dir)


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / "serving" / name).read_bytes() for name in SERVING_FILES}


def broken(run_dir: Path, case: str) -> str:
    text = BROKEN_STATES[case]
    if text is None:
        good = json.loads((run_dir / "serving" / "versions.json").read_text())
        text = json.dumps({**good, "batching": {**good["batching"], "max_batch_size": 0}})
    return text


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI; it must exit 2 with one sentence on stderr and nothing on stdout."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "", out
    assert err.startswith(f"{PACKAGE}: ") and len(err.strip().splitlines()) == 1, err
    said = err.strip().removeprefix(f"{PACKAGE}: ")
    assert_one_sentence(said)
    return said


# ----------------------------------------------------------------------------- versions.json


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("case", sorted(BROKEN_STATES))
def test_every_serve_action_refuses_an_unusable_versions_json(tmp_path, capsys, case, action):
    """`{`, an empty file, `[]`, `{"stable": 3}`, a label that is no version, a batching entry TF
    Serving would refuse: every action names the file and what to do, and changes nothing."""
    two_versions(tmp_path)
    path = tmp_path / "serving" / "versions.json"
    path.write_text(broken(tmp_path, case), encoding="utf-8")
    before = snapshot(tmp_path)
    said = refusal(capsys, ["serve", *ACTIONS[action], "--run-dir", str(tmp_path)])
    assert said.startswith(f"{path} cannot be used (")
    assert said.endswith(
        "restore it, or delete it and run 04_export again, which starts a new record with the "
        "version it exports."
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", sorted(BROKEN_STATES))
def test_export_refuses_an_unusable_versions_json_before_it_writes(tmp_path, monkeypatch, case):
    """export checks the ledger before export/N exists: a version written and then left without
    its parity record (step 4's hook failing on the file) cannot happen."""
    monkeypatch.setattr(export_params, "check_trained_model", lambda *args, **kwargs: None)
    fake_export(tmp_path, 1)
    path = tmp_path / "serving" / "versions.json"
    path.write_text(broken(tmp_path, case), encoding="utf-8")
    with pytest.raises(serve.ServeError) as refused:
        export_params.check(tmp_path, export_params.Params(version=2))
    assert str(refused.value).startswith(f"{path} cannot be used (")
    assert_one_sentence(str(refused.value))


@pytest.mark.parametrize("lock", ["lock read-only too", "lock file writable"])
def test_export_refuses_a_serving_folder_it_could_not_record_in(tmp_path, monkeypatch, lock):
    """A serving/ that cannot be written would leave the new version unrecorded: refused before,
    also where the lock file itself can still be opened (a folder made read-only after it)."""
    monkeypatch.setattr(export_params, "check_trained_model", lambda *args, **kwargs: None)
    fake_export(tmp_path, 1)
    read_only(monkeypatch, tmp_path / "serving", lock=lock == "lock read-only too")
    with pytest.raises(serve.ServeError) as refused:
        export_params.check(tmp_path, export_params.Params(version=2))
    assert str(refused.value) == (
        f"{tmp_path / 'serving'} cannot be written (Read-only file system), so nothing was "
        "changed: make it writable (e.g. mount it read-write) and run the command again."
    )


# ----------------------------------------------------------------------------- models.config


@pytest.mark.parametrize("damage", ["missing", "garbage {", "", "model_config_list { config {} }"])
def test_status_names_a_damaged_models_config_and_rewrite_mends_it(tmp_path, capsys, damage):
    """ConfigError (or a missing file) is one sentence pointing at `serve rewrite`, which writes
    the three configs again from versions.json."""
    before = two_versions(tmp_path)
    path = tmp_path / "serving" / "models.config"
    if damage == "missing":
        path.unlink()
    else:
        path.write_text(damage, encoding="utf-8")
    said = refusal(capsys, ["serve", "status", "--run-dir", str(tmp_path)])
    assert said.startswith(f"{path} cannot be used (")
    assert said.endswith(f"with `{PACKAGE} serve rewrite --run-dir {tmp_path}`.")
    assert main(["serve", "rewrite", "--run-dir", str(tmp_path)]) == 0
    assert "serving [1, 2], stable 1, canary 2." in capsys.readouterr().out
    assert snapshot(tmp_path) == before
    assert main(["serve", "status", "--run-dir", str(tmp_path)]) == 0


@pytest.mark.parametrize("action", ["promote", "canary"])
def test_nothing_to_change_is_not_said_over_a_damaged_models_config(tmp_path, capsys, action):
    """`serve promote --version 1` when 1 is stable already says "nothing changed" only when
    models.config tells TF Serving so; a missing one is named, with `serve rewrite`."""
    two_versions(tmp_path)
    (tmp_path / "serving" / "models.config").unlink()
    version = {"promote": "1", "canary": "2"}[action]
    argv = ["serve", action, "--version", version, "--run-dir", str(tmp_path)]
    said = refusal(capsys, argv)
    assert said.endswith(f"with `{PACKAGE} serve rewrite --run-dir {tmp_path}`.")


# ----------------------------------------------------------------------------- read-only, full


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path, lock: bool = True) -> None:
    """`folder` as on a read-only mount (EROFS, which holds for root too): no file can be created
    in it, an existing file cannot be opened for writing (with lock=False, except the lock)."""
    real_mkstemp, real_open = tempfile.mkstemp, os.open

    def mkstemp(*args, **kwargs):
        if Path(kwargs.get("dir") or "") == folder:
            raise OSError(errno.EROFS, "Read-only file system", str(folder))
        return real_mkstemp(*args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        if writes and Path(path).parent == folder and (lock or Path(path).suffix != ".lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("action", ["promote", "canary", "rollback", "rewrite"])
def test_a_read_only_serving_folder_is_one_sentence_and_nothing_changes(
    tmp_path, capsys, monkeypatch, action
):
    """`serve promote` on a read-only serving/ names the folder; models.config and versions.json
    are as they were (and agree); `serve status` still reads them."""
    two_versions(tmp_path)
    fake_export(tmp_path, 3)
    serve.promote(tmp_path, 2)  # stable 2, 1 kept: rollback has something to do
    before = snapshot(tmp_path)
    argv = {"promote": ["promote", "--version", "3"], "canary": ["canary", "--version", "3"]}
    read_only(monkeypatch, tmp_path / "serving")
    said = refusal(capsys, ["serve", *argv.get(action, [action]), "--run-dir", str(tmp_path)])
    assert said == (
        f"{tmp_path / 'serving'} cannot be written (Read-only file system), so nothing was "
        "changed: make it writable (e.g. mount it read-write) and run the command again."
    )
    assert snapshot(tmp_path) == before
    assert serve.status(tmp_path)["models_config"]["labels"] == {"stable": 2}


def test_a_change_that_fails_midway_puts_back_what_it_wrote(tmp_path, monkeypatch):
    """models.config is replaced, then versions.json cannot be written (a full disk): the old
    models.config is put back, so the two never disagree, and the refusal is one sentence."""
    before = two_versions(tmp_path)

    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(state, "write_json", full_disk)
    with pytest.raises(serve.ServeError) as refused:
        serve.promote(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / 'serving'} cannot be written (No space left on device), so nothing was "
        "changed: free space on its disk and run the command again."
    )
    assert snapshot(tmp_path) == before
    left = sorted(p.name for p in (tmp_path / "serving").iterdir() if p.name.startswith("."))
    assert left == [".versions.lock"]


# ----------------------------------------------------------------------------- serve-bench


@pytest.mark.parametrize("weight", ["nan", "inf", "-inf", "-1", "0", "abc", "1e309"])
def test_serve_bench_refuses_a_weight_that_is_not_a_positive_number_before_sending(
    tmp_path, capsys, monkeypatch, weight
):
    """--label stable=nan|inf|-1|abc: one sentence from the argument check; no worker starts."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_text(json.dumps({"image_shape": [8, 8, 1]}))

    def started(*args, **kwargs):
        raise AssertionError("the load test started")

    monkeypatch.setattr(bench, "run_bench", started)
    argv = ["serve-bench", "--run-dir", str(tmp_path), "--label", f"stable={weight}"]
    assert refusal(capsys, argv) == (
        f"--label 'stable={weight}' is not allowed: use LABEL or LABEL=WEIGHT with a positive, "
        "finite weight, e.g. canary=1."
    )


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), -1.0, 0.0])
def test_bench_check_refuses_a_weight_that_is_not_a_positive_finite_number(weight):
    """The API's own check (bench.check, run before any thread) holds without the CLI."""
    with pytest.raises(serve.ServeError, match="positive, finite weights"):
        bench.check(bench.BenchParams(labels={"stable": weight}))
