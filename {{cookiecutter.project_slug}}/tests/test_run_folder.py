"""A step resolves its run folder once, at its door, and hands that one value down.

Each step's entry (`run(run_dir, params)`, what its notebook, its CLI subcommand and the runner
call) is run on small inputs while a profiler counts the calls of artifacts.resolve_run_dir that
had to resolve something: a path or string, not the RunFolder the step already made.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from {{ cookiecutter.package_name }} import artifacts, data, env, export, optimize
from {{ cookiecutter.package_name }}.train import Params as TrainParams
from {{ cookiecutter.package_name }}.train import run as train_run


def resolutions(call: Callable[[], Any]) -> tuple[int, int]:
    """(calls of resolve_run_dir, of which resolutions: an argument not yet a RunFolder)."""
    code = artifacts.resolve_run_dir.__code__
    calls, resolved = [0], [0]
    folder_type = getattr(artifacts, "RunFolder", ())

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls[0] += 1
            resolved[0] += not isinstance(frame.f_locals["run_dir"], folder_type)

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return calls[0], resolved[0]


def assert_once(step: str, counted: tuple[int, int]) -> None:
    calls, resolved = counted
    assert resolved == 1, f"{step} resolved its run folder {resolved} times ({calls} calls)"


def test_environment_resolves_its_run_folder_once(tmp_path: Path) -> None:
    params = env.Params(matmul_size=32, matmul_repeats=1)
    counted = resolutions(lambda: env.run(tmp_path, params, verbose=False))
    assert_once("environment", counted)


def test_data_resolves_its_run_folder_once(tmp_path: Path) -> None:
    params = data.Params(shards=1, benchmark_seconds=1)
    counted = resolutions(lambda: data.run(tmp_path, params, verbose=False))
    assert_once("data", counted)


def test_train_resolves_its_run_folder_once(run_dir: Path) -> None:
    params = TrainParams(model="small_cnn", epochs=1, batch_size=64, width=8)
    counted = resolutions(lambda: train_run(run_dir, params, verbose=False))
    assert_once("train", counted)


def test_export_resolves_its_run_folder_once(exported_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(exported_run, run)
    params = export.Params(version=2, overwrite=False)
    counted = resolutions(lambda: export.run(run, params, verbose=False))
    assert_once("export", counted)


def test_optimize_resolves_its_run_folder_once(exported_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (the onnx extra)")
    run = tmp_path / "run"
    shutil.copytree(exported_run, run)
    params = optimize.Params(backends="onnx", batch_sizes="1", iterations=3)
    counted = resolutions(lambda: optimize.run(run, params, verbose=False))
    assert_once("optimize", counted)


def test_a_run_folder_knows_its_paths_by_the_contracts_names(tmp_path: Path) -> None:
    folder = artifacts.run_folder(tmp_path)
    assert folder == tmp_path and isinstance(folder, Path)
    assert folder.data == tmp_path / artifacts.DATA_DIR
    assert folder.meta == tmp_path / artifacts.META_FILE
    assert folder.model == tmp_path / artifacts.MODEL_FILE
    assert folder.export_version(2) == tmp_path / artifacts.EXPORT_DIR / "2"
    assert folder.optimized == tmp_path / artifacts.OPTIMIZED_DIR
    assert folder.metrics_file("train") == tmp_path / artifacts.METRICS_DIR / "train.json"
    assert folder.figures == tmp_path / artifacts.FIGURES_DIR
    assert folder.lineage == tmp_path / artifacts.LINEAGE_FILE
    assert artifacts.resolve_run_dir(folder, create=False) is folder  # never resolved again
    assert not isinstance(folder / "data", artifacts.RunFolder)  # a path inside is a plain Path


def test_a_relative_run_dir_is_resolved_once_from_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where a notebook runs
    folder = artifacts.run_folder("artifacts/run", create=True)
    assert folder == tmp_path / "artifacts" / "run" and folder.is_dir()
