"""Progress from the steps, shaped for where it is read.

A step reports long work (TFRecord shards, the pipeline benchmark, search trials, training epochs,
int8 calibration, engine builds) through `line()` and `track()`. Every progress line starts with
MARK, which is how the runner tells them from a notebook's other output and forwards them to its
terminal or CI log while the notebook runs. `track()` draws a tqdm bar where a person watches it (a
terminal, a JupyterLab cell) and prints whole lines, at most one every LINE_EVERY seconds, where a
log reads it: CI, a redirected command, a notebook run by the runner (PROGRESS_ENV=lines).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

from .quiet import PACKAGE

MARK = "» "
PROGRESS_ENV = f"{PACKAGE.upper()}_PROGRESS"  # "lines" or "bar"; unset: decided by the output
LINE_EVERY = 10.0  # seconds between two progress lines of one task in line mode


def line(text: str) -> None:
    """One progress line, flushed at once: in the notebook, on the terminal, and in the runner."""
    print(f"{MARK}{text}", flush=True)


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
    started = last = time.perf_counter()
    shown: Iterable[Any] = items
    bar = bars()
    if bar:
        from tqdm.std import tqdm  # a text bar on stdout: no widget, nothing on stderr

        shown = tqdm(items, total=total, desc=what, unit=unit, file=sys.stdout, leave=False)
    count = 0
    for count, item in enumerate(shown, start=1):
        yield item
        now = time.perf_counter()
        if not bar and now - last >= LINE_EVERY and (total is None or count < total):
            line(f"{what}: {_fraction(count, total)} {unit}(s), {now - started:.1f} s")
            last = now
    line(f"{what}: {_fraction(count, total)} {unit}(s) in {time.perf_counter() - started:.1f} s")


def _fraction(count: int, total: int | None) -> str:
    return f"{count}/{total}" if total else str(count)


def _length(items: Iterable[object]) -> int | None:
    try:
        return len(items)  # type: ignore[arg-type]
    except TypeError:
        return None
