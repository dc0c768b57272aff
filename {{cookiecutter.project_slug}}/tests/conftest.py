"""Shared test setup: one suite for CPU machines and GPU machines.

On a GPU machine memory growth is switched on before any test runs a TensorFlow op, so the suite
takes GPU memory as it needs it. Tests marked `gpu` are skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from fake_task import (  # noqa: F401 (fixtures: the fake task)
    fake_exported,
    fake_module,
    fake_run,
    fake_task,
)

from {{ cookiecutter.package_name }} import env, export, lineage, seam, steps
from {{ cookiecutter.package_name }}.artifacts import MODEL_FILE

# The head of every two-replica script: MirroredStrategy over two logical CPUs, which must be set
# before TensorFlow starts its devices, hence a fresh process; the tests folder is importable there
# (fake_task, tables) and `strategy` is defined for the script's body.
TWO_REPLICAS = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from {{ cookiecutter.package_name }}.train.devices import configure_devices, make_strategy
configure_devices(logical_cpus=2)
strategy = make_strategy("mirrored", logical_cpus=2)
"""

OPTIMIZE_SHAPE = (8, 8, 1)
OPTIMIZE_CLASSES = 3


def pytest_configure(config: pytest.Config) -> None:
    """Memory growth can only be set before the GPUs are initialized: do it first."""
    env.configure_memory_growth()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked `gpu` when TensorFlow sees no GPU."""
    if tf.config.list_physical_devices("GPU"):
        return
    skip = pytest.mark.skip(reason="no GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


# A test of the image task's shapes in a file every bake holds: skipped, saying why, in a bake of
# another task (whose own tests/test_<task>_*.py cover the same step).
image_only = pytest.mark.skipif(
    seam.folder() != "image",
    reason=f"it sends image batches; this project is baked for {seam.name()}, whose own "
    f"tests/test_{seam.folder()}_*.py cover the same step",
)


def image_task_only() -> None:
    """These fixtures are image runs (digits, synthetic images): a test that needs one skips, with
    this sentence, in a project baked for another task, whose own tests cover its steps."""
    if seam.folder() != "image":
        pytest.skip(f"an image-task fixture; this project is baked for {seam.name()}")


def data_writer():
    """The image task's step-1 half (its data_step module: records.prepare and its options)."""
    return importlib.import_module(f"{steps.__package__}.tasks.{seam.folder()}.data_step")


@pytest.fixture(scope="session")
def digits_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The digits written once by the data step; each test copies them into its own run folder."""
    image_task_only()
    source = tmp_path_factory.mktemp("digits")
    data_writer().prepare(source, "digits")  # the image task's data step
    return source / "data"


@pytest.fixture
def run_dir(tmp_path: Path, digits_data: Path) -> Path:
    """A run folder holding the digits' data/, as 01_data leaves it."""
    run = tmp_path / "run"
    shutil.copytree(digits_data, run / "data")
    return run


@pytest.fixture(scope="session")
def exported_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as 04_export leaves it: data/, model.keras and export/1/, with their lineage.

    A small CNN fitted for a few epochs on a tiny synthetic set, so that its probabilities are
    confident and int8 calibration has real activation ranges to measure. Shared by the session:
    a test that changes model.keras or the export works on a copy (shutil.copytree).
    """
    image_task_only()
    folder = tmp_path_factory.mktemp("exported-run")
    data_writer().prepare(
        folder,
        "synthetic",
        shards=1,
        synthetic_shape=OPTIMIZE_SHAPE,
        synthetic_classes=OPTIMIZE_CLASSES,
        synthetic_count=120,
    )
    from {{ cookiecutter.package_name }} import tasks  # the image task's (digits, synthetic)

    keras.utils.set_random_seed(0)
    task = tasks.current()
    meta = {"image_shape": list(OPTIMIZE_SHAPE), "num_classes": OPTIMIZE_CLASSES}
    model = task.build_model(task.models.default, meta, width=8)
    batches = list(task.build_inputs(folder, "train", 32, training=False))
    images = np.concatenate([batch.numpy() for batch, _ in batches])
    labels = np.concatenate([label.numpy() for _, label in batches])
    model.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    model.fit(images, labels, batch_size=32, epochs=10, verbose=0)
    model.save(folder / MODEL_FILE)
    lineage.record(folder, "model", "train", {"data": lineage.fingerprint(folder, "data")})
    export.export_savedmodel(folder, version=1)
    return folder


@pytest.fixture(scope="session")
def two_replicas() -> Callable[..., dict]:
    """Runs a script's body on two replicas (TWO_REPLICAS heads it) in a fresh process on the CPU,
    with `args` as sys.argv[1:], and returns the JSON its last printed line holds; a failing run
    fails the test with the end of its stderr."""

    def run(body: str, *args: object, timeout: int = 300) -> dict:
        environment = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        environment.update(CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
        script = TWO_REPLICAS.format(tests=str(Path(__file__).parent)) + body
        done = subprocess.run(
            [sys.executable, "-c", script, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
