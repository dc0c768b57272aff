"""What every figure shares: a new Figure, saving it, and numbers written short."""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

DPI = 100
BEST = "tab:green"  # the value a figure marks as the one chosen or the best
MUTED = "tab:gray"


def new(width: float = 7, height: float = 3.5, **subplots: int) -> tuple[Figure, list[Axes]]:
    """A constrained-layout Figure and its axes (one unless nrows/ncols say more), as a list."""
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(squeeze=False, **subplots)
    return fig, list(axes.flat)


def write(fig: Figure, path: Path) -> Path:
    """Save the figure as PNG at DPI and return the path."""
    fig.savefig(path, dpi=DPI)
    return path


def short(value: float) -> str:
    """1234567 -> 1.23M, 45321 -> 45.3k, 12.5 -> 12.5: a number for a label."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def bar_labels(ax: Axes, bars: object, texts: list[str]) -> None:
    """Write each text just past its horizontal bar's end, in small type."""
    ax.bar_label(bars, labels=texts, padding=3, fontsize="small")
    widen(ax)


def widen(ax: Axes) -> None:
    """Room on the right of the x axis for labels written past the bars."""
    low, high = ax.get_xlim()
    if ax.get_xscale() == "log":
        ax.set_xlim(low, high * 3)  # room for the labels on a log axis
    else:
        ax.set_xlim(low, high + 0.45 * (high - low))
