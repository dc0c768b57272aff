"""What the runner shows while a notebook runs: cell k of n, the time, the notebook's own progress.

Each notebook opens with its header line (`[2/6] 01_data …`) and closes with its result; its own
progress lines (progress.MARK) come between the two. On a terminal a tqdm bar per notebook (cells
done, elapsed, the running cell) stays below them while it runs. Elsewhere (CI, a redirected log)
only whole lines: the notebook's progress lines as they come, one line per cell that took SLOW_CELL
seconds or more, and the notebook's result. The kernels print progress as lines too
(progress.PROGRESS_ENV), so an executed notebook holds no bar either.

papermill is imported here without the optional modules it loads and no run uses. They took
1.9-3.5 s of the seconds before the first notebook on a quiet 2-core CPU (6-10 s under load):
jsonschema's IRI format checker (`rfc3987_syntax` builds a grammar on import; nbformat imports
jsonschema) and papermill's `gs://` and `hdfs://` handlers (`gcsfs`, `pyarrow`). Hidden while
papermill loads, each is skipped as if not installed; a run folder is a local path and nbformat
validates no IRI. They are importable again afterwards (a table task uses pyarrow).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ..progress import MARK

UNUSED = ("rfc3987_syntax", "gcsfs", "pyarrow")


@contextlib.contextmanager
def hidden(names: tuple[str, ...] = UNUSED) -> Iterator[None]:
    """Each of `names` not loaded yet fails to import inside the block, and imports after it."""
    held = [name for name in names if name not in sys.modules]
    for name in held:
        sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        for name in held:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


with hidden():
    import papermill  # noqa: F401  (execute.py's, from here)
    from papermill import engines

SLOW_CELL = 2.0  # seconds: in line mode, a cell this slow gets its own line
# In line mode, a cell that printed nothing for this long gets a line saying it still runs (a
# kernel starting, TensorFlow loading, a step without a progress task); just above the kernel's
# own LINE_EVERY, so a task's lines come first and a log is never silent for more than 10 s.
SILENT = 9.8
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
        self.last = time.monotonic()  # when a line or the bar was last printed
        self.running = ""  # the running cell's first line
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.clock: threading.Thread | None = None

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
        self.running = next((text for text in source.splitlines() if text.strip()), "")
        if self.clock is None:  # keeps a silent cell visible: see _keep_moving
            self.clock = threading.Thread(target=self._keep_moving, daemon=True)
            self.clock.start()
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
        self.stop.set()
        if self.clock is not None:
            self.clock.join()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self._print(f"{self.title} … {outcome} ({seconds:.1f} s)")

    def _print(self, text: str) -> None:
        with self.lock:
            self.last = time.monotonic()
            if self.bar is not None:
                self.bar.write(text, file=self.out)
            else:
                print(text, file=self.out, flush=True)

    def _keep_moving(self) -> None:
        """On a terminal, redraw the bar each second (its elapsed time moves); in line mode,
        a line for a cell that printed nothing for SILENT seconds."""
        while not self.stop.wait(1.0 if self.bar is not None else 0.1):
            if self.bar is not None:
                with self.lock:
                    self.bar.refresh()
            elif time.monotonic() - self.last >= SILENT:
                seconds = time.perf_counter() - self.cell_started
                where = f"cell {self.current}/{self.cells} still running ({seconds:.0f} s)"
                self._print(f"    {where}: {self.running[:70]}")


class _Manager(engines.NotebookExecutionManager):
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


class LiveEngine(engines.NBClientEngine):
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
    engines.papermill_engines.register(ENGINE, LiveEngine)
    return ENGINE
