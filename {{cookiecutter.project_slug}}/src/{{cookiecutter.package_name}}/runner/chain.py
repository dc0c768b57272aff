"""Run the notebook chain into one run folder: check everything, then execute, recording each
attempt as it goes.

Nothing is written before every check has passed: the plan (names and types), the run folder
(writable, not a file, no other run in it) and each step's own checker (ranges, relations,
inputs) via steps.preflight. Only then is the folder made and the first notebook started. The
folder's lock (.run.lock, fcntl) is held from the checks to the last line of run.json, so a second
run into the same folder is refused at once, naming the first one's pid.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import locks, progress, quiet, steps
from ..artifacts import NOTEBOOKS_DIR, RUN_LOCK, RUN_RECORD, StepError
from ..writes import check_writable
from .console import announce
from .execute import NotebookFailed, execute
from .html import write_html
from .kernels import Ahead
from .live import NotebookProgress
from .plan import Plan, plan_run
from .profile import RunnerInputError
from .record import finish_record, new_attempt, save, start_record


@dataclass(frozen=True)
class RunResult:
    """Where a finished run lives, and its record (the content of run.json)."""

    run_dir: Path
    record: dict[str, Any]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the chain; run.json and report.md record the attempt as interrupted."""

    def __init__(self, message: str, run_dir: Path) -> None:
        super().__init__(message)
        self.run_dir = run_dir


def run_chain(
    profile: str = "default",
    overrides: dict[str, Any] | None = None,
    run_dir: str | Path | None = None,
    project_dir: str | Path | None = None,
    only: list[str] | None = None,
    announced: bool = False,
) -> RunResult:
    """Validate everything, then execute the notebooks in order into one run folder.

    Writes <run>/notebooks/<name>.ipynb (the latest success), run.json and report.md, also when
    a notebook fails (NotebookFailed names the notebook, the cell and the kept failed copy) or
    Ctrl-C stops it (RunInterrupted, a KeyboardInterrupt). Says the profile and the values given
    first, unless the caller has (`announced`).
    """
    plan = plan_run(profile, overrides, project_dir=project_dir, only=only)
    folder = run_dir_path(plan.project, plan.profile, run_dir)
    check_run_dir(folder, given=run_dir is not None)
    if not announced:  # the CLI says it before it imports this module (papermill, nbconvert)
        print(*announce(plan), sep="\n", flush=True)  # before the seconds the checks take
    with contextlib.ExitStack() as held:
        existed = folder.is_dir()
        if existed:  # another run in it is refused now, not after TensorFlow has loaded
            lock_run_dir(folder, held)
        # The first notebook's kernel loads TensorFlow while the checks load it here.
        first = start_ahead(plan, None, next(iter(plan.notebooks))) if plan.notebooks else None
        if first is not None:
            held.callback(first.close)  # a refusal below stops it; closing twice is harmless
        preflight(plan, folder)
        folder = _make(folder, fresh=run_dir is None)
        if not existed:  # made just now: locked before anything is written in it
            lock_run_dir(folder, held)
        return _run(plan, folder, only, first)


def _run(plan: Plan, folder: Path, only: list[str] | None, first: Ahead | None = None) -> RunResult:
    """Execute the selected notebooks into the (locked) folder, recording every attempt."""
    record = start_record(folder, plan, only)
    selected = list(plan.notebooks)
    print(f"Run folder: {folder}", flush=True)
    status, name = "interrupted", ""
    upcoming = first  # the first notebook's kernel, started while the checks ran
    if first is not None:
        first.log_to(folder / NOTEBOOKS_DIR / f"{first.notebook}.kernel.log")
    try:
        for number, name in enumerate(selected, start=1):
            attempt = new_attempt(record, plan, name, folder)
            save(folder, record, selected)  # run.json shows the running notebook, even after a kill
            live = NotebookProgress(number, len(selected), name)
            current = upcoming or start_ahead(plan, folder, name)
            upcoming = None  # execute() stops `current`; the next one loads while it runs
            if number < len(selected):
                upcoming = start_ahead(plan, folder, selected[number])
            execute(plan.notebooks[name], attempt, folder, live, current)
        status = "ok"
    except NotebookFailed:
        status = "failed"
        raise
    except KeyboardInterrupt as error:
        # nbclient's cell tasks die with the kernel shut down on the way out; asyncio would log
        # each as "Task exception was never retrieved" with a traceback, after our one line.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        during = f" during {name}" if name else ""
        interrupted = RunInterrupted(
            f"interrupted{during}; {folder / RUN_RECORD} records it.", folder
        )
        interrupted.exit_status = getattr(error, "exit_status", 130)  # 143 after SIGTERM
        raise interrupted from None
    finally:
        if upcoming is not None:  # the chain stopped before the notebook it was started for
            upcoming.close()
        finish_record(record, status)
        save(folder, record, selected)
        write_report_html(folder, record)
    return RunResult(run_dir=folder, record=record)


def start_ahead(plan: Plan, folder: Path | None, name: str) -> Ahead | None:
    """The kernel of notebook `name`, started now: it loads TensorFlow while the notebook before
    it runs (runner/kernels.py); its stderr goes to the notebook's kernel log (folder=None: no
    folder yet, see Ahead). None if it cannot start: papermill then starts one itself when the
    notebook runs, and reports why it fails."""
    log = folder / NOTEBOOKS_DIR / f"{name}.kernel.log" if folder is not None else None
    try:
        return Ahead(name, log, plan.notebooks[name].parent)
    except Exception:  # noqa: BLE001  (said, in the notebook's own words, when it runs)
        return None


