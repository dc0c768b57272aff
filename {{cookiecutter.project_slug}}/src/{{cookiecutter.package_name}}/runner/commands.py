"""The `run` and `report` subcommands: what cli.py calls, with the exit codes it documents.

`run` checks names, types and the profile from the notebooks' cells before anything heavy is
imported (exit 2 at once), prints the plan with --plan, else runs the chain and ends with the
headline, the total time and both report paths (console.py). `report` rebuilds report.md and
report.html from run.json, or, for notebooks run in JupyterLab, from the metrics they wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..artifacts import METRICS_DIR, RUN_RECORD, StepError, project_root
from .console import announce, closing_lines, plan_lines
from .profile import RunnerInputError


def _loaded(module: str, name: str) -> type[BaseException] | tuple[()]:
    """A class of a module of this package only if that module is loaded (else nothing can be
    one of its instances): a test in an except clause that imports nothing."""
    loaded = sys.modules.get(f"{__package__}{module}")
    return getattr(loaded, name, ()) if loaded is not None else ()


def _loading(what: str, module: str) -> contextlib.AbstractContextManager[Any]:
    """A moving "Loading <what>" line while a heavy module of this package loads, or nothing
    when it is loaded already (the runner's line, as for TensorFlow)."""
    if f"{__package__}{module}" in sys.modules:
        return contextlib.nullcontext()
    from .. import progress

    return progress.task(f"Loading {what}", unit="")


def run(args: argparse.Namespace, prog: str) -> int:
    """`run`: check (fast), announce, run the chain, close with the headline and reports."""
    from .. import runner

    started = time.perf_counter()
    try:
        overrides = runner.parse_overrides(args.param)
        only = [part.strip() for part in args.only.split(",")] if args.only else None
        # Names, types and the profile are checked from the notebooks' cells alone: no
        # TensorFlow, no papermill yet, so a typo is answered at once.
        plan = runner.plan_run(args.profile, overrides, project_dir=args.project_dir, only=only)
        print("\n".join(plan_lines(plan) if args.plan else announce(plan)), flush=True)
        if args.plan:
            return 0
        with _loading("the notebook runner (papermill, nbconvert)", ".chain"):
            run_chain = runner.run_chain  # a minute on a busy machine: not a silent one
        result = run_chain(
            profile=args.profile,
            overrides=overrides,
            run_dir=args.run_dir,
            project_dir=args.project_dir,
            only=only,
            announced=True,
        )
    # No clause below may import: a Ctrl-C inside papermill's import leaves it half-loaded, and
    # naming runner.NotebookFailed there imported it again, ending in an AttributeError traceback.
    except (RunnerInputError, StepError) as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupted:  # runner.RunInterrupted names the record
        run_dir = getattr(interrupted, "run_dir", None)
        if run_dir is not None:
            _close(run_dir, started)
        message = str(interrupted) or "interrupted before any notebook started."
        print(f"{prog}: {message}", file=sys.stderr)
        return getattr(interrupted, "exit_status", 130)  # 143 when SIGTERM stopped the run
    except Exception as error:
        if not isinstance(error, _loaded(".execute", "NotebookFailed")):
            raise
        _close(error.run_dir, started)
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    _close(result.run_dir, started, result.record)
    return 0


def report(args: argparse.Namespace, prog: str) -> int:
    """`report --run-dir DIR [--headline]`: from run.json, or from what the notebooks wrote."""
    from .record import interactive_record, record_problem
    from .summary import headline, run_status

    folder = _existing(args.run_dir)
    try:
        record = json.loads((folder / RUN_RECORD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        try:  # notebooks run in JupyterLab write metrics, but no run.json
            record = interactive_record(folder)
        except FileNotFoundError:
            print(
                f"{prog}: {folder} holds neither {RUN_RECORD} nor {METRICS_DIR}/: pass a run "
                f"folder that `{prog} run` or the notebooks wrote.",
                file=sys.stderr,
            )
            return 2
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        print(
            f"{prog}: {folder / RUN_RECORD} cannot be read ({reason}): pass a run folder "
            f"that `{prog} run` wrote.",
            file=sys.stderr,
        )
        return 2
    problem = record_problem(record)
    if problem:
        print(
            f"{prog}: {folder / RUN_RECORD} is not a record that `{prog} run` writes ({problem}): "
            "run the chain into that folder again, or pass another run folder.",
            file=sys.stderr,
        )
        return 2
    if args.headline:
        print(f"### Run {folder.name}: {run_status(record, folder)}\n")
        print("\n".join(headline(folder, record)))
        return 0
    from .. import progress
    from .report import write_report

    try:
        print(f"Wrote {write_report(folder, record)}")
    except StepError as error:  # a full disk, a read-only folder: one sentence naming the file
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    # nbconvert loads, then converts every executed notebook: minutes on a busy machine.
    with progress.task("Writing report.html (the report and every executed notebook)", unit=""):
        from .chain import write_report_html

        html = write_report_html(folder, record)  # its failure is one sentence, too
    if html:
        print(f"Wrote {html}")
    return 0 if html else 2


def _existing(run_dir: Path) -> Path:
    """The folder as given; a relative one missing here is taken from the project root, as the
    notebooks take their run_dir (artifacts/interactive)."""
    folder = run_dir.expanduser().resolve()
    if not folder.exists() and not run_dir.is_absolute():
        with contextlib.suppress(FileNotFoundError):
            folder = project_root() / run_dir
    return folder


def _close(run_dir: Path, started: float, record: dict[str, Any] | None = None) -> None:
    """The run's last lines: its headline, the total time, both report paths."""
    print("", *closing_lines(run_dir, time.perf_counter() - started, record), sep="\n", flush=True)
