"""batch_size=auto and learning_rate=auto in training, on the fake task (tests/fake_task.py), in
every bake: real probes on the CPU, an injected out-of-memory above a batch (the GPU path), reuse
on resume, and bad input refused.

The finders' decision rules on synthetic numbers are in test_find.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from types import SimpleNamespace

import fake_task
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import data, progress, train
from {{ cookiecutter.package_name }}.find import probes
from {{ cookiecutter.package_name }}.runner import plan_run
from {{ cookiecutter.package_name }}.train import Params, TrainError

OOM_ABOVE = 48  # the injected device memory holds batches up to this (the search stops at 80)
TRAIN = 1600  # training vectors: probes up to a twentieth of them (80)
pytestmark = pytest.mark.usefixtures("fake_module")


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory, fake_module) -> tuple[Path, dict]:
    """One CPU run with both finders, shared by the tests that read it."""
    run = fake_task.write_data(tmp_path_factory.mktemp("found") / "run", train=TRAIN)
    values = Params(batch_size="auto", learning_rate="auto", epochs=2, finder_seconds=30)
    printed, before = io.StringIO(), os.environ.get(progress.PROGRESS_ENV)
    os.environ[progress.PROGRESS_ENV] = "lines"  # as the runner's kernels print: whole lines
    every, progress.LINE_EVERY = progress.LINE_EVERY, 0.05
    try:
        with contextlib.redirect_stdout(printed):
            metrics = train.run(run, values, verbose=True)
    finally:
        progress.LINE_EVERY = every
        os.environ.pop(progress.PROGRESS_ENV)
        if before is not None:
            os.environ[progress.PROGRESS_ENV] = before
    PRINTED.extend(printed.getvalue().splitlines())
    return run, metrics


PRINTED: list[str] = []  # what the `found` run printed


def record(run: Path, name: str) -> dict:
    return json.loads((run / "metrics" / f"{name}.json").read_text(encoding="utf-8"))


def test_training_takes_the_found_batch_and_says_where_it_came_from(found) -> None:
    run, metrics = found
    batch = record(run, "batch_finder")
    assert metrics["global_batch_size"] == batch["batch"] == metrics["parameters"]["batch_size"]
    assert metrics["parameter_sources"]["batch_size"] == "batch-size finder"
    assert batch["device"] == "cpu" and batch["limited_by"]
    ok = [probe for probe in batch["probes"] if probe["ok"]]
    assert len(ok) >= 2 and all(probe["examples_per_sec"] > 0 for probe in ok)
    train_count = int(data.read_meta(run)["splits"]["train"]["count"])
    # An epoch keeps 20 steps at least: no probe above a twentieth of the training set.
    assert all(probe["batch"] <= train_count // 20 for probe in batch["probes"])
    assert (run / "figures" / "batch_finder.png").stat().st_size > 0


def test_the_finders_and_the_epochs_show_progress_and_their_choices_reach_the_runner(
    found,
) -> None:
    """Each probe and range-test step moves a progress task; the choices are progress lines (the
    runner forwards only those); an epoch's steps get clock lines with the time left."""
    marked = [text for text in PRINTED if text.startswith(progress.MARK)]
    assert any(text.startswith(f"{progress.MARK}Batch-size finder: ") for text in marked), PRINTED
    assert any(text.startswith(f"{progress.MARK}batch_size=auto: ") for text in marked)
    assert any(text.startswith(f"{progress.MARK}Learning-rate range test: ") for text in marked)
    assert any(text.startswith(f"{progress.MARK}learning_rate=auto: ") for text in marked)
    steps = [text for text in marked if text.startswith(f"{progress.MARK}Epoch 1/2: ")]
    assert any(" step(s), " in text for text in steps), steps


