"""Training's values and the precision of its steps, task-free: the checks of the parameters,
the strategy, precision and XLA each device gets, TF_CONFIG's roles, early stopping and the
learning-rate rule, and the loss scaling of mixed_float16, trained on the fake task
(tests/fake_task.py) so every bake runs them. tests/test_shared_steps.py trains the whole chain."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import fake_task
import keras
import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import train
from {{ cookiecutter.package_name }}.artifacts import MissingInputError
from {{ cookiecutter.package_name }}.train import (
    PRECISIONS,
    STRATEGIES,
    Params,
    TrainError,
    check_values,
    read_tf_config,
    resolve_jit,
    resolve_precision,
    resolve_strategy,
    resume,
)
from {{ cookiecutter.package_name }}.train.epoch import early_stopping
from {{ cookiecutter.package_name }}.train.params import parse_jit

TF_CONFIG_TWO = json.dumps(
    {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}}
)


def train_here(run: Path, **values: Any) -> dict[str, Any]:
    """train.run of the fake task's one model in this process, quietly."""
    return train.run(run, Params(**{"model": fake_task.MODEL, **values}), verbose=False)


def test_check_without_inputs_needs_no_run_folder(tmp_path: Path) -> None:
    """Good values pass check(inputs=False) before 01_data made anything; inputs=True names it."""
    folder = tmp_path / "not-yet"
    train.check(folder, Params(epochs=1, batch_size=32), inputs=False)
    assert not folder.exists()
    with pytest.raises(MissingInputError, match="01_data") as error:
        train.check(folder, Params())
    assert_one_sentence(str(error.value))


def test_batch_not_divisible_by_replicas_names_a_fitting_batch() -> None:
    """A global batch that does not split evenly over the replicas is refused with a fix."""
    with pytest.raises(TrainError, match=r"2 replicas.*multiple of 2, e\.g\. 64") as error:
        check_values(Params(batch_size=63), replicas=2)
    assert_one_sentence(str(error.value))
    assert check_values(Params(batch_size=64), replicas=2).replicas == 2


def test_jit_compile_takes_auto_true_false_in_any_case_or_a_bool() -> None:
    """jit_compile takes auto/true/false in any case or a bool; the defaults pass."""
    assert parse_jit("TRUE") is True and parse_jit(False) is False and parse_jit("auto") == "auto"
    check_values(Params())
    assert STRATEGIES == ("auto", "one_device", "mirrored", "multi_worker")
    assert PRECISIONS == ("auto", "mixed_float16", "mixed_bfloat16", "float32")


def test_auto_strategy_follows_the_devices_and_tf_config() -> None:
    """auto: MultiWorker for a cluster, Mirrored for GPUs or logical CPUs, else one device."""
    two_workers = read_tf_config(TF_CONFIG_TWO)
    assert resolve_strategy("auto", cluster=two_workers) == "multi_worker"
    assert resolve_strategy("auto", gpus=2) == "mirrored"
    assert resolve_strategy("auto", gpus=1) == "one_device"
    assert resolve_strategy("auto", gpus=0) == "default"
    assert resolve_strategy("auto", logical_cpus=2) == "mirrored"
    assert resolve_strategy("auto", logical_cpus=2, gpus=1) == "one_device"
    assert resolve_strategy("one_device", gpus=4) == "one_device"


def test_every_task_has_its_own_metrics_port_offset_and_label() -> None:
    """Workers on one host serve metrics on metrics_port + rank: the chief 0, then the workers."""
    two = read_tf_config(TF_CONFIG_TWO)  # worker 1 of two workers, no chief named
    assert (two.rank, two.task) == (1, "worker/1")
    assert read_tf_config(TF_CONFIG_TWO.replace('"index": 1', '"index": 0')).rank == 0
    cluster = {"chief": ["h:1"], "worker": ["h:2", "h:3"]}
    ranks = {
        (kind, index): read_tf_config(
            json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})
        ).rank
        for kind, index in (("chief", 0), ("worker", 0), ("worker", 1))
    }
    assert ranks == {("chief", 0): 0, ("worker", 0): 1, ("worker", 1): 2}


def test_tf_config_chief_is_worker_0_unless_a_chief_is_named() -> None:
    """The chief writes the run folder: the chief task, or worker 0 when there is none."""
    assert not read_tf_config(TF_CONFIG_TWO).is_chief
    assert read_tf_config(TF_CONFIG_TWO.replace('"index": 1', '"index": 0')).is_chief
    with_chief = {
        "cluster": {"chief": ["h:1"], "worker": ["h:2"]},
        "task": {"type": "worker", "index": 0},
    }
    cluster = read_tf_config(json.dumps(with_chief))
    assert cluster.workers == 2 and not cluster.is_chief
    for bad in (
        "{not json",
        '{"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}}',
    ):
        with pytest.raises(TrainError, match="TF_CONFIG") as error:
            read_tf_config(bad)
        assert_one_sentence(str(error.value))


