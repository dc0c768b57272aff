"""What the runner shows while a notebook runs: cell k of n, the time, the notebook's own progress.

Each notebook opens with its header line (`[2/6] 01_data …`) and closes with its result; its own
progress lines (progress.MARK) come between the two. On a terminal a tqdm bar per notebook (cells
done, elapsed, the running cell) stays below them while it runs. Elsewhere (CI, a redirected log)
only whole lines: the notebook's progress lines as they come, one line per cell that took SLOW_CELL
seconds or more, and the notebook's result. The kernels print progress as lines too
(progress.PROGRESS_ENV), so an executed notebook holds no bar either.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from papermill.engines import NBClientEngine, NotebookExecutionManager

from ..progress import MARK

SLOW_CELL = 2.0  # seconds: in line mode, a cell this slow gets its own line
ENGINE = "project-live"


class NotebookProgress:
    """The progress of one notebook of the chain (number of total), on `out`."""

    def __init__(self, number: int, total: int, name: str, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty()
        self.title = f"[{number}/{total}] {name}"
        self.bar: Any = None
        self.cells = 0  # code cells in the notebook
        self.current = 0  # the code cell running now, counted from 1
        self.cell_started = 0.0
        self.partial = ""  # the start of a progress line whose end has not arrived

    def start(self, cells: int) -> None:
        """The notebook's header line first, so its progress lines print under it, not under
        the previous notebook's result; on a terminal its bar then moves below them."""
        self.cells = cells
        self._print(f"{self.title} …")
        if self.tty:
            from tqdm.std import tqdm

            self.bar = tqdm(total=cells, desc=self.title, unit="cell", file=self.out, leave=False)

    def cell_start(self, source: str) -> None:
        self.current += 1
        self.cell_started = time.perf_counter()
        if self.bar is not None:
            first = next((text for text in source.splitlines() if text.strip()), "")
            self.bar.set_postfix_str(first[:40], refresh=True)

    def cell_complete(self, source: str) -> None:
        seconds = time.perf_counter() - self.cell_started
        if self.bar is not None:
            self.bar.update(1)
        elif seconds >= SLOW_CELL:
            first = next((text for text in source.splitlines() if text.strip()), "")
            self._print(f"    cell {self.current}/{self.cells} ({seconds:.1f} s): {first[:70]}")

    def write(self, text: str) -> None:
        """papermill's stdout_file: forward the notebook's progress lines as they arrive."""
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            line = line.rsplit("\r", 1)[-1]
            if line.startswith(MARK):
                self._print(f"    {line}")

    def flush(self) -> None:
        self.out.flush()

    def finish(self, outcome: str, seconds: float) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self._print(f"{self.title} … {outcome} ({seconds:.1f} s)")

    def _print(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.out)
        else:
            print(text, file=self.out, flush=True)


class _Manager(NotebookExecutionManager):
    """papermill's execution manager, telling a NotebookProgress about each cell."""

    def __init__(self, *args: Any, live: NotebookProgress, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.live = live

    def cell_start(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
        super().cell_start(cell, cell_index, **kwargs)
        if cell.cell_type == "code":
            self.live.cell_start(cell.source)

    def cell_complete(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
        super().cell_complete(cell, cell_index, **kwargs)
        if cell.cell_type == "code":
            self.live.cell_complete(cell.source)


class LiveEngine(NBClientEngine):
    """nbclient, as papermill runs it, with a NotebookProgress (the `live` keyword) attached."""

    @classmethod
    def execute_notebook(  # type: ignore[override]
        cls,
        nb: Any,
        kernel_name: str,
        output_path: str | None = None,
        progress_bar: bool = False,
        log_output: bool = False,
        autosave_cell_every: int = 30,
        *,
        live: NotebookProgress,
        **kwargs: Any,
    ) -> Any:
        manager = _Manager(
            nb,
            output_path=output_path,
            progress_bar=False,
            log_output=log_output,
            autosave_cell_every=autosave_cell_every,
            live=live,
        )
        live.start(sum(cell.cell_type == "code" for cell in nb.cells))
        manager.notebook_start()
        try:
            kwargs["stdout_file"] = live
            cls.execute_managed_notebook(manager, kernel_name, log_output=log_output, **kwargs)
        finally:
            manager.notebook_complete()
        return manager.nb


def register() -> str:
    """Register the engine with papermill (once) and return its name."""
    from papermill.engines import papermill_engines

    papermill_engines.register(ENGINE, LiveEngine)
    return ENGINE
