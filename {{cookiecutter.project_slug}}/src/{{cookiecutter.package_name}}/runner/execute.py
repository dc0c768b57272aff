"""Execute one notebook so that no attempt ever erases the record of a success.

papermill writes into a hidden `notebooks/.<name>.running.ipynb`; only a success replaces
`notebooks/<name>.ipynb`, so that file is always the latest success. A failed or interrupted
attempt is kept beside it as `notebooks/<name>.failed-<n>.ipynb`, with its error.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..artifacts import NOTEBOOKS_DIR
from .kernels import KERNEL, Ahead, kernel_manager
from .live import NotebookProgress, papermill, register
from .plan import literal
from .profile import one_line
from .terminate import ForwardTerm, Terminated


class NotebookFailed(RuntimeError):
    """A notebook stopped the chain; its executed copy, with the error, stays in the run folder."""

    def __init__(self, message: str, notebook: str, executed: Path | None, run_dir: Path) -> None:
        super().__init__(message)
        self.notebook = notebook
        self.executed = executed
        self.run_dir = run_dir


def execute(
    source: Path,
    attempt: dict[str, Any],
    folder: Path,
    live: NotebookProgress | None = None,
    ahead: Ahead | None = None,
) -> None:
    """Run one notebook with papermill into the run folder, updating its attempt in place.

    The kernel's stderr (TensorFlow's C++ log, a crash report) goes to <name>.kernel.log rather
    than between the progress lines; ipykernel also copies what cells write there into the notebook.
    `live` shows the notebook's progress (runner/live.py). Raises NotebookFailed for an error, and
    re-raises KeyboardInterrupt after recording it. `ahead`: this notebook's kernel, started
    while the previous notebook ran (runner/kernels.py); it is stopped when the notebook ends.
    """
    name = attempt["notebook"]
    live = live or NotebookProgress(1, 1, name)
    notebooks = folder / NOTEBOOKS_DIR
    notebooks.mkdir(parents=True, exist_ok=True)
    running = notebooks / f".{name}.running.ipynb"
    running.unlink(missing_ok=True)
    attempt["executed"] = f"{NOTEBOOKS_DIR}/{running.name}"
    started = time.perf_counter()
    forward = ForwardTerm()  # SIGTERM to the runner: the kernel saves and stops (terminate.py)
    try:
        with forward, (folder / attempt["kernel_log"]).open("ab") as kernel_log:
            if ahead is not None:  # papermill uses it, and leaves it running: closed below
                forward.kernels.append(ahead.manager)
            _execute(
                forward,
                literal(source),
                literal(running),
                parameters=attempt["parameters"],
                kernel_name=KERNEL,
                cwd=str(source.parent),
                progress_bar=False,
                kernel_manager_class=kernel_manager(kernel_log, forward.kernels),
                km=ahead and ahead.manager,
                engine_name=register(),
                live=live,
                # Kill the kernel when the last cell is done instead of asking it to exit: a
                # TensorFlow kernel takes 1-4 s to shut down, and every file a step writes is
                # complete (renamed into place, writers flushed) when its cell returns.
                shutdown_kernel="immediate",
            )
    except Exception as error:
        kept = keep_failed(folder, name, running)
        _finish(attempt, "failed", started, kept, describe(error))
        live.finish("FAILED", attempt["seconds"])
        message = _failure_message(name, error, folder, kept, attempt["kernel_log"])
        raise NotebookFailed(message, name, kept and folder / kept, folder) from error
    except BaseException as error:  # KeyboardInterrupt (Ctrl-C), SystemExit
        kept = keep_failed(folder, name, running)
        cell = _running_cell(folder / kept) if kept else None
        _finish(attempt, "interrupted", started, kept, describe(error, cell))
        live.finish("interrupted", attempt["seconds"])
        raise
    finally:
        if ahead is not None:
            ahead.close()
    success = f"{NOTEBOOKS_DIR}/{name}.ipynb"
    os.replace(running, folder / success)
    _finish(attempt, "ok", started, success, None)
    live.finish("ok", attempt["seconds"])


def _execute(forward: ForwardTerm, *args: Any, **kwargs: Any) -> None:
    """papermill.execute_notebook; a cell that failed because SIGTERM reached the kernel raises
    Terminated (an interruption, not a failure)."""
    try:
        papermill.execute_notebook(*args, **kwargs)
    except Exception as error:
        if forward.received:
            raise Terminated(f"SIGTERM: {describe(error)['evalue']}") from error
        raise


def keep_failed(folder: Path, name: str, running: Path) -> str | None:
    """Move an unfinished executed copy to notebooks/<name>.failed-<n>.ipynb (n counts up)."""
    if not running.is_file():
        return None
    pattern = re.compile(rf"{re.escape(name)}\.failed-(\d+)\.ipynb")
    taken = [int(m[1]) for p in running.parent.iterdir() if (m := pattern.fullmatch(p.name))]
    kept = f"{NOTEBOOKS_DIR}/{name}.failed-{max(taken, default=0) + 1}.ipynb"
    os.replace(running, folder / kept)
    return kept


def describe(error: BaseException, cell: tuple[int | None, int] | None = None) -> dict[str, Any]:
    """The error, for run.json: the cell (execution count and index) and what was raised."""
    if isinstance(error, papermill.PapermillExecutionError):
        cell = (error.exec_count, error.cell_index)
    return {
        "cell": cell[0] if cell else None,
        "cell_index": cell[1] if cell else None,
        "ename": getattr(error, "ename", type(error).__name__),
        "evalue": getattr(error, "evalue", str(error)),
    }


def _finish(
    attempt: dict[str, Any],
    status: str,
    started: float,
    executed: str | None,
    error: dict[str, Any] | None,
) -> None:
    attempt.update(
        status=status,
        seconds=round(time.perf_counter() - started, 3),
        finished=datetime.now().astimezone().isoformat(timespec="seconds"),
        executed=executed,
        error=error,
    )


def _failure_message(
    name: str, error: Exception, folder: Path, kept: str | None, kernel_log: str
) -> str:
    """Which notebook, which cell, what was raised, where the failed copy and the success are."""
    where = (
        f"The failed attempt is kept at {folder / kept}"
        if kept
        else f"No executed notebook was written; the kernel's messages are in {folder / kernel_log}"
    )
    success = folder / NOTEBOOKS_DIR / f"{name}.ipynb"
    if success.is_file():
        where += f"; the earlier success is still at {success}"
    if isinstance(error, papermill.PapermillExecutionError):
        first = next((line for line in error.source.splitlines() if line.strip()), "")
        cell = f"[{error.exec_count}]" if error.exec_count is not None else f"#{error.cell_index}"
        what = (
            f"{name} failed in cell {cell} `{one_line(first, 60)}` with "
            f"{error.ename}: {_sentence(one_line(error.evalue, 300))}"
        )
    else:
        what = f"{name} stopped: {type(error).__name__}: {_sentence(one_line(error, 300))}"
    return f"{what} {where}."


def _running_cell(path: Path) -> tuple[int | None, int] | None:
    """The last cell that started in an interrupted copy: (execution count, index).

    nbclient marks the interrupted cell completed when it shuts the kernel down, so the last
    cell with a start time is the one that was running.
    """
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        started = [
            (cell.get("execution_count"), index)
            for index, cell in enumerate(cells)
            if cell.get("metadata", {}).get("papermill", {}).get("start_time")
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return started[-1] if started else None


def _sentence(text: str) -> str:
    """Text ending in one full stop, whether or not it had one."""
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."