def lock_run_dir(folder: Path, held: contextlib.ExitStack) -> None:
    """Hold the run folder's lock until `held` closes; refuse at once, naming the other run, when
    another process holds it (a killed run's lock went with its process: it never blocks)."""
    try:
        held.enter_context(locks.held(folder / RUN_LOCK, wait=False))
    except locks.Busy as busy:
        pid = busy.pid if busy.pid is not None else "unknown"
        raise RunnerInputError(
            f"{folder} is in use by another run (pid {pid}), which writes its {RUN_RECORD} and "
            "notebooks there: wait for it to end, or pass another --run-dir."
        ) from None
    except OSError as error:
        raise RunnerInputError(f"{folder / RUN_LOCK} cannot be made: {error}.") from None


def write_report_html(folder: Path, record: dict[str, Any]) -> Path | None:
    """report.html beside report.md; a failure to write it costs one sentence, not the run."""
    try:
        return write_html(folder, record)
    except Exception as error:  # nbconvert or a template missing must not fail a finished run
        print(f"report.html was not written: {type(error).__name__}: {error}", flush=True)
        return None


def preflight(plan: Plan, folder: Path) -> None:
    """Each selected step's own checker (steps.preflight) on the values each notebook will run
    with (its cell's, the plan's over them: checked_values); runs nothing. The checkers import
    their steps, so TensorFlow: a line says so while it loads. The ranges every step shares are
    checked first, in a moment, without TensorFlow."""
    selected = checked_values(plan)
    try:
        steps.check_ranges(selected)
    except StepError as error:
        raise RunnerInputError(saved_note(plan, str(error))) from None
    if any(steps.for_notebook(name) for name in plan.notebooks):
        started = time.perf_counter()
        print("Checking each step's values and inputs (loading TensorFlow) …", flush=True)
        with progress.task("Loading TensorFlow", unit=""):  # a moving line: it takes 5-40 s
            quiet.import_tensorflow()
        print(f"TensorFlow loaded in {time.perf_counter() - started:.1f} s.", flush=True)
    try:
        steps.preflight(folder, selected)
    except StepError as error:
        raise RunnerInputError(saved_note(plan, str(error))) from None


def checked_values(plan: Plan) -> dict[str, dict[str, Any]]:
    """What each selected notebook runs with: its cell's values, the plan's given ones over them."""
    return {name: {**plan.held.get(name, {}), **plan.parameters[name]} for name in plan.notebooks}


def saved_note(plan: Plan, refusal: str) -> str:
    """The refusal, and for each value it names that only the notebook's cell sets (no profile
    or -p gives it), where it comes from and how to clear it; the refusal alone otherwise."""
    name = refusal.partition(" refuses to start:")[0]
    if name not in plan.notebooks or " refuses to start:" not in refusal:
        return refusal
    given = plan.parameters[name]
    notes = []
    for key, value in plan.held.get(name, {}).items():
        if key in given or value in ("", None) or f"{key}=" not in refusal:
            continue
        clear = f"-p {key}= (an empty value)" if isinstance(value, str) else f"-p {key}=…"
        notes.append(
            f"that {key} is saved in notebooks/{name}.ipynb's parameters cell (no profile or "
            f"-p sets it): clear it with {clear}, or set it back in the notebook"
        )
    return refusal if not notes else f"{refusal.rstrip('.')}; " + "; ".join(notes) + "."


def check_run_dir(folder: Path, given: bool = True) -> None:
    """Refuse a run folder that is a file, lies under a file, or cannot be written."""
    try:
        check_writable(folder, "--run-dir" if given else "The run folder")
    except StepError as error:
        raise RunnerInputError(str(error)) from None


def run_dir_path(project: Path, profile: str, run_dir: str | Path | None = None) -> Path:
    """The run folder, not made yet: the given one, or a new artifacts/<time>-<profile>."""
    if run_dir is not None:
        return Path(run_dir).expanduser().resolve()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = project / "artifacts" / f"{stamp}-{profile}"
    for suffix in range(1, 1000):
        folder = base if suffix == 1 else base.with_name(f"{base.name}-{suffix}")
        if not folder.exists():
            return folder
    raise RunnerInputError(f"{base} and 999 suffixed names exist already; pass --run-dir.")


def create_run_dir(project: Path, profile: str, run_dir: str | Path | None = None) -> Path:
    """The given folder (made if needed), or a new artifacts/<time>-<profile> no run has used."""
    folder = run_dir_path(project, profile, run_dir)
    check_run_dir(folder, given=run_dir is not None)
    return _make(folder, fresh=run_dir is None)


def _make(folder: Path, fresh: bool) -> Path:
    """Make the folder; a fresh one another run took meanwhile gets the next free suffix."""
    if not fresh:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunnerInputError(f"--run-dir {folder} cannot be made: {error}.") from None
        return folder
    for suffix in range(2, 1000):
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            stem = folder.name if suffix == 2 else folder.name.rsplit("-", 1)[0]
            folder = folder.with_name(f"{stem}-{suffix}")
    raise RunnerInputError(f"{folder} and 999 suffixed names exist already; pass --run-dir.")
