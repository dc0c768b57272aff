"""Progress from the steps, shaped for where it is read.

A step reports long work (TFRecord shards, the pipeline benchmark, search trials, the finders,
training steps, the optimize benchmark) through `line()`, `track()` and `task()`. Every progress
line starts with MARK, which is how the runner tells them from a notebook's other output and
forwards them to its terminal or CI log while the notebook runs. A task draws a tqdm bar where a
person watches it (a terminal, a JupyterLab cell) and prints whole lines where a log reads it
(CI, a redirected command, a notebook run by the runner: PROGRESS_ENV=lines).

A clock keeps a task moving while one item runs long (a training chunk, a model conversion): in
bar mode it redraws the bar every second (its elapsed time moves); in line mode it prints one line
every LINE_EVERY seconds, so a log is never silent for more than 10 s while a task runs, and a
task never prints more than one line per LINE_EVERY seconds.

A task whose first item includes a compile (compiles=True: a training epoch, whose first call
traces the step function) also prints a line the moment that item ends, and its grid of lines
starts again from there; its time left is told from the speed after that item, since the first
call's tracing (seconds on a CPU, minutes under XLA) says nothing of the steps that follow. So a
short epoch still shows a count inside it, and the first time left is not inflated by the compile.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from .quiet import PACKAGE

MARK = "» "
PROGRESS_ENV = f"{PACKAGE.upper()}_PROGRESS"  # "lines" or "bar"; unset: decided by the output
# Seconds between two lines of one task in line mode: under 10 s, because a line also takes a
# moment to travel from the kernel through the runner into the log, where the gap is judged.
LINE_EVERY = 9.5
REDRAW_EVERY = 1.0  # seconds between two redraws of a bar while nothing else moves it
_WRITE = threading.Lock()  # a clock's line and the step's own never share a line


_BARS: list[Any] = []  # the bars drawn now: a line is written above them, not into one


def line(text: str) -> None:
    """One progress line, flushed at once: in the notebook, on the terminal, and in the runner."""
    with _WRITE:
        # One write, a line whole even from two threads; over a bar, "\r" and blanks clear it
        # first, in the same write (a notebook applies "\r" only within what arrives together).
        width = max((len(str(bar)) for bar in _BARS), default=0)
        clear = f"\r{' ' * width}\r" if width else ""
        sys.stdout.write(f"{clear}{MARK}{text}\n")
        sys.stdout.flush()
        for bar in _BARS:  # drawn again, under the line
            bar.refresh()


def starting(what: str, about: str = "") -> None:
    """One line saying what starts now, before work that prints nothing of its own for seconds
    (a SavedModel save, a baseline fit, data written to shards): a notebook cell would otherwise
    sit silent, with no bar, for that long. `about`: how long it usually takes."""
    line(f"{what} …" + (f" ({about})" if about else ""))


def bars() -> bool:
    """True where a bar is watched: a terminal, or a Jupyter kernel the runner did not start."""
    chosen = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if chosen in {"lines", "bar"}:
        return chosen == "bar"
    return _in_jupyter() or sys.stdout.isatty()


def _in_jupyter() -> bool:
    """True inside a Jupyter kernel's shell (not merely where IPython was imported)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def track(
    items: Iterable[Any], total: int | None = None, what: str = "", unit: str = "item"
) -> Iterator[Any]:
    """Yield items while showing progress: a bar (bars()) or whole lines, then one summary line."""
    total = total if total is not None else _length(items)
    with task(what, total=total, unit=unit) as progress:
        for item in items:
            yield item
            progress.update()


