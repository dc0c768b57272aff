"""`<package> serve canary|promote|rollback|status|rewrite` and `<package> serve-bench`, for cli.py.

Argument parsing only imports this module; TensorFlow is imported by serve-bench (the task makes
what its requests carry), not by --help or by the label commands, which take a fraction of a
second.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..artifacts import META_FILE, StepError, require, resolve_run_dir
from ..parts.serve import SERVE_METRICS
from ..writes import write_json
from . import bench, versions
from .config import LABELS

SERVE_FAILED = "metrics/serve.failed.json"  # the last attempt with no answer, beside serve.json


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """Add `serve` (with its actions) and `serve-bench` to the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="TF Serving: make an export the canary, promote it, roll back (no restart)",
        description="Rewrite the run's serving/models.config, which TF Serving re-reads: labels "
        "move without a restart.",
    )
    actions = serve.add_subparsers(dest="action", required=True)
    for name, text in (
        ("canary", "serve export/<version>/ beside the stable version, labelled canary"),
        ("promote", "make the canary (or --version) stable; the old stable stays loaded"),
        ("rollback", "give the label stable back to the previous stable version"),
        ("status", "the served versions and labels, read with TF Serving's own message"),
        ("rewrite", "write the three configs again from serving/versions.json"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--run-dir", type=Path, required=True, help="the run folder")
        if name in ("canary", "promote"):
            action.add_argument(
                "--version", type=int, required=name == "canary", help="an export's version"
            )
        action.set_defaults(handler=serve_action)

    load = commands.add_parser(
        "serve-bench",
        help="closed-loop load test of TF Serving (REST or gRPC) → metrics/serve.json",
        description=bench.__doc__.split("\n\n")[1].replace("\n", " "),
    )
    load.add_argument(
        "--run-dir",
        type=Path,
        required=True,
        help=f"run folder (its data gives what the requests carry; {SERVE_METRICS} goes there)",
    )
    load.add_argument("--host", default="127.0.0.1", help="TF Serving's address (127.0.0.1)")
    load.add_argument("--port", type=int, help="default 8501 for rest, 8500 for grpc")
    load.add_argument("--protocol", choices=sorted(bench.PORTS), default="rest")
    load.add_argument("--concurrency", type=int, default=4, help="requests in flight (4)")
    load.add_argument("--duration", type=float, default=10.0, help="seconds at most (10)")
    load.add_argument("--requests", type=int, default=10_000, help="requests at most (10000)")
    load.add_argument("--batch", type=int, default=1, help="examples per request (1)")
    load.add_argument(
        "--label",
        action="append",
        metavar="LABEL[=WEIGHT]",
        help=f"{' or '.join(LABELS)}, repeat with weights for an A/B split, e.g. --label "
        "stable=9 --label canary=1 (default: stable)",
    )
    load.add_argument("--timeout", type=float, default=10.0, help="seconds per request (10)")
    load.add_argument("--json", action="store_true", help="print the metrics as JSON")
    load.set_defaults(handler=serve_bench)


def serve_action(args: argparse.Namespace) -> int:
    try:
        if args.action == "canary":
            said = versions.canary(args.run_dir, args.version)
        elif args.action == "promote":
            said = versions.promote(args.run_dir, args.version)
        elif args.action == "rollback":
            said = versions.rollback(args.run_dir)
        elif args.action == "rewrite":
            said = versions.rewrite(args.run_dir)
        else:
            said = json.dumps(versions.status(args.run_dir)["models_config"], indent=2)
    except StepError as error:
        print(f"{versions.MODEL_NAME}: {error}", file=sys.stderr)
        return 2
    print(said)
    return 0


def serve_bench(args: argparse.Namespace) -> int:
    try:
        folder = resolve_run_dir(args.run_dir, create=False)
        meta = json.loads(require(folder, META_FILE, "01_data").read_text(encoding="utf-8"))
        params = bench.BenchParams(
            host=args.host,
            port=args.port,
            protocol=args.protocol,
            concurrency=args.concurrency,
            duration=args.duration,
            requests=args.requests,
            batch=args.batch,
            labels=parse_labels(args.label or ["stable"]),
            timeout=args.timeout,
        )
        bench.check(params)
        # What the requests carry, from the task: random images, the validation texts.
        from ..tasks import current as task

        count = bench.example_count(params.batch)
        examples = task().bench.serving_examples(folder, meta, count, seed=params.seed)
    except StepError as error:
        print(f"{versions.MODEL_NAME}: {error}", file=sys.stderr)
        return 2
    print(
        f"Load on {params.protocol}://{params.host}:{params.port or bench.PORTS[params.protocol]}"
        f" for {params.duration:g} s or {params.requests} requests:",
        file=sys.stderr,
    )
    metrics = bench.run_bench(params, examples, progress=_progress)
    print(file=sys.stderr)
    # A run with no answer (server down, wrong port) must not replace the last good numbers.
    path = write_json(folder / (SERVE_METRICS if metrics["ok"] else SERVE_FAILED), metrics)
    if args.json:
        print(json.dumps(metrics, indent=2, sort_keys=True))
    else:
        latency = metrics["latency_ms"]
        print(
            f"{metrics['qps']:.1f} QPS, p50/p95/p99 {latency['p50']}/{latency['p95']}/"
            f"{latency['p99']} ms, {metrics['errors']} errors of {metrics['requests']}; "
            f"per label {metrics['labels']}. Metrics: {path}"
        )
    if not metrics["ok"]:
        kept = folder / SERVE_METRICS
        kept = f"{kept} keeps the last good result" if kept.is_file() else f"no {kept} written"
        print(
            f"{versions.MODEL_NAME}: no request succeeded ({metrics['error_examples'][0]}): is "
            f"TF Serving answering at {metrics['target']} (make serve)? ({kept})",
            file=sys.stderr,
        )
        return 1
    return 0


def parse_labels(values: list[str]) -> dict[str, float]:
    """["stable=9", "canary=1"] → {"stable": 9.0, "canary": 1.0}; a bare label weighs 1. A weight
    that is not a positive, finite number (nan, inf, -1, abc) is refused here, before any
    request is sent."""
    labels = {}
    for value in values:
        name, _, weight = value.partition("=")
        try:
            labels[name] = float(weight) if weight else 1.0
        except ValueError:
            labels[name] = math.nan
        if not 0 < labels[name] < math.inf:
            raise versions.ServeError(
                f"--label {value!r} is not allowed: use LABEL or LABEL=WEIGHT with a positive, "
                "finite weight, e.g. canary=1."
            )
    return labels


def _progress(line: str) -> None:
    print(f"\r{line}", end="", file=sys.stderr, flush=True)
