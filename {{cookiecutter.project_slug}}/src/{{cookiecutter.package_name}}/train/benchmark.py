"""Is the package's training as fast as it should be? Two ratios, measured in one run, same machine.

1. `loop_vs_fit`: train.train (the one custom loop every strategy runs, with its checkpoints,
   validation and logs) against a bare, hand-written `model.fit` on the same model
   (models.build_model), the same data pipeline, batch size, precision policy and XLA setting.
   Goal >= 0.95: the loop that makes multi-worker training and resume possible costs no speed.
2. `pipeline_vs_memory`: the same train.train fed by data.make_dataset (read, decode, cache,
   shuffle, batch, prefetch) against fed by batches already built in memory, the cheapest input
   there is. Goal >= 0.95: training is not input-bound.

Each run trains `epochs` epochs in a scratch folder (the run folder gets only
metrics/train_benchmark.json); the first epoch, which traces the step functions and fills the
cache, is left out of every rate. The three runs take turns for `rounds` rounds, each round starting
with the next run, and each keeps its best round, so a moment of background load spoils one round,
not a ratio.

    python -m <package>.train.benchmark [--run-dir DIR] [-p epochs=10 -p batch_size=64 ...] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from .. import data, env, models
from ..artifacts import DATA_DIR, META_FILE, MissingInputError, resolve_run_dir, write_json
from ..data.records import check_batch
from .devices import (
    configure_devices,
    dtype_policy,
    make_strategy,
    resolve_jit,
    resolve_precision,
    strategy_name,
)
from .params import (
    DEFAULT_LEARNING_RATE,
    DEFAULT_MODEL,
    Params,
    TrainError,
    check_values,
    effective_learning_rate,
)
from .step import train

GOAL = 0.95
METRICS_FILE = "metrics/train_benchmark.json"
_TRAIN = Params()
BENCH_DEFAULTS: dict[str, Any] = {
    "model": DEFAULT_MODEL,
    "epochs": 10,
    "batch_size": _TRAIN.batch_size,
    "learning_rate": DEFAULT_LEARNING_RATE,
    "strategy": _TRAIN.strategy,
    "logical_cpus": _TRAIN.logical_cpus,
    "precision": _TRAIN.precision,
    "jit_compile": _TRAIN.jit_compile,
    "seed": _TRAIN.seed,
    "rounds": 3,
    "verbose": True,
}
# The three runs, in the order they take turns: key, trainer, what feeds it.
RUNS = (
    ("package", "train.train (the package's loop)", "data.make_dataset"),
    ("fit", "bare model.fit", "data.make_dataset"),
    ("memory", "train.train (the package's loop)", "batches built in memory"),
)


def benchmark_training(
    run_dir: str | os.PathLike[str] | None = None,
    *,
    model: str = BENCH_DEFAULTS["model"],
    epochs: int = BENCH_DEFAULTS["epochs"],
    batch_size: int = BENCH_DEFAULTS["batch_size"],
    learning_rate: float = BENCH_DEFAULTS["learning_rate"],
    strategy: str = BENCH_DEFAULTS["strategy"],
    logical_cpus: int = BENCH_DEFAULTS["logical_cpus"],
    precision: str = BENCH_DEFAULTS["precision"],
    jit_compile: str | bool = BENCH_DEFAULTS["jit_compile"],
    seed: int = BENCH_DEFAULTS["seed"],
    rounds: int = BENCH_DEFAULTS["rounds"],
    verbose: bool = BENCH_DEFAULTS["verbose"],
) -> dict[str, Any]:
    """Measure the three runs and return the rates and both ratios (see the module docstring).

    The data is run_dir/data/ when it is there (written by 01_data), otherwise the digits,
    prepared in a scratch folder; the memory-fed run holds the whole training split in memory.
    With a run_dir, the result is also written to run_dir/metrics/train_benchmark.json. Call it
    before anything else in the process runs a TensorFlow op when logical_cpus > 1 (it
    configures the devices first, like train).
    """
    chosen = Params(
        model=model,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        strategy=strategy,
        logical_cpus=logical_cpus,
        precision=precision,
        jit_compile=jit_compile,
        seed=seed,
        patience=0,
    )
    placement = check_values(chosen)
    params = dataclasses.asdict(chosen)
    if epochs < 2:
        raise TrainError(
            f"epochs={epochs!r} is not allowed for the benchmark: use 2 or more, since the first "
            "epoch (tracing, the cache filling) is left out of every rate."
        )
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise TrainError(f"rounds={rounds!r} is not allowed: use a whole number >= 1.")
    if placement.strategy == "multi_worker":
        raise TrainError(
            f"strategy={strategy!r} means multi_worker here (TF_CONFIG is set): the benchmark "
            "measures one machine, so unset TF_CONFIG or use one_device, mirrored or auto."
        )
    folder = None if run_dir is None else resolve_run_dir(run_dir, create=False)
    has_data = folder is not None and (folder / META_FILE).is_file()

    devices = configure_devices(params["logical_cpus"])  # before any TensorFlow op
    say = print if verbose else _quiet
    with tempfile.TemporaryDirectory(prefix="train-benchmark-") as scratch_name:
        scratch = Path(scratch_name)
        if has_data:
            source = folder
        else:
            source = scratch / "digits"
            data.prepare(source, "digits")
        meta = data.read_meta(source)
        try:
            check_batch(meta, batch_size, str(source / DATA_DIR))
        except data.DataError as error:
            raise TrainError(str(error)) from None
        images, labels = _load_split(source, "train")
        kwargs = {key: params[key] for key in BENCH_DEFAULTS if key not in ("rounds", "verbose")}
        measure: dict[str, Callable[[Path], dict[str, Any]]] = {
            "package": lambda run: _train_rate(run, kwargs),
            "fit": lambda run: _fit_rate(run, meta, params),
            "memory": lambda run: _train_rate(run, kwargs, memory=(images, labels)),
        }
        results: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _ in RUNS}
        for round_number in range(1, rounds + 1):
            # Each round starts with the next run, so none always runs first (or last).
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

    result = _summary(results, params, meta, source if has_data else None, devices)
    if folder is not None:
        write_json(folder / METRICS_FILE, result)
        result["path"] = str(folder / METRICS_FILE)
    return result


def format_table(result: dict[str, Any]) -> str:
    """The rates as a small table, then the two ratios against their goal."""
    rows = [
        ("training", "fed by", "examples/s (best)", "rounds (examples/s)"),
        *(
            (
                run["trainer"],
                run["fed_by"],
                f"{run['examples_per_sec']:,.0f}",
                " / ".join(f"{rate:,.0f}" for rate in run["rounds"]),
            )
            for run in result["runs"].values()
        ),
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines += [
        "",
        _ratio_line("loop_vs_fit", result, "train.train / bare model.fit"),
        _ratio_line("pipeline_vs_memory", result, "pipeline-fed / memory-fed"),
        f"Basis: {result['basis']}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`python -m <package>.train.benchmark`: exit 0, or 2 for bad input (one sentence)."""
    prog = f"python -m {__package__}.benchmark"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--run-dir",
        type=Path,
        help="a run folder: its data/ is used when there, and metrics/train_benchmark.json is "
        "written into it (default: the digits in a scratch folder, nothing written)",
    )
    parser.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a parameter ({', '.join(BENCH_DEFAULTS)}), value read as YAML",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    from ..runner import RunnerInputError, parse_overrides

    try:
        params = parse_overrides(args.param)
        unknown = sorted(set(params) - set(BENCH_DEFAULTS))
        if unknown:
            raise TrainError(
                f"Unknown parameter {unknown[0]!r}: the benchmark takes "
                f"{', '.join(BENCH_DEFAULTS)}."
            )
        if args.json:
            params.setdefault("verbose", False)
        result = benchmark_training(args.run_dir, **params)
    except (RunnerInputError, TrainError, data.DataError, MissingInputError) as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        print(format_table(result))
        if "path" in result:
            print(f"Wrote {result['path']}")
    return 0