def test_auto_precision_and_xla_follow_the_gpus() -> None:
    """auto: mixed_float16 and XLA on GPUs with float16 Tensor Cores, float32 without XLA on CPU."""
    assert resolve_precision("auto", []) == "float32"
    assert resolve_precision("auto", [{"compute_capability": "7.0"}]) == "mixed_float16"
    assert resolve_precision("auto", ["8.6", "6.1"]) == "float32"  # the weakest GPU decides
    assert resolve_precision("mixed_bfloat16", []) == "mixed_bfloat16"
    assert resolve_jit("auto", []) is False
    assert resolve_jit("auto", [{"compute_capability": "8.0"}]) is True
    assert resolve_jit("false", [{"compute_capability": "8.0"}]) is False


def test_early_stopping_counts_epochs_without_a_lower_val_loss() -> None:
    """patience epochs without a new best val_loss stop training; 0 never stops."""
    history = [{"epoch": i + 1, "val_loss": loss} for i, loss in enumerate([1.0, 0.5, 0.6, 0.7])]
    assert early_stopping(history, 2) == (True, history[1])
    assert early_stopping(history, 3)[0] is False
    assert early_stopping(history, 0)[0] is False


def test_an_auto_batch_found_anew_is_named_alone_with_what_changed() -> None:
    """Only `auto` values differ: the batch is named with the finder's changed settings; the
    learning rate, which the range test finds at that batch, follows it and is not named."""
    message = resume.mismatch(
        Path("/run/checkpoints"),
        {"batch_size": 64, "learning_rate": 0.005},
        {"batch_size": "auto", "learning_rate": "auto"},
        ["batch_size", "learning_rate"],
        {"batch_size": "to be found anew: now strategy='mirrored'", "learning_rate": "given"},
    )
    assert "made with batch_size=64, not batch_size='auto' (batch_size to be found anew" in message
    assert "learning_rate" not in message
    assert_one_sentence(message)


def test_learning_rate_scales_linearly_with_the_global_batch() -> None:
    """Batch 64 is the reference: 128 doubles the rate, 32 halves it."""
    assert train.effective_learning_rate(1e-3, 64) == pytest.approx(1e-3)
    assert train.effective_learning_rate(1e-3, 128) == pytest.approx(2e-3)
    assert train.effective_learning_rate(1e-3, 32) == pytest.approx(5e-4)


@pytest.mark.parametrize("precision", ["mixed_float16", "mixed_bfloat16", "float32"])
def test_loss_scale_optimizer_under_mixed_float16_only(fake_run: Path, precision: str) -> None:
    """mixed_float16 trains with a LossScaleOptimizer and float32 variables; others without."""
    before = keras.mixed_precision.dtype_policy().name
    metrics = train_here(
        fake_run,
        epochs=1,
        precision=precision,
        strategy="one_device",
        jit_compile=True,
        batch_size=32,
    )
    assert metrics["strategy"] == "OneDeviceStrategy" and metrics["jit_compile"] is True
    # The linear rule: half the reference batch of 64, half the learning rate.
    assert metrics["global_batch_size"] == 32
    assert metrics["effective_learning_rate"] == pytest.approx(5e-4)
    compute = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}.get(precision, "float32")
    assert metrics["precision"] == precision and metrics["compute_dtype"] == compute
    assert metrics["variable_dtype"] == "float32"
    scaled = precision == "mixed_float16"
    assert metrics["loss_scaling"] is scaled
    assert metrics["optimizer"] == ("LossScaleOptimizer" if scaled else "Adam")
    assert ("loss_scale" in metrics["history"][0]) is scaled
    assert np.isfinite(metrics["history"][0]["loss"])
    assert keras.mixed_precision.dtype_policy().name == before  # the global policy is restored


def test_overflowing_loss_scale_is_halved_and_training_goes_on(
    fake_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loss scale so large that float16 gradients overflow is lowered step by step."""
    scale = 2.0**40
    monkeypatch.setattr(
        keras.optimizers,
        "LossScaleOptimizer",
        functools.partial(keras.optimizers.LossScaleOptimizer, initial_scale=scale),
    )
    metrics = train_here(
        fake_run, epochs=2, batch_size=16, precision="mixed_float16", jit_compile=True
    )
    scales = [record["loss_scale"] for record in metrics["history"]]
    assert scales[-1] < scales[0] < scale, scales
    assert all(np.isfinite(record["loss"]) for record in metrics["history"])
    saved = keras.saving.load_model(fake_run / "model.keras")
    assert all(np.all(np.isfinite(keras.ops.convert_to_numpy(w))) for w in saved.weights)
