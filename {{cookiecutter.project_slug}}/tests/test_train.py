"""Training on the image task: the digits reach the accuracy bar, model.keras takes raw images,
and check refuses the image task's bad values.

What training does whatever the task (the run folder it writes, resuming and refusing to resume,
the lineage, damaged checkpoints, the command line's exit codes, two replicas, two worker processes
and a SIGKILL mid-run) is tested on the fake task in test_train_shared.py, in every bake.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.tasks.image import data_step
from {{ cookiecutter.package_name }}.train import Params, TrainError
from {{ cookiecutter.package_name }}.train.state import weights_digest


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, digits_data: Path) -> tuple[Path, dict]:
    """One in-process run with the default parameters, shared by the tests that read it."""
    run = tmp_path_factory.mktemp("default") / "run"
    shutil.copytree(digits_data, run / "data")
    return run, train_here(run)


def train_here(run: Path, **values: Any) -> dict[str, Any]:
    """train.run in this process, quietly."""
    return train.run(run, Params(**values), verbose=False)


# --- parameters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"model": "resnet5"}, "model='resnet5'"),
        ({"strategy": "parallel"}, "strategy='parallel'"),
        ({"precision": "fp16"}, "precision='fp16'"),
        ({"jit_compile": "maybe"}, "jit_compile='maybe'"),
        ({"epochs": 0}, "epochs=0"),
        ({"epochs": 999999999999}, "epochs=999999999999 is not allowed: use a whole number from"),
        ({"batch_size": -5}, "batch_size=-5"),
        ({"learning_rate": 0}, "learning_rate=0"),
        ({"learning_rate": -0.1}, "learning_rate=-0.1"),
        ({"width": 12}, "width=12"),
        ({"model": "MobileNetV2", "dropout": 0.1}, "dropout=0.1"),
        ({"logical_cpus": -1}, "logical_cpus=-1"),
        ({"patience": -1}, "patience=-1"),
        ({"seed": "x"}, "seed='x'"),
        ({"strategy": "multi_worker"}, "TF_CONFIG"),
    ],
)
def test_check_without_inputs_refuses_a_bad_value_in_one_sentence(
    params: dict, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check(inputs=False), what the runner asks first, names the bad value; it writes nothing."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    folder = tmp_path / "not-yet"
    with pytest.raises(TrainError) as error:
        train.check(folder, Params(**params), inputs=False)
    assert named in str(error.value)
    assert_one_sentence(str(error.value))
    assert not folder.exists()


# --- one process, in this one ---------------------------------------------------------------


def test_digits_default_parameters_reach_90_percent(trained: tuple[Path, dict]) -> None:
    """The default parameters train the digits to at least 90 % validation accuracy."""
    _, metrics = trained
    assert metrics["val_accuracy"] >= 0.9, metrics["history"]
    assert metrics["epochs_completed"] == 5 and metrics["initial_epoch"] == 0


def test_model_keras_is_the_trained_model_and_takes_raw_images(trained: tuple[Path, dict]) -> None:
    """model.keras reloads with the trained weights and reproduces the validation accuracy."""
    run, metrics = trained
    model = keras.saving.load_model(run / "model.keras")
    assert weights_digest(model.weights) == metrics["weights_sha256"]
    correct = total = 0
    for images, labels in data_step.make_dataset(run, "validation", 128):
        assert images.dtype == "uint8"
        predicted = np.argmax(model(images, training=False), axis=-1)
        correct += int(np.sum(predicted == labels.numpy()))
        total += len(predicted)
    assert correct / total == pytest.approx(metrics["val_accuracy"], abs=1e-6)
