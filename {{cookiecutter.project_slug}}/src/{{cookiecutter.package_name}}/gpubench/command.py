"""The `gpu-bench` subcommand: its flags, and the run from flags to table and metrics file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..artifacts import StepError
from . import bench, verdicts

PROG = (__package__ or "project").split(".")[0]


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """Add `gpu-bench` to the CLI's subcommands (parts/bench.py names this module)."""
    sub = commands.add_parser(
        "gpu-bench",
        help="measure the usual GPU claims here (mixed precision, XLA, memory, scaling, TensorRT)",
        description=(bench.__doc__ or "").split("\n\n")[1].replace("\n", " "),
    )
    sub.add_argument(
        "--run-dir", type=Path, required=True, help="where metrics/gpu_bench.json goes"
    )
    sub.add_argument("--quick", action="store_true", help="seconds on any machine (CPU too)")
    sub.add_argument("--model", help="a model of this task instead of its reference model")
    sub.add_argument(
        "--data",
        choices=("synthetic", "run"),
        default="synthetic",
        help="synthetic examples of the task, or the run folder's own data (step 01)",
    )
    sub.add_argument("--batch", type=int, help="batch per device (default: see the description)")
    sub.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per measurement (default 60 quick, 900)",
    )
    sub.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        record = run(args)
    except StepError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    print(verdicts.format_table(record))
    print(f"Metrics: {args.run_dir / bench.GPU_BENCH_METRICS}")
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Check the flags, run every measurement in its own process, judge, write the record."""
    from .. import data
    from ..env.devices import list_gpus

    run_dir = args.run_dir.expanduser().resolve()
    timeout = args.timeout if args.timeout is not None else (60.0 if args.quick else 900.0)
    if timeout <= 0:
        raise bench.GpuBenchError(f"--timeout {timeout:g} is not allowed: use seconds > 0.")
    data_dir = None
    if args.data == "run":
        try:
            data.read_meta(run_dir)
        except Exception:
            raise bench.GpuBenchError(
                f"--data run needs the run folder's data ({run_dir}/data/meta.json): run step 01 "
                "(data) there first, or use --data synthetic."
            ) from None
        data_dir = run_dir
    gpus = list_gpus()
    base, specs, why = bench.plan(
        quick=args.quick,
        gpus=gpus,
        model=args.model,
        batch=args.batch,
        data_dir=data_dir,
        finder_batch=bench.finder_batch(run_dir) if data_dir else None,
    )
    started = time.monotonic()
    results = {}
    for name, spec in specs:
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        results[name] = bench.run_one(spec, timeout)
    replicas = next((s["replicas"] for n, s in specs if n == "scaled"), 1)
    scaled_on = next(("xla" if s["jit"] else "float32" for n, s in specs if n == "scaled"), "")
    measured, missing = bench.ratios(results, replicas, scaled_on or "float32")
    served, unserved = bench.inference(run_dir)
    measured.update(served)
    why = {**why, **missing, **{k: v for k, v in unserved.items() if served.get(k) is None}}
    on_gpu = bool(gpus)
    family = bench.family_of(gpus)
    record = {
        "mode": "quick" if args.quick else "full",
        "on_gpu": on_gpu,
        "device": ", ".join(g.get("model") or "GPU" for g in gpus) if gpus else "CPU (no GPU)",
        "gpu_family": family,
        "settings": {k: v for k, v in base.items() if k not in ("kind", "replicas")},
        "runs": results,
        "measured": measured,
        "why": why,
        "claims": verdicts.judge(measured, why, on_gpu=on_gpu, gpu_family=family),
        "note": None if on_gpu else f"{verdicts.NO_GPU}; the ratios show the code path runs.",
        "source": bench.reference.SOURCE,
        "seconds": time.monotonic() - started,
    }
    bench.write(run_dir, record)
    return record


def describe(run_dir: str | Path) -> str:
    """The claims table of the run folder's gpu_bench.json, or the command that makes it."""
    import json

    path = Path(run_dir) / bench.GPU_BENCH_METRICS
    try:
        return verdicts.format_table(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError):
        return (
            f"No {bench.GPU_BENCH_METRICS} in this run folder yet. Measure the usual GPU claims "
            f"on this machine with:\n  {PROG} gpu-bench --run-dir {run_dir}   "
            "(a GPU: up to ~30 minutes)\n"
            f"  {PROG} gpu-bench --quick --run-dir {run_dir}   (any machine: seconds, proves "
            "the code path only)"
        )