# --- the runs ---------------------------------------------------------------------------------


def _train_rate(
    run: Path, kwargs: dict[str, Any], memory: tuple[np.ndarray, np.ndarray] | None = None
) -> dict[str, Any]:
    """train.train in a scratch run folder; its own rate leaves the first epoch out already."""
    feed = _fed_from_memory(*memory) if memory is not None else contextlib.nullcontext()
    with feed:
        metrics = train(run, **kwargs, patience=0, verbose=False)
    return {
        "examples_per_sec": metrics["examples_per_sec"],
        "val_accuracy": metrics["val_accuracy"],
        "strategy": metrics["strategy"],
        "replicas": metrics["replicas"],
        "precision": metrics["precision"],
        "jit_compile": metrics["jit_compile"],
    }


def _fit_rate(run: Path, meta: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """What a user would write by hand: build, compile, fit; same strategy, policy and XLA."""
    gpus = env.list_gpus()
    policy = resolve_precision(params["precision"], gpus)
    jit = resolve_jit(params["jit_compile"], gpus)
    distribution = make_strategy(params["strategy"], params["logical_cpus"])
    batch_size = params["batch_size"]
    keras.utils.set_random_seed(params["seed"])
    with dtype_policy(policy), distribution.scope():
        net = models.build_model(params["model"], meta["image_shape"], int(meta["num_classes"]))
        net.compile(
            optimizer=keras.optimizers.Adam(
                effective_learning_rate(params["learning_rate"], batch_size)
            ),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=jit,
        )
        # The same input as train's: the repeated pipeline, the same steps per epoch.
        steps = int(meta["splits"]["train"]["count"]) // batch_size
        dataset = data.make_dataset(
            run, "train", batch_size, seed=params["seed"], repeat=True, drop_remainder=True
        )
        timer = _EpochTimer()
        net.fit(
            dataset,
            epochs=params["epochs"],
            steps_per_epoch=steps,
            shuffle=False,  # the pipeline shuffles; fit ignores the flag for a dataset, and warns
            callbacks=[timer],
            verbose=0,
        )
        # Steps given, so Keras does not warn when the validation set (of unknown length) ends.
        val_steps = math.ceil(int(meta["splits"]["validation"]["count"]) / batch_size)
        validation = data.make_dataset(run, "validation", batch_size)
        _, val_accuracy = net.evaluate(validation, steps=val_steps, verbose=0)
    return {
        "examples_per_sec": steps * batch_size * (len(timer.seconds) - 1) / sum(timer.seconds[1:]),
        "val_accuracy": float(val_accuracy),
        "strategy": strategy_name(distribution),
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


@contextlib.contextmanager
def _fed_from_memory(images: np.ndarray, labels: np.ndarray) -> Iterator[None]:
    """Feed train's training split from batches built in memory, for the duration of one call.

    train reads its input through data.make_dataset and has no hook for another input, so that
    name is swapped and restored; validation still comes from the pipeline (it is not timed).
    """
    original = data.make_dataset

    def make_dataset(
        run_dir: Any, split: str = "train", batch_size: int = 64, **options: Any
    ) -> tf.data.Dataset:
        if split != "train":
            return original(run_dir, split, batch_size, **options)
        return _memory_dataset(
            images,
            labels,
            batch_size,
            seed=options.get("seed", 42),
            repeat=options.get("repeat", False),
            input_context=options.get("input_context"),
        )

    data.make_dataset = make_dataset
    try:
        yield
    finally:
        data.make_dataset = original


def _memory_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    batch_size: int,
    *,
    seed: int,
    repeat: bool,
    input_context: tf.distribute.InputContext | None,
) -> tf.data.Dataset:
    """Every batch built once in memory, shuffled once: nothing is read, decoded or batched."""
    if input_context is not None:
        part = slice(input_context.input_pipeline_id, None, input_context.num_input_pipelines)
        images, labels = images[part], labels[part]
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    steps = len(labels) // batch_size
    order = np.random.default_rng(seed).permutation(len(labels))[: steps * batch_size]
    batches = (
        images[order].reshape(steps, batch_size, *images.shape[1:]),
        labels[order].reshape(steps, batch_size),
    )
    dataset = tf.data.Dataset.from_tensor_slices(batches).cache()
    if repeat:
        dataset = dataset.repeat()
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)


