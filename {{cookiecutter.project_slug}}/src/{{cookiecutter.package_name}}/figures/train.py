"""03's figure: the learning curves, from metrics/train.json's per-epoch history, and beside them
the learning rate the optimizer used (learning_rates_per_step): the warmup ramp, the cosine decay,
the drop when fine-tuning starts."""

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
    rates = metrics.get("learning_rates_per_step") or []
    fig, axes = style.new(15 if rates else 10, 3.6, ncols=3 if rates else 2)
    best = metrics.get("best_epoch")
    for ax, name in zip(axes[:2], ("loss", "accuracy"), strict=True):
        ax.plot(epochs, [record[name] for record in history], "o-", label="train")
        ax.plot(epochs, [record[f"val_{name}"] for record in history], "o-", label="validation")
        if best in epochs:
            ax.axvline(best, color=style.BEST, linestyle=":", label=f"best epoch ({best})")
        ax.set_xlabel("epoch")
        # min_n_ticks=1: one epoch gets the tick 1, not 0.96, 0.975, ... around it
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_ylabel(name if name == "accuracy" else "loss (cross-entropy)")
        ax.legend(fontsize="small")
    axes[0].set_title("Loss (lower is better)")
    axes[1].set_title("Accuracy (higher is better)")
    if rates:
        _plot_rates(axes[2], metrics, rates)
    val = metrics.get("val_accuracy")
    headline = f": validation accuracy {val:.4f}" if isinstance(val, float) else ""
    model = metrics.get("model", "the model")
    count = f"{len(epochs)} epoch" + ("" if len(epochs) == 1 else "s")
    fig.suptitle(f"Learning curves of {model}, {count}{headline}")
    return style.write(fig, path)


def _plot_rates(ax, metrics: dict[str, Any], rates: list[float]) -> None:
    """The learning rate per step, against epochs; the phases' boundary marked."""
    stride = metrics.get("learning_rates_step_stride") or 1
    steps = max(1, metrics.get("steps_per_epoch") or 1)
    ax.plot([index * stride / steps for index in range(len(rates))], rates, "-")
    frozen = (metrics.get("phases") or {}).get("frozen")
    if frozen:
        ax.axvline(max(frozen), color=style.BEST, linestyle=":", label="backbone unfrozen")
        ax.legend(fontsize="small")
    ax.set_xlabel("epoch")
    ax.set_ylabel("learning rate")
    ax.set_ylim(bottom=0)  # a constant rate is a flat line, not 0.0018 … 0.002 in eight ticks
    schedule = metrics.get("schedule") or {}
    warmup = schedule.get("warmup_epochs")
    ax.set_title(
        f"Learning rate: {schedule.get('name', 'constant')}"
        + (f", {warmup} warmup epoch(s)" if warmup else "")
    )


def plot_schedules(rates: dict[str, list[float]], steps_per_epoch: int, path: Path) -> Path:
    """Several learning-rate plans side by side (notebook 03): the rate of every step, by epoch."""
    fig, (ax,) = style.new(8, 3.4)
    for label, values in rates.items():
        ax.plot(
            [step / max(1, steps_per_epoch) for step in range(len(values))], values, label=label
        )
    ax.set_xlabel("epoch")
    ax.set_ylabel("learning rate")
    ax.legend(fontsize="small")
    ax.set_title("Learning-rate plans: warmup, cosine decay, and fine-tuning after a frozen phase")
    return style.write(fig, path)
