"""The shared steps on the fake task (tests/fake_task.py): train, export, optimize, the run folder
and the figures, in every bake whatever its task, in seconds. A real task's own tests check its
data and model; these check the machinery every task goes through: one and two replicas,
resuming, the SavedModel and its parity, ONNX, lineage and figures (tests/test_train_values.py
trains it under each precision)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import fake_task
import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_once, assert_one_sentence, resolutions

from {{ cookiecutter.package_name }} import artifacts, env, export, lineage, optimize, train
from {{ cookiecutter.package_name }}.artifacts import StepError

VALUES = {"model": fake_task.MODEL, "batch_size": 16, "learning_rate": 0.05, "patience": 0}


def fit(folder: Path, **values) -> dict:
    return train.run(folder, train.Params(**{**VALUES, **values}), verbose=False)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory):
    """data → train (float32, one replica) → export → optimize (ONNX, fp32) on the fake task:
    (run folder, the three steps' metrics). The fake task is the task for the module's tests."""
    with pytest.MonkeyPatch.context() as patch:
        fake_task.install(patch)  # undone at the module's end
        folder = fake_task.write_data(tmp_path_factory.mktemp("fake-chain") / "run")
        trained = fit(folder, epochs=4, precision="float32")
        exported = export.run(folder, export.Params(version=1), verbose=False)
        optimized = optimize.run(
            folder,
            optimize.Params(backends="onnx", precisions="fp32", batch_sizes="1,8", iterations=5),
            verbose=False,
        )
        yield folder, trained, exported, optimized


def test_training_learns_and_writes_the_model_metrics_lineage_and_figures(chain) -> None:
    folder, trained, _, _ = chain
    assert trained["replicas"] == 1 and trained["compute_dtype"] == "float32"
    assert trained["epochs_completed"] == 4 and len(trained["history"]) == 4
    assert trained["val_accuracy"] > 0.8  # the classes are far apart: chance is 1/3
    assert trained["test_accuracy"] > 0.8 and trained["test_examples"] == 48
    assert (folder / "model.keras").is_file()
    assert json.loads((folder / "metrics" / "train.json").read_text())["epochs_completed"] == 4
    made = lineage.made_from(folder, "model")
    assert made == {"data": lineage.fingerprint(folder, "data")}
    assert "figures/train_curves.png" in trained["figures"]
    assert (folder / "figures" / "train_curves.png").stat().st_size > 1000


def test_the_export_answers_as_the_model_after_a_reload(chain) -> None:
    folder, _, exported, _ = chain
    assert exported["signature"]["inputs"] == {
        fake_task.INPUT: {"dtype": "float32", "shape": [None, fake_task.FEATURES]}
    }
    assert exported["parity_ok"] and exported["top1_agreement"] == 1.0
    assert exported["served_pid"] != os.getpid()  # reloaded in a fresh process
    made = lineage.made_from(folder, "export/1")
    assert made["model"] == lineage.fingerprint(folder, "model")
    served = tf.saved_model.load(exported["export_dir"]).signatures["serving_default"]
    vectors, _ = fake_task.examples(folder, "test", 5)
    answer = served(**{fake_task.INPUT: tf.constant(vectors)})
    model = keras.saving.load_model(folder / "model.keras")
    np.testing.assert_allclose(answer["probabilities"], model(vectors), atol=1e-5)
    assert [name.decode() for name in answer["class_names"].numpy()] == [
        fake_task.CLASSES[i] for i in answer["class_ids"].numpy()
    ]
    assert "figures/export_confusion.png" in exported["figures"]


def test_onnx_keeps_the_answers_and_is_timed(chain) -> None:
    _, _, _, optimized = chain
    (entry,) = [e for e in optimized["backends"] if e["precision"] == "fp32"]
    assert entry["status"] == "ran" and entry["top1_agreement"] >= 0.99
    assert set(entry["throughput"]) == {"1", "8"} and min(entry["throughput"].values()) > 0
    assert any(name.startswith("figures/optimize_") for name in optimized["figures"])


def test_a_model_trained_on_other_data_is_refused_by_export(chain, tmp_path: Path) -> None:
    """The run folder's lineage: data written again after training makes model.keras stale,
    and export refuses it in one sentence that names the step to re-run."""
    folder = tmp_path / "run"
    shutil.copytree(chain[0], folder)
    fake_task.write_data(folder, seed=1, train=80)
    with pytest.raises(StepError) as refused:
        export.check(folder, export.Params(version=2))
    assert "03_train" in str(refused.value)
    assert_one_sentence(str(refused.value))


def test_a_second_run_resumes_after_the_last_epoch(chain, tmp_path: Path) -> None:
    folder = fake_task.write_data(tmp_path / "run")
    first = fit(folder, epochs=1, precision="float32")
    assert first["initial_epoch"] == 0 and first["epochs_run"] == 1
    second = fit(folder, epochs=3, precision="float32")
    assert second["initial_epoch"] == 1 and second["epochs_run"] == 2
    assert second["epochs_completed"] == 3 and second["restarted_because"] is None


# Two replicas: MirroredStrategy over two logical CPUs, in a fresh process (logical devices must
# be set before TensorFlow starts), the fake task installed there first.
SCRIPT = """
import fake_task
fake_task.install()
from {{ cookiecutter.package_name }} import train
values = dict(model="dense", batch_size=16, learning_rate=0.05, patience=0, epochs=2)
metrics = train.run(sys.argv[1], train.Params(**values, logical_cpus=2, strategy="mirrored",
                                              precision="float32"), verbose=False)
keys = ("replicas", "strategy", "per_replica_batch_size", "val_accuracy", "epochs_completed")
print(json.dumps({key: metrics[key] for key in keys}))
"""


def test_two_replicas_train_over_two_logical_cpus(
    tmp_path: Path, two_replicas: Callable[..., dict]
) -> None:
    folder = fake_task.write_data(tmp_path / "run")
    result = two_replicas(SCRIPT, folder)
    assert result["replicas"] == 2 and result["per_replica_batch_size"] == 8
    assert result["epochs_completed"] == 2 and result["val_accuracy"] > 0.6
    assert (folder / "model.keras").is_file()


# Each step resolves its run folder once, at its door (its entry, as its notebook, its CLI
# subcommand and the runner call it), and hands that one value down: a profiler counts the calls
# of artifacts.resolve_run_dir that had to resolve a path, not the RunFolder the step made.
def test_environment_resolves_its_run_folder_once(tmp_path: Path) -> None:
    params = env.Params(matmul_size=32, matmul_repeats=1)
    counted = resolutions(lambda: env.run(tmp_path, params, verbose=False))
    assert_once("environment", counted)


def test_train_resolves_its_run_folder_once(chain, tmp_path: Path) -> None:
    folder = fake_task.write_data(tmp_path / "run")
    params = train.Params(**{**VALUES, "epochs": 1})
    counted = resolutions(lambda: train.run(folder, params, verbose=False))
    assert_once("train", counted)


def test_export_resolves_its_run_folder_once(chain, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(chain[0], run)
    params = export.Params(version=2, overwrite=False)
    counted = resolutions(lambda: export.run(run, params, verbose=False))
    assert_once("export", counted)


def test_optimize_resolves_its_run_folder_once(chain, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(chain[0], run)
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
