"""03's figure: the learning curves, from metrics/train.json's per-epoch history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.ticker import MaxNLocator

from . import style


def plot_curves(metrics: dict[str, Any], path: Path) -> Path | None:
    """Loss and accuracy per epoch, train and validation; the best epoch (lowest validation loss)
    marked, and its validation accuracy in the title."""
    history = metrics.get("history") or []
    if not history:
        return None
    epochs = [record["epoch"] for record in history]
    fig, axes = style.new(10, 3.6, ncols=2)
    best = metrics.get("best_epoch")
    for ax, name in zip(axes, ("loss", "accuracy"), strict=True):
        ax.plot(epochs, [record[name] for record in history], "o-", label="train")
        ax.plot(epochs, [record[f"val_{name}"] for record in history], "o-", label="validation")
        if best in epochs:
            ax.axvline(best, color=style.BEST, linestyle=":", label=f"best epoch ({best})")
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(name if name == "accuracy" else "loss (cross-entropy)")
        ax.legend(fontsize="small")
    axes[0].set_title("Loss (lower is better)")
    axes[1].set_title("Accuracy (higher is better)")
    val = metrics.get("val_accuracy")
    headline = f": validation accuracy {val:.4f}" if isinstance(val, float) else ""
    model = metrics.get("model", "the model")
    count = f"{len(epochs)} epoch" + ("" if len(epochs) == 1 else "s")
    fig.suptitle(f"Learning curves of {model}, {count}{headline}")
    return style.write(fig, path)
