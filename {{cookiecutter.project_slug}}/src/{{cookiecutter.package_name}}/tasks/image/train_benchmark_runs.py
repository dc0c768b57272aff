"""The training benchmark's three timed runs, and the turns they take.

A ratio means something only when both sides did the same work, so the runs sit side by side
here: the package's loop (train.run, which times itself and leaves the first epoch out), a bare
model.fit with the same model, data, batch, strategy, precision policy and XLA setting (timed by
an epoch timer that leaves the first epoch out the same way), the package's loop fed from memory
(train/benchmark_memory.py), and the package's loop watched (Prometheus endpoint on, live reports,
the input-wait timer) and unwatched (none of them). They take turns so background load spoils one
round, not a ratio.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import keras
import numpy as np

from ... import env
from ...artifacts import DATA_DIR
from ...train import devices, entry
from ...train.benchmark_memory import fed_from_memory
from ...train.epoch import input_wait_timer
from ...train.params import Params, effective_learning_rate
from .. import current as task

# The three runs, in the order they take turns: key, trainer, what feeds it.
RUNS = (
    ("package", "train.train (the package's loop)", "the task's build_inputs"),
    ("fit", "bare model.fit", "the task's build_inputs"),
    ("memory", "train.train (the package's loop)", "batches built in memory"),
    ("watched", "train.train, metrics endpoint and input-wait timer on", "the task's build_inputs"),
    (
        "unwatched",
        "train.train, metrics endpoint and input-wait timer off",
        "the task's build_inputs",
    ),
)
# What each run reports besides its rate; the summary checks they are alike across runs.
SETUP_KEYS = ("strategy", "replicas", "precision", "jit_compile")


def take_turns(
    scratch: Path,
    source: Path,
    params: Params,
    meta: dict[str, Any],
    rounds: int,
    say: Callable[[str], None],
) -> dict[str, list[dict[str, Any]]]:
    """Each run's outcome per round: each round starts with the next run, so none always runs
    first (or last). Every run trains in its own scratch run folder, whose data/ is source's."""
    memory = load_split(source, "train")
    measure: dict[str, Callable[[Path], dict[str, Any]]] = {
        "package": lambda run: train_rate(run, params),
        "fit": lambda run: fit_rate(run, meta, params),
        "memory": lambda run: train_rate(run, params, memory=memory),
        "watched": lambda run: train_rate(run, replace(params, metrics_port=free_port())),
        "unwatched": lambda run: unwatched_rate(run, params),
    }
    results: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _ in RUNS}
    for round_number in range(1, rounds + 1):
        shift = (round_number - 1) % len(RUNS)
        for key, trainer, fed_by in RUNS[shift:] + RUNS[:shift]:
            run = _scratch_run(scratch / f"{key}-{round_number}", source)
            outcome = measure[key](run)
            results[key].append(outcome)
            say(
                f"round {round_number}/{rounds}: {trainer}, fed by {fed_by}: "
                f"{outcome['examples_per_sec']:,.0f} examples/s"
            )
            shutil.rmtree(run, ignore_errors=True)
    return results


def train_rate(
    run: Path, params: Params, memory: tuple[np.ndarray, np.ndarray] | None = None
) -> dict[str, Any]:
    """train.run in a scratch run folder; its own rate leaves the first epoch out already."""
    feed = fed_from_memory(*memory) if memory is not None else contextlib.nullcontext()
    with feed:
        metrics = entry.run(run, params, verbose=False)
    return {
        "examples_per_sec": metrics["examples_per_sec"],
        "val_accuracy": metrics["val_accuracy"],
        **{key: metrics[key] for key in SETUP_KEYS},
    }


def finder_run(scratch: Path, source: Path, params: Params) -> dict[str, Any]:
    """Train once with batch_size and learning_rate found (auto), the same epochs and seed."""
    run = _scratch_run(scratch / "finders", source)
    found = replace(params, batch_size="auto", learning_rate="auto", finder_seconds=30.0)
    metrics = entry.run(run, found, verbose=False)
    shutil.rmtree(run, ignore_errors=True)
    return {
        "batch_size": metrics["global_batch_size"],
        "learning_rate": metrics["parameters"]["learning_rate"],
        "effective_learning_rate": metrics["effective_learning_rate"],
        "val_accuracy": metrics["val_accuracy"],
    }


def unwatched_rate(run: Path, params: Params) -> dict[str, Any]:
    """train.run with no endpoint and the step function's input-wait timer left out."""
    with input_wait_timer(False):
        return train_rate(run, replace(params, metrics_port=0))


def free_port() -> int:
    """A port nothing listens on now, for the watched run's endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fit_rate(run: Path, meta: dict[str, Any], params: Params) -> dict[str, Any]:
    """What a user would write by hand: build, compile, fit; same strategy, policy and XLA."""
    gpus = env.list_gpus()
    policy = devices.resolve_precision(params.precision, gpus)
    jit = devices.resolve_jit(params.jit_compile, gpus)
    distribution = devices.make_strategy(params.strategy, params.logical_cpus)
    batch_size = params.batch_size
    keras.utils.set_random_seed(params.seed)
    with devices.dtype_policy(policy), distribution.scope():
        net = task().build_model(params.model, meta)
        net.compile(
            optimizer=keras.optimizers.Adam(
                effective_learning_rate(params.learning_rate, batch_size)
            ),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=jit,
        )
        # The same input as train's: the repeated pipeline, the same steps per epoch.
        steps = int(meta["splits"]["train"]["count"]) // batch_size
        dataset = task().build_inputs(
            run, "train", batch_size, seed=params.seed, repeat=True, drop_remainder=True
        )
        timer = _EpochTimer()
        net.fit(
            dataset,
            epochs=params.epochs,
            steps_per_epoch=steps,
            shuffle=False,  # the pipeline shuffles; fit ignores the flag for a dataset, and warns
            callbacks=[timer],
            verbose=0,
        )
        # Steps given, so Keras does not warn when the validation set (of unknown length) ends.
        val_steps = math.ceil(int(meta["splits"]["validation"]["count"]) / batch_size)
        validation = task().build_inputs(run, "validation", batch_size)
        _, val_accuracy = net.evaluate(validation, steps=val_steps, verbose=0)
    return {
        "examples_per_sec": steps * batch_size * (len(timer.seconds) - 1) / sum(timer.seconds[1:]),
        "val_accuracy": float(val_accuracy),
        "strategy": devices.strategy_name(distribution),
        "replicas": distribution.num_replicas_in_sync,
        "precision": policy,
        "jit_compile": jit,
    }


class _EpochTimer(keras.callbacks.Callback):
    """Seconds per epoch of fit, from its own epoch boundaries."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: list[float] = []
        self._started = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.seconds.append(time.perf_counter() - self._started)


def _scratch_run(run: Path, source: Path) -> Path:
    """A fresh run folder whose data/ is the source's (a link; a copy where links fail)."""
    run.mkdir(parents=True)
    try:
        (run / DATA_DIR).symlink_to(source / DATA_DIR, target_is_directory=True)
    except OSError:
        shutil.copytree(source / DATA_DIR, run / DATA_DIR)
    return run


def load_split(run_dir: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's examples as numpy arrays, read once through the pipeline, in file order."""
    dataset = task().build_inputs(run_dir, split, 1024, training=False, cache=False)
    parts = [(x.numpy(), y.numpy()) for x, y in dataset]
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])