def _load_split(run_dir: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's examples as numpy arrays, read once through the pipeline, in file order."""
    dataset = data.make_dataset(run_dir, split, 1024, training=False, cache=False)
    parts = [(x.numpy(), y.numpy()) for x, y in dataset]
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


def _scratch_run(run: Path, source: Path) -> Path:
    """A fresh run folder whose data/ is the source's (a link; a copy where links fail)."""
    run.mkdir(parents=True)
    try:
        (run / DATA_DIR).symlink_to(source / DATA_DIR, target_is_directory=True)
    except OSError:
        shutil.copytree(source / DATA_DIR, run / DATA_DIR)
    return run


# --- the result -------------------------------------------------------------------------------


def _summary(
    results: dict[str, list[dict[str, Any]]],
    params: dict[str, Any],
    meta: dict[str, Any],
    source: Path | None,
    devices: dict[str, Any],
) -> dict[str, Any]:
    runs = {}
    for key, trainer, fed_by in RUNS:
        rates = [outcome["examples_per_sec"] for outcome in results[key]]
        first = results[key][0]
        runs[key] = {
            "trainer": trainer,
            "fed_by": fed_by,
            "examples_per_sec": max(rates),
            "rounds": rates,
            "val_accuracy": results[key][-1]["val_accuracy"],
            **{k: first[k] for k in ("strategy", "replicas", "precision", "jit_compile")},
        }
    loop_vs_fit = _ratio(runs["package"]["examples_per_sec"], runs["fit"]["examples_per_sec"])
    pipeline_vs_memory = _ratio(
        runs["package"]["examples_per_sec"], runs["memory"]["examples_per_sec"]
    )
    rounds, epochs = len(results["package"]), params["epochs"]
    return {
        "model": params["model"],
        "dataset": meta["dataset"],
        "data": str(source / DATA_DIR) if source else "digits, prepared for the benchmark",
        "train_examples": int(meta["splits"]["train"]["count"]),
        "batch_size": params["batch_size"],
        "epochs": epochs,
        "rounds": rounds,
        "strategy": runs["package"]["strategy"],
        "replicas": runs["package"]["replicas"],
        "precision": runs["package"]["precision"],
        "jit_compile": runs["package"]["jit_compile"],
        "devices": devices,
        "cpu_count": os.cpu_count(),
        "basis": (
            f"best of {rounds} round(s) per run, each over epochs 2 to {epochs} (the first "
            "epoch traces and fills the cache), measured in this process on this machine"
        ),
        "runs": runs,
        "goal": GOAL,
        "loop_vs_fit": loop_vs_fit,
        "pipeline_vs_memory": pipeline_vs_memory,
        "loop_vs_fit_meets_goal": loop_vs_fit >= GOAL,
        "pipeline_vs_memory_meets_goal": pipeline_vs_memory >= GOAL,
        "tensorflow_version": tf.__version__,
        "keras_version": keras.__version__,
    }


def _ratio_line(key: str, result: dict[str, Any], meaning: str) -> str:
    value, goal = result[key], result["goal"]
    verdict = "meets the goal" if value >= goal else "BELOW the goal"
    return f"{key}: {value:.2f} ({meaning}; goal >= {goal}): {verdict}"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator and math.isfinite(denominator) else math.nan


def _quiet(*_: Any, **__: Any) -> None:
    pass


if __name__ == "__main__":
    sys.exit(main())
