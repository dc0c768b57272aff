"""01's figures, from metrics/data.json: the pipeline benchmark and the class counts (each task
draws its own examples: tasks/<folder>/plots.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.patches import Patch

from . import style

MUTED_ROWS = ("naive", "(batch before parse instead)")  # the baseline, and a regime not used


def plot_throughput(metrics: dict[str, Any], path: Path) -> Path | None:
    """examples/s of the naive pipeline and of each stage added (steady state as bars, the cold
    first epoch as a tick), each bar labelled with its rate and its speed-up over naive, and the
    decode-only pipeline (all cores decoding from memory, nothing else: a reference, not a
    bound) as a dashed line."""
    rows = metrics.get("steps") or _two_rows(metrics)
    if not rows:
        return None
    rows = rows[::-1]  # naive at the top
    fig, (ax,) = style.new(8, 1.7 + 0.45 * len(rows))
    names = [row.get("label", row["name"]) for row in rows]  # tables: "CSV text", "Parquet"
    steady = [row["examples_per_sec"] for row in rows]
    colors = [style.MUTED if row["name"] in MUTED_ROWS else "tab:blue" for row in rows]
    colors[0] = style.BEST  # the last stage: the pipeline training uses
    first = [row["first_epoch_examples_per_sec"] for row in rows]
    ax.barh(names, steady, color=colors)
    ax.scatter(
        first,
        names,
        color="black",
        marker="|",
        s=200,
        zorder=3,
        label="first epoch (cold)",
    )
    limit = metrics.get("decode_only_examples_per_sec")
    if limit:  # the decode alone, from memory: where reading and parsing would leave a cold epoch
        ax.axvline(limit, color="tab:red", linestyle="--", label="decode only, all cores")
    if max(steady + first) > 20 * max(min(steady + first), 1e-9):
        ax.set_xscale("log")
    for name, rate, start, row in zip(names, steady, first, rows, strict=True):
        ax.annotate(  # past the bar or the first-epoch tick, whichever ends later
            f"{style.short(rate)}/s"
            + ("" if row.get("speedup_vs_naive") is None else f"  ×{row['speedup_vs_naive']:.1f}"),
            (max(rate, start), name),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    style.widen(ax)
    ax.set_xlabel("training examples/s (higher is faster)")
    cold = metrics.get("cold_vs_decode_only")
    ratio = (
        ("within noise, " if metrics.get("within_noise") else "") + "too briefly timed to compare"
        if metrics.get("too_short") or metrics.get("speedup_vs_naive") is None
        else f"{metrics['speedup_vs_naive']:.1f}× the naive one"
    )
    fig.suptitle(
        metrics.get("figure_title")  # a task whose benchmark is not a pipeline names it itself
        or f"Input pipeline: {ratio}"
        + (
            f", cold epoch {cold:.0%} of decoding only ({metrics['cpu_count']} CPU cores)"
            if cold
            else f" (batch {metrics['batch_size']}, {metrics['cpu_count']} CPU cores)"
        )
    )
    handles = [
        Patch(color="tab:blue", label="steady state"),
        Patch(color=style.BEST, label="steady state, as training reads"),
        *ax.get_legend_handles_labels()[0],
    ]
    if len(rows) < 3:  # no intermediate stage: no blue bar to explain
        handles = handles[1:]
    # Below the axes, not over them: inside, it covered the value labels written past the bars.
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small")
    return style.write(fig, path)


def plot_classes(metrics: dict[str, Any], path: Path) -> Path | None:
    """Examples per class, every split side by side (train, validation, and test if held out)."""
    classes = [str(name) for name in metrics.get("classes") or []]
    if not classes:
        return None
    positions = np.arange(len(classes))
    fig, (ax,) = style.new(max(6, 0.45 * len(classes)), 3.2)
    splits = [split for split in ("train", "validation", "test") if split in metrics["per_class"]]
    width = 0.8 / len(splits)
    for index, split in enumerate(splits):
        counts = [metrics["per_class"][split].get(name, 0) for name in classes]
        offset = (index - (len(splits) - 1) / 2) * width
        ax.bar(positions + offset, counts, width=width, label=f"{split} ({sum(counts):,})")
    ax.set_xticks(
        positions,
        classes,
        rotation=45 if len(classes) > 10 else 0,
        ha="right" if len(classes) > 10 else "center",
    )
    ax.set_xlabel("class")
    ax.set_ylabel("examples")
    fig.suptitle(f"Examples per class in each split ({metrics.get('dataset', 'data')})")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.2)  # room for the legend above the bars
    ax.legend(fontsize="small", ncols=len(splits), loc="upper center")
    return style.write(fig, path)


def _two_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """naive and configured from a benchmark run without `steps`."""
    if "naive_examples_per_sec" not in metrics:
        return []
    return [
        {
            "name": "naive",
            "examples_per_sec": metrics["naive_examples_per_sec"],
            "first_epoch_examples_per_sec": metrics["naive_first_epoch_examples_per_sec"],
            "speedup_vs_naive": None if metrics["speedup_vs_naive"] is None else 1.0,
        },
        {
            "name": "configured",
            "examples_per_sec": metrics["examples_per_sec"],
            "first_epoch_examples_per_sec": metrics["first_epoch_examples_per_sec"],
            "speedup_vs_naive": metrics["speedup_vs_naive"],
        },
    ]