def test_the_range_test_suggests_a_rate_in_the_usual_range(found) -> None:
    run, metrics = found
    lr = record(run, "lr_finder")
    assert 1e-4 <= lr["effective_learning_rate"] <= 1e-1, lr["reason"]
    assert metrics["effective_learning_rate"] == pytest.approx(lr["effective_learning_rate"])
    assert metrics["parameter_sources"]["learning_rate"] == "range test"
    assert lr["batch_size"] == metrics["global_batch_size"]
    assert (run / "figures" / "lr_finder.png").stat().st_size > 0
    assert metrics["val_accuracy"] > 0.5  # it trains with what was found


def test_a_resumed_run_reuses_the_choices_instead_of_probing_again(found, monkeypatch) -> None:
    run, first = found

    def no_probe(*_, **__):
        raise AssertionError("probed again")

    monkeypatch.setattr(probes, "batch_probe", no_probe)
    monkeypatch.setattr(probes, "lr_step", no_probe)
    again = train.run(run, Params(batch_size="auto", learning_rate="auto", epochs=3), verbose=False)
    assert again["initial_epoch"] == 2 and again["epochs_completed"] == 3
    assert again["global_batch_size"] == first["global_batch_size"]
    assert again["parameter_sources"]["batch_size"].startswith("batch-size finder (reused")


def test_out_of_memory_above_a_batch_caps_the_choice_and_training_goes_on(
    tmp_path: Path, monkeypatch
) -> None:
    """The GPU search, with ResourceExhaustedError injected into every step above OOM_ABOVE."""
    run_dir = fake_task.write_data(tmp_path / "run", train=TRAIN)
    real_init = probes.Trainer.__init__

    def init(self, folder, meta, params, strategy, batch, **kwargs):
        real_init(self, folder, meta, params, strategy, batch, **kwargs)
        self.batch = batch

    def run(self, steps):
        if self.batch > OOM_ABOVE:
            raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
        return real_run(self, steps)

    real_run = probes.Trainer.run
    monkeypatch.setattr(probes.Trainer, "__init__", init)
    monkeypatch.setattr(probes.Trainer, "run", run)
    monkeypatch.setattr(probes, "device_kind", lambda: "gpu")
    monkeypatch.setattr(probes, "device_bytes", lambda: 8 * 2**30)  # aims the search (batch.py)
    monkeypatch.setattr(tf.config.experimental, "reset_memory_stats", lambda device: None)
    metrics = train.run(run_dir, Params(batch_size="auto", epochs=1), verbose=False)
    found = record(run_dir, "batch_finder")
    assert found["limited_by"] == "memory" and found["settings"]["device_bytes"] == 8 * 2**30
    assert 1 <= metrics["global_batch_size"] <= OOM_ABOVE
    assert any(not probe["ok"] and probe["note"] for probe in found["probes"])
    assert max(p["batch"] for p in found["probes"] if p["ok"]) <= OOM_ABOVE
    assert metrics["epochs_completed"] == 1 and (run_dir / "model.keras").is_file()


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"batch_size": "big"}, "batch_size='big'"),
        ({"learning_rate": "fast"}, "learning_rate='fast'"),
        ({"batch_size": "auto", "finder_seconds": 0}, "finder_seconds=0"),
    ],
)
def test_bad_finder_values_are_refused_in_one_sentence(values: dict, named: str) -> None:
    with pytest.raises(TrainError, match=named) as caught:
        train.check("unused", Params(**values), inputs=False)
    assert_one_sentence(str(caught.value))


def test_auto_under_multi_worker_is_refused_before_anything_starts(monkeypatch) -> None:
    cluster = {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))
    with pytest.raises(
        TrainError, match="batch_size=auto is not allowed under multi_worker"
    ) as caught:
        train.check("unused", Params(batch_size="auto"), inputs=False)
    assert_one_sentence(str(caught.value))


def test_auto_needs_an_example_per_replica(tmp_path: Path) -> None:
    run = fake_task.write_data(tmp_path / "run", train=4)
    train_count = int(data.read_meta(run)["splits"]["train"]["count"])
    with pytest.raises(TrainError, match="batch_size=auto needs a training ") as caught:
        train.check(run, Params(batch_size="auto", logical_cpus=train_count + 1))
    assert_one_sentence(str(caught.value))
    assert str(train_count) in str(caught.value)


