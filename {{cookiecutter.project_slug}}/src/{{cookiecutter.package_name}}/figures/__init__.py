"""Each step's figures, saved as PNG under run_dir/figures/ (names: artifacts.FIGURES).

A step calls `save` at its end with its metrics; every figure is drawn with matplotlib's Figure
directly (no pyplot, no backend state), so the CLI, the runner, a notebook and a test draw the
same file. A figure that cannot be drawn costs one printed sentence and no file, never the step.

    from <package> import figures
    metrics["figures"] = figures.save(run_dir, "train", metrics)   # ["figures/train_curves.png"]
    figures.show(run_dir, metrics, "train_curves")                  # in a notebook: the saved PNG

Modules, one per step: `environment`, `data`, `train`, `export`, `optimize`; `base` holds `save`
(a step whose figure reads files back, or an optional part, passes its own drawers: figures draw
the arrays handed to them and import no step), `show` displays the saved files.
"""

from .base import DRAWERS, draw, save
from .show import show

__all__ = ["DRAWERS", "draw", "save", "show"]
