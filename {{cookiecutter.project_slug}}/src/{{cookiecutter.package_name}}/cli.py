"""The command line mirrors the notebooks: one set of parameter names for notebooks, profiles, CLI.

    <package> doctor [--json]
    <package> run --profile NAME [-p key=value ...] [--run-dir DIR] [--only 00,01]
    <package> train --run-dir DIR [-p key=value ...] [--json]

Exit codes: 0 success, 1 a notebook failed, 2 bad input (refused before any work started).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROG = __package__ or "project"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return args.handler(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    doctor = commands.add_parser(
        "doctor", help="check GPUs, drivers, CUDA/cuDNN and precision support"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument(
        "--matmul-size", type=int, default=1024, help="matrix size of the timing per device"
    )
    doctor.add_argument("--matmul-repeats", type=int, default=10, help="timed runs per device")
    doctor.set_defaults(handler=_doctor)

    run = commands.add_parser("run", help="run the notebook chain headlessly with papermill")
    run.add_argument(
        "--profile", default="default", help="a profile in configs/ (smoke, default, gpu)"
    )
    run.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a notebook parameter (value read as YAML: 3, 0.1, true, text)",
    )
    run.add_argument(
        "--run-dir", type=Path, help="run folder (default: artifacts/<time>-<profile>)"
    )
    run.add_argument("--only", help="comma-separated notebook prefixes to run, e.g. 00,01")
    run.add_argument("--project-dir", type=Path, help="project root (default: found from here)")
    run.set_defaults(handler=_run)

    train = commands.add_parser(
        "train",
        help="train on a run folder's data (notebook 03 without Jupyter; resumes a crashed run)",
        description="Train on DIR/data/ with notebook 03's parameter names. Multi-worker jobs "
        "start one such process per worker, with TF_CONFIG in the environment; run it again "
        "with the same folder and parameters to resume after the last completed epoch.",
    )
    train.add_argument("--run-dir", type=Path, required=True, help="run folder holding data/")
    train.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a training parameter (model, epochs, batch_size, learning_rate, width, dropout, "
        "strategy, logical_cpus, precision, jit_compile, seed, patience, verbose), value read as "
        "YAML; model, learning_rate, width and dropout not given come from tuning when it ran",
    )
    train.add_argument(
        "--json", action="store_true", help="print metrics/train.json's content on stdout"
    )
    train.set_defaults(handler=_train)
    return parser


def _doctor(args: argparse.Namespace) -> int:
    from . import env

    try:
        env.check_matmul_parameters(args.matmul_size, args.matmul_repeats)
    except ValueError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    env.configure_memory_growth()
    report = env.collect_report(matmul_size=args.matmul_size, matmul_repeats=args.matmul_repeats)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True, default=str))
    else:
        print(env.format_report(report))
    return 0


def _run(args: argparse.Namespace) -> int:
    from . import runner

    try:
        overrides = runner.parse_overrides(args.param)
        only = [part.strip() for part in args.only.split(",")] if args.only else None
        result = runner.run_chain(
            profile=args.profile,
            overrides=overrides,
            run_dir=args.run_dir,
            project_dir=args.project_dir,
            only=only,
        )
    except runner.RunnerInputError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    except runner.NotebookFailed as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    print(f"Run folder: {result.run_dir}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from . import runner
    from .artifacts import MissingInputError
    from .data import DataError
    from .train import DEFAULTS, TrainError, train

    try:
        params = runner.parse_overrides(args.param)
        unknown = sorted(set(params) - set(DEFAULTS))
        if unknown:
            raise TrainError(
                f"Unknown parameter {unknown[0]!r}: train takes {', '.join(DEFAULTS)}."
            )
        if args.json:
            params.setdefault("verbose", False)
        metrics = train(args.run_dir.expanduser().resolve(), **params)
    except (runner.RunnerInputError, TrainError, DataError, MissingInputError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(metrics, indent=2, sort_keys=True, default=str))
    elif metrics["model_path"]:  # the chief: it wrote the run folder
        print(f"Metrics: {args.run_dir.expanduser().resolve() / 'metrics' / 'train.json'}")
    return 0