class Task:
    """Long work with a bar or lines kept moving by a clock; `update(n)` counts, `note(text)` says
    what runs now. As a context manager it ends with one summary line (`done` adds to it; none
    with summary=False, where the step prints its own result). shown=False: all of it silent.
    unit="": nothing to count, only the time (`with task("Loading TensorFlow", unit=""):`).
    start: already counted before this task (a resumed epoch's steps), not timed by it.
    compiles: the first item includes a compile (a line when it ends, time left after it)."""

    def __init__(
        self,
        what: str,
        total: int | None = None,
        unit: str = "item",
        *,
        shown: bool = True,
        summary: bool = True,
        start: int = 0,
        compiles: bool = False,
    ) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.compiles = compiles
        self.compiled: tuple[float, int] | None = None  # when, and at what count, item 1 ended
        self.count, self.now, self.done = start, "", ""
        self.start = start  # counted before this task began (a resumed epoch): not its speed
        self.shown, self.summary = shown, summary
        self.started = time.perf_counter()
        self.bar: Any = None
        if shown and bars():
            from tqdm.std import tqdm  # a text bar on stdout: no widget, nothing on stderr

            timed = "{desc}: {elapsed}{postfix}" if not unit else None  # nothing to count
            self.bar = tqdm(
                total=total,
                desc=what,
                unit=unit,
                file=sys.stdout,
                leave=False,
                bar_format=timed,
                initial=start,
            )
            _BARS.append(self.bar)
        self._stop = threading.Event()
        self._clock = threading.Thread(target=self._tick, name=f"progress: {what}", daemon=True)
        if shown:
            self._clock.start()

    def update(self, count: int = 1) -> None:
        self.count += count
        if self.bar is not None:
            self.bar.update(count)
        if self.compiles and self.compiled is None and count > 0:
            self.compiled = (time.perf_counter(), self.count)
            if self.shown and self.bar is None and not self._stop.is_set():
                line(f"{self.status()}; the first call and its compile done, the time left follows")

    def note(self, text: str) -> None:
        """What runs now: the bar's postfix, or the end of the next clock line."""
        self.now = text
        if self.bar is not None:
            self.bar.set_postfix_str(text[:60], refresh=True)

    def close(self, ended: str = "done") -> None:
        """Stop the clock and the bar; print the summary line (`ended`: what an uncounted task
        says of itself, "stopped" or "failed" when the block ended in an exception)."""
        if not self.shown or self._stop.is_set():
            return
        self._stop.set()
        self._clock.join()
        if self.bar is not None:
            self.bar.close()
            _BARS.remove(self.bar)
        if not self.summary:
            return
        seconds = time.perf_counter() - self.started
        counted = f"{_fraction(self.count, self.total)} {self.unit}(s)" if self.unit else ended
        line(f"{self.what}: {counted} in {seconds:.1f} s" + (f"; {self.done}" if self.done else ""))

    def status(self) -> str:
        """The clock's line: count, elapsed time, the time left where it can be told, what runs."""
        seconds = time.perf_counter() - self.started
        counted = f"{_fraction(self.count, self.total)} {self.unit}(s), " if self.unit else ""
        text = f"{self.what}: {counted}{seconds:.0f} s"
        since, ran = seconds, self.count - self.start
        if self.compiles:  # timed from the end of the first item; no time left before it
            ended, at = self.compiled or (0.0, self.count)
            since, ran = time.perf_counter() - ended, self.count - at
        if self.total and ran > 0 and self.count < self.total:
            text += f", ~{since / ran * (self.total - self.count):.0f} s left"
        return text + (f" ({self.now})" if self.now else "")

    def _tick(self) -> None:
        beat, grid = 0, self.started
        while True:
            beat += 1
            every = max(0.01, REDRAW_EVERY if self.bar is not None else LINE_EVERY)
            wait = grid + beat * every - time.perf_counter()  # a fixed beat: no drift
            if self._stop.wait(max(0.0, wait)):
                return
            if self.bar is None and self.compiled and self.compiled[0] > grid:
                beat, grid = 0, self.compiled[0]  # the first item's line started a new grid
                continue
            if self.bar is not None:
                self.bar.refresh()
            else:
                line(self.status())

    def __enter__(self) -> Task:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        # "Loading TensorFlow: done" after a Ctrl-C that stopped the loading said the opposite.
        if kind is None:
            self.close()
        else:
            self.close("stopped" if issubclass(kind, KeyboardInterrupt) else "failed")


task = Task  # for a `with` block: `with progress.task("Optimize", 8, "benchmark") as work:`


def _fraction(count: int, total: int | None) -> str:
    return f"{count}/{total}" if total else str(count)


def _length(items: Iterable[object]) -> int | None:
    try:
        return len(items)  # type: ignore[arg-type]
    except TypeError:
        return None
