"""The command line mirrors the notebooks: one set of parameter names for notebooks, profiles, CLI.

    <package> doctor [--json]
    <package> run --profile NAME [-p key=value | -p 03_train.key=value ...] [--plan]
                  [--run-dir DIR] [--only 00,01] [--verbose]
    <package> report --run-dir DIR [--headline]
    <package> <step> --run-dir DIR [-p key=value ...] [--json]      (each step of the chain)
    <package> --version

and the commands of the optional parts this project holds (`<package> --help` lists them all).

Exit codes: 0 success, 1 a notebook failed, 2 bad input (refused before any work started),
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
import time
from pathlib import Path

from . import __version__, parts, quiet, steps
from .artifacts import METRICS_DIR, StepError

PROG = __package__ or "project"
PARAM_HELP = "a parameter, value read as YAML (3, 0.1, true, text); repeat for several"
RUN_PARAM_HELP = (
    "KEY=VALUE for every notebook that declares KEY, or NOTEBOOK.KEY=VALUE for one "
    "(03_train.epochs=20); value read as YAML (3, 0.1, true, text); repeat for several"
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--verbose" in argv:  # before anything loads TensorFlow; the kernels inherit it
        os.environ[quiet.VERBOSE_ENV] = "1"
    try:  # Ctrl-C, even while a step's module (TensorFlow) loads for --help: one line, 130
        command = next((arg for arg in argv if not arg.startswith("-")), "report")
        if command not in ("report", "run"):  # loads TensorFlow: quietly, first (run: later,
            # after its values are checked, so that a typo is refused in a fraction of a second)
            refused = _refuse_early(command, argv)  # a step's values: checked before it too
            if refused is not None:
                return refused
            load_tensorflow(shown=not {"--json", "--help", "-h"} & set(argv))
        parser = _parser(chosen=next((arg for arg in argv if not arg.startswith("-")), None))
        args = parser.parse_args(argv)
        return args.handler(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted.", file=sys.stderr)
        return 130
    except StepError as error:  # one no command caught (no project found): its sentence
        print(f"{PROG}: {error}", file=sys.stderr)
        return getattr(error, "exit_status", 2)


def _refuse_early(command: str, argv: list[str]) -> int | None:
    """A step's values checked before TensorFlow loads, as `run`'s pre-flight does, so `data -p
    max_tokens=0` or `train -p epochs=-1` is refused in a fraction of a second: step 1's by its
    own checker (its module imports no TensorFlow), the others' names, types and shared ranges
    (runner.early.check_early). Exit status 2 after the sentence, or None to go on (help and parse
    errors included)."""
    if command not in steps.BY_NAME or {"--help", "-h"} & set(argv):
        return None
    from . import runner
    from .runner.early import check_early

    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("-p", "--param", action="append", default=[])
    early.add_argument("--run-dir", type=Path)
    known, _ = early.parse_known_args(argv)
    if known.run_dir is None:
        return None  # the full parser says what is missing
    step = steps.BY_NAME[command]
    try:
        values = runner.parse_overrides(known.param)
        if command != "data":
            check_early(step, values)
            return None
        params = steps.params_from(step, values)
        steps.module(step).check(known.run_dir.expanduser().resolve(), params, inputs=False)
    except (StepError, runner.RunnerInputError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    return None


def load_tensorflow(*, shown: bool) -> None:
    """Load TensorFlow quietly, under a moving "Loading TensorFlow" line (5 s on a quiet
    machine, minutes on a busy one: never a silent wait), unless the output is JSON or help."""
    if "tensorflow" in sys.modules or not shown:
        quiet.import_tensorflow()
        return
    from . import progress

    with progress.task("Loading TensorFlow", unit=""):
        quiet.import_tensorflow()


def _parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen step's module is imported (for its parameters' help)."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
        "-p", "--param", action="append", default=[], metavar="KEY=VALUE", help=RUN_PARAM_HELP
    )
    run.add_argument(
        "--run-dir", type=Path, help="run folder (default: artifacts/<time>-<profile>)"
    )
    run.add_argument("--only", help="comma-separated notebook prefixes to run, e.g. 00,01")
    run.add_argument(
        "--plan",
        action="store_true",
        help="print each notebook's values and where each came from (default, profile, -p); "
        "run nothing",
    )
    run.add_argument("--project-dir", type=Path, help="project root (default: found from here)")
    run.add_argument(
        "--verbose",
        action="store_true",
        help=f"keep TensorFlow's logs and library warnings (same as {quiet.VERBOSE_ENV}=1)",
    )
    run.set_defaults(handler=_run)

    report = commands.add_parser(
        "report", help="write a run folder's report.md and report.html again, or print its headline"
    )
    report.add_argument(
        "--run-dir",
        type=Path,
        required=True,
        help="a run folder: one `run` wrote (run.json), or artifacts/interactive from JupyterLab",
    )
    report.add_argument(
        "--headline", action="store_true", help="print the headline as markdown (CI job summaries)"
    )
    report.set_defaults(handler=_report)

    for step in steps.available():
        _step_parser(commands, step, full=step.name == chosen)
    _part_parsers(commands)
    return parser


def _part_parsers(commands: argparse._SubParsersAction) -> None:
    """The subcommands of the optional parts this project has (parts.*.COMMANDS)."""
    for name in (module for modules in parts.collect("COMMANDS") for module in modules):
        importlib.import_module(f".{name}", __package__).add_parsers(commands)


def _step_parser(commands: argparse._SubParsersAction, step: steps.Step, full: bool) -> None:
    """`<package> <step>`: the step's entry, with the notebook's parameter names and defaults."""
    epilog = None
    if full:
        lines = [
            f"  {field.name} = {field.default!r}: {field.metadata.get('help', '')}"
            for field in dataclasses.fields(steps.module(step).Params)
        ]
        epilog = f"Parameters (as in notebook {step.notebook}):\n" + "\n".join(lines)
    sub = commands.add_parser(
        step.name,
        help=f"step {step.notebook[:2]}: {step.summary}",
        description=f"Notebook {step.notebook} without Jupyter: the same entry, parameters and "
        f"checks. Writes {METRICS_DIR}/{step.name}.json in the run folder.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.add_argument("--run-dir", type=Path, required=True, help="the run folder")
    sub.add_argument(
        "-p", "--param", action="append", default=[], metavar="KEY=VALUE", help=PARAM_HELP
    )
    sub.add_argument("--json", action="store_true", help="print the metrics as JSON on stdout")
    sub.set_defaults(handler=_step, step=step)


def _step(args: argparse.Namespace) -> int:
    from . import runner

    step: steps.Step = args.step
    folder = args.run_dir.expanduser().resolve()
    started = time.time()
    try:
        params = steps.params_from(step, runner.parse_overrides(args.param))
        metrics = steps.module(step).run(folder, params, verbose=not args.json)
    except (StepError, runner.RunnerInputError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return getattr(error, "exit_status", 2)  # 128 + signal when a stop signal ended it
    written = folder / METRICS_DIR / f"{step.name}.json"
    if args.json:
        print(json.dumps(metrics, indent=2, sort_keys=True, default=str))
    elif written.is_file() and written.stat().st_mtime >= started - 1:
        print(f"Metrics: {written}")  # a multi-worker job's other workers write none
    return 0


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
    from .runner.commands import run

    return run(args, PROG)


def _report(args: argparse.Namespace) -> int:
    from .runner.commands import report

    return report(args, PROG)
