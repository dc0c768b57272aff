"""Showing a step's saved figures in a notebook: the PNG files the step wrote, not a redraw."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..artifacts import resolve_run_dir


def show(run_dir: str | os.PathLike[str], metrics: dict[str, Any], *names: str) -> None:
    """Display figures/<name>.png for each name the step's metrics list (all when none named);
    a figure the step did not draw is one printed sentence. Returns None, so a cell that ends
    with it shows the figures only, not a list of paths echoed under them."""
    from IPython.display import Image, display  # only a notebook shows images

    folder = resolve_run_dir(run_dir, create=False)
    listed = {Path(relative).stem: folder / relative for relative in metrics.get("figures", [])}
    for name in names or tuple(listed):
        path = listed.get(name)
        if path is None or not path.is_file():
            print(f"No figure {name}: the step did not draw it (its output said why).")
            continue
        display(Image(filename=str(path)))
