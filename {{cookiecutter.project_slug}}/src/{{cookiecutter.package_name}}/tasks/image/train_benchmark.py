"""Is the package's training as fast as it should be? Three ratios, measured in one run here.

1. `loop_vs_fit`: train.train (the one custom loop every strategy runs, with its checkpoints,
   validation and logs) against a bare, hand-written `model.fit` on the same model
   (models.build_model), the same data pipeline, batch size, precision policy and XLA setting.
   Goal >= 0.95: the loop that makes multi-worker training and resume possible costs no speed.
2. `pipeline_vs_memory`: the same train.train fed by the task's build_inputs (read, decode, cache,
   shuffle, batch, prefetch) against fed by batches already built in memory, the cheapest input
   there is. Goal >= 0.95: training is not input-bound.
3. `watched_vs_unwatched`: train.train with the Prometheus endpoint on (metrics_port, its live
   reports) and the step's input-wait timer, against with neither. Goal >= 0.97: watching a run
   costs it at most 3 %.

Each run trains `epochs` epochs in a scratch folder (the run folder gets only
metrics/train_benchmark.json); the first epoch, which traces the step functions and fills the
cache, is left out of every rate. The runs take turns for `rounds` rounds, each round starting
with the next run, and each keeps its best round, so a moment of background load spoils one round,
not a ratio.

This module is the entry: the benchmark's parameters (train.Params fields, plus rounds) and their
checks, the scratch folder, the command line. train_benchmark_runs trains and times the runs,
train/benchmark_memory.py builds the memory-fed input, train_benchmark_result makes the record and
its table. It lives with the image task, the one task whose training speed it measures; the loop
it times is the shared train.train.

    python -m <package>.tasks.image.train_benchmark [--run-dir DIR] [-p epochs=10 ...] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ... import data, seam
from ...artifacts import DATA_DIR, META_FILE, METRICS_DIR, MissingInputError, resolve_run_dir
from ...data.meta import check_batch
from ...train.devices import configure_devices
from ...train.params import DEFAULT_LEARNING_RATE, DEFAULT_MODEL, Params, TrainError, check_values
from ...writes import write_json
from .. import read_meta
from .train_benchmark_result import GOAL, format_table, summary
from .train_benchmark_runs import RUNS, finder_run, take_turns

METRICS_FILE = f"{METRICS_DIR}/train_benchmark.json"
# The train.Params fields the benchmark takes. width and dropout stay the model's own, and
# patience is 0 (every epoch runs), so the bare model.fit does exactly the same work.
TRAIN_FIELDS = (
    "model",
    "epochs",
    "batch_size",
    "learning_rate",
    "strategy",
    "logical_cpus",
    "precision",
    "jit_compile",
    "seed",
)
# train.Params' defaults, with what None means there made concrete (the benchmark takes no
# suggested values) and more epochs, so that the rates settle.
BASE = Params(model=DEFAULT_MODEL, epochs=10, learning_rate=DEFAULT_LEARNING_RATE, patience=0)
BENCH_DEFAULTS: dict[str, Any] = {
    **{name: getattr(BASE, name) for name in TRAIN_FIELDS},
    "rounds": 3,
    "verbose": True,
}

__all__ = [
    "BASE",
    "BENCH_DEFAULTS",
    "GOAL",
    "METRICS_FILE",
    "RUNS",
    "TRAIN_FIELDS",
    "benchmark_training",
    "format_table",
    "main",
]


def benchmark_training(
    run_dir: str | os.PathLike[str] | None = None,
    *,
    rounds: int = BENCH_DEFAULTS["rounds"],
    verbose: bool = BENCH_DEFAULTS["verbose"],
    **values: Any,
) -> dict[str, Any]:
    """Measure the runs and return the rates and the three ratios (see the module docstring).

    `values` are train.Params fields named in TRAIN_FIELDS (model, epochs, batch_size, …); the
    rest come from BASE. The data is run_dir/data/ when it is there (written by 01_data),
    otherwise the digits, prepared in a scratch folder; the memory-fed run holds the whole
    training split in memory. With a run_dir, the result is also written to
    run_dir/metrics/train_benchmark.json. Call it before anything else in the process runs a
    TensorFlow op when logical_cpus > 1 (it configures the devices first, like train).
    """
    params = _checked(values, rounds)
    folder = None if run_dir is None else resolve_run_dir(run_dir, create=False)
    has_data = folder is not None and (folder / META_FILE).is_file()

    devices = configure_devices(params.logical_cpus)  # before any TensorFlow op
    say = print if verbose else _quiet
    with tempfile.TemporaryDirectory(prefix="train-benchmark-") as scratch_name:
        scratch = Path(scratch_name)
        if has_data:
            source = folder
        else:
            source = scratch / "digits"
            step = seam.data_hooks()  # the data step's digits, as its default Params write them
            step.prepare(source, step.params())
        meta = read_meta(source)
        try:
            check_batch(meta, params.batch_size, str(source / DATA_DIR))
        except data.DataError as error:
            raise TrainError(str(error)) from None
        results = take_turns(scratch, source, params, meta, rounds, say)
        found = finder_run(scratch, source, params)
        say(
            f"batch_size=auto, learning_rate=auto: batch {found['batch_size']}, "
            f"val_accuracy {found['val_accuracy']:.4f}"
        )

    result = summary(results, params, meta, source if has_data else None, devices, found)
    if folder is not None:
        write_json(folder / METRICS_FILE, result)
        result["path"] = str(folder / METRICS_FILE)
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m <package>.tasks.image.train_benchmark`: exit 0, or 2 for bad input (one
    sentence)."""
    prog = f"python -m {__package__}.train_benchmark"
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

    from ...runner import RunnerInputError, parse_overrides

    try:
        params = parse_overrides(args.param)
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


def _checked(values: dict[str, Any], rounds: Any) -> Params:
    """BASE with the given values, refused in one sentence (TrainError) before anything runs."""
    unknown = sorted(set(values) - set(TRAIN_FIELDS))
    if unknown:
        raise TrainError(
            f"Unknown parameter {unknown[0]!r}: the benchmark takes {', '.join(BENCH_DEFAULTS)}."
        )
    params = dataclasses.replace(BASE, **values)
    placement = check_values(params)
    if params.epochs < 2:
        raise TrainError(
            f"epochs={params.epochs!r} is not allowed for the benchmark: use 2 or more, since the "
            "first epoch (tracing, the cache filling) is left out of every rate."
        )
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise TrainError(f"rounds={rounds!r} is not allowed: use a whole number >= 1.")
    if placement.strategy == "multi_worker":
        raise TrainError(
            f"strategy={params.strategy!r} means multi_worker here (TF_CONFIG is set): the "
            "benchmark measures one machine, so unset TF_CONFIG or use one_device, mirrored "
            "or auto."
        )
    return params


def _quiet(*_: Any, **__: Any) -> None:
    pass


if __name__ == "__main__":
    sys.exit(main())