def test_the_runner_gives_auto_to_the_steps_that_take_it() -> None:
    plan = plan_run("smoke", overrides={"batch_size": "auto"})
    assert plan.parameters["03_train"]["batch_size"] == "auto"
    kept = {  # a whole number in every other step that takes one: the profile's
        name: values["batch_size"]
        for name, values in plan.parameters.items()
        if name != "03_train" and "batch_size" in values
    }
    assert kept and all(type(value) is int for value in kept.values()), kept
    assert any("batch_size='auto' goes to 03_train" in note for note in plan.notes)


class RecordingTrainer:
    """find.probes.Trainer as a probe uses it: records what it was built with, raises `error`."""

    built: list[tuple[int, int]] = []
    error: Exception | None = None

    def __init__(self, folder, meta, params, strategy, batch, **kwargs) -> None:
        RecordingTrainer.built.append((strategy.num_replicas_in_sync, batch))

    def run(self, steps: int):
        if RecordingTrainer.error is not None:
            raise RecordingTrainer.error
        return None


@pytest.fixture
def recording_trainer(monkeypatch) -> type[RecordingTrainer]:
    monkeypatch.setattr(probes, "Trainer", RecordingTrainer)
    monkeypatch.setattr(RecordingTrainer, "built", [])
    monkeypatch.setattr(RecordingTrainer, "error", None)
    return RecordingTrainer


@pytest.mark.parametrize(
    "error",
    [
        tf.errors.InternalError(None, None, "Dst tensor is not initialized."),
        tf.errors.UnknownError(
            None,
            None,
            "Failed to get convolution algorithm. This is probably because cuDNN failed to "
            "initialize, so try looking to see if a warning log message was printed above.",
        ),
        tf.errors.InternalError(
            None, None, "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3.06GiB."
        ),
        # cuBLAS cannot allocate its handle or workspace when the allocator took the memory:
        tf.errors.InternalError(
            None, None, "failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED"
        ),
        tf.errors.InternalError(None, None, "Blas xGEMM launch failed: CUBLAS_STATUS_ALLOC_FAILED"),
        tf.errors.UnknownError(None, None, "Failed to create cuBLAS handle; it is not usable."),
    ],
)
def test_every_kind_of_out_of_memory_is_an_answer_not_a_crash(recording_trainer, error) -> None:
    """The host-to-device copy and cuDNN/XLA autotuning run out as Internal/UnknownError."""
    recording_trainer.error = error
    probe = probes.batch_probe(
        Path("."), {}, None, tf.distribute.get_strategy(), loss_scaling=False, jit=False
    )(64)
    assert not probe.ok and probe.batch == 64
    assert probe.note.startswith("out of memory (") and type(error).__name__ in probe.note


def test_an_internal_error_that_is_not_memory_propagates(recording_trainer) -> None:
    recording_trainer.error = tf.errors.InternalError(None, None, "a bug in a kernel")
    probe = probes.batch_probe(
        Path("."), {}, None, tf.distribute.get_strategy(), loss_scaling=False, jit=False
    )
    with pytest.raises(tf.errors.InternalError):
        probe(64)


def test_mirrored_gpus_are_probed_one_replica_at_the_per_replica_batch(
    recording_trainer, monkeypatch
) -> None:
    """A replica out of memory while the others wait in NCCL's all-reduce would hang the probe:
    one replica is probed alone (no collective) at batch / replicas, its rate x replicas."""
    devices = tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(4))
    mirrored = SimpleNamespace(
        num_replicas_in_sync=4, extended=SimpleNamespace(worker_devices=devices)
    )
    monkeypatch.setattr(probes, "device_kind", lambda: "gpu")
    probe = probes.batch_probe(Path("."), {}, None, mirrored, loss_scaling=False, jit=False)(256)
    assert recording_trainer.built == [(1, 64)]
    assert probe.ok and probe.batch == 256 and "one replica of 4" in probe.note
