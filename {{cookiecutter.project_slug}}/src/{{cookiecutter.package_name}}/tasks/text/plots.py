"""01's text figures: sample texts per class, the length distribution in tokens, class balance.

Drawn with matplotlib's Figure directly, like figures/data.py, from arrays the data step reads
back from the shards; the step passes them to figures.save as its drawers. With 77 classes a
grid per class is unreadable, so the samples are a table of a few classes, one text each, and
the balance is one bar per class, sorted, so the rare classes stand at one end (with many
classes, only the rarest and the most common, named legibly).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...figures import style

SAMPLE_CLASSES = 12  # rows of the sample table: evenly spaced over the classes
WRAP = 90  # characters per line of a sample text
SAMPLE_LINES = 2  # lines of a text shown; a longer one ends with "…"
BALANCE_CLASSES = 24  # more classes: the balance figure draws the rarest and most common half each


def plot_samples(
    texts: Sequence[str], labels: np.ndarray, classes: Sequence[str], path: Path
) -> Path | None:
    """A table: one training text for each of SAMPLE_CLASSES classes spread over all of them."""
    if not classes:
        return None
    picked = sorted({int(i) for i in np.linspace(0, len(classes) - 1, SAMPLE_CLASSES)})
    first = {}
    for text, label in zip(texts, labels, strict=True):
        first.setdefault(int(label), text)
    rows = [(classes[i], first[i]) for i in picked if i in first]
    if not rows:
        return None
    wrapped = [
        textwrap.wrap(text, WRAP, max_lines=SAMPLE_LINES, placeholder=" …") for _, text in rows
    ]
    lines = sum(len(w) for w in wrapped) + len(rows) * 0.6
    fig, (ax,) = style.new(11, 0.8 + 0.22 * lines)
    ax.set_axis_off()
    y, step = 1.0, 1.0 / lines
    for (name, _), text_lines in zip(rows, wrapped, strict=True):
        ax.text(0.0, y, name, va="top", ha="left", fontsize="small", weight="bold")
        ax.text(0.3, y, "\n".join(text_lines), va="top", ha="left", fontsize="small")
        y -= step * (len(text_lines) + 0.6)
    left_out = len(classes) - len(rows)
    more = f"; {left_out} more classes not shown" if left_out > 0 else ""
    fig.suptitle(f"Training texts as written to the shards (one per class{more})")
    return style.write(fig, path)


def plot_lengths(
    lengths: np.ndarray,
    max_tokens: int,
    boundaries: Sequence[int],
    path: Path,
    padding: tuple[float, float] | None = None,
) -> Path | None:
    """Tokens per training text before the cut, with max_tokens and the bucket lengths marked;
    `padding` (bucketed, padded to max_tokens) is the benchmark's share of padded tokens."""
    if not len(lengths):
        return None
    fig, (ax,) = style.new(9, 3.6)
    top = max(int(lengths.max()), max_tokens) + 1
    ax.hist(lengths, bins=np.arange(0, top + 1), color="tab:blue")
    for boundary in boundaries[:-1]:
        ax.axvline(boundary - 0.5, color=style.MUTED, linestyle=":", linewidth=1)
    ax.axvline(max_tokens + 0.5, color="tab:red", linestyle="--", label=f"max_tokens={max_tokens}")
    ax.plot([], [], color=style.MUTED, linestyle=":", label="bucket lengths (padded to)")
    cut = int(np.sum(lengths > max_tokens))
    ax.set_xlabel("tokens per text (after standardizing, before the cut)")
    ax.set_ylabel("training texts")
    ax.legend(fontsize="small")
    median = float(np.median(lengths))
    saved = (
        f"\npadding per epoch: {padding[0]:.0%} of the tokens in length buckets, "
        f"{padding[1]:.0%} padded to max_tokens"
        if padding
        else ""
    )
    fig.suptitle(
        f"Text lengths: median {median:g} tokens, longest {int(lengths.max())}; "
        f"{cut} of {len(lengths):,} truncated to max_tokens{saved}"
    )
    return style.write(fig, path)


def plot_class_balance(metrics: dict[str, Any], path: Path) -> Path | None:
    """Examples per class, one stacked bar per class (train, validation, test), sorted by train.
    With more than BALANCE_CLASSES classes only the BALANCE_CLASSES // 2 rarest and as many most
    common are drawn (the title says so): 77 names under 77 bars cannot be read at notebook size."""
    classes = [str(name) for name in metrics.get("classes") or []]
    per_class = metrics.get("per_class") or {}
    if not classes or "train" not in per_class:
        return None
    order = sorted(classes, key=lambda name: per_class["train"].get(name, 0))
    half = BALANCE_CLASSES // 2
    shown = order if len(order) <= BALANCE_CLASSES else [*order[:half], *order[-half:]]
    fig, (ax,) = style.new(9, 1.6 + 0.24 * len(shown))
    positions = np.arange(len(shown))[::-1]  # the rarest at the top
    left = np.zeros(len(shown))
    for split in ("train", "validation", "test"):
        if split not in per_class:
            continue
        counts = np.array([per_class[split].get(name, 0) for name in shown])
        total = sum(per_class[split].values())
        ax.barh(positions, counts, left=left, height=0.8, label=f"{split} ({total:,})")
        left += counts
    ax.set_yticks(positions, shown, fontsize="small")
    ax.set_ylim(-0.6, len(shown) - 0.4)
    if len(shown) < len(order):  # a line between the rarest and the most common
        ax.axhline(half - 0.5, color=style.MUTED, linestyle=":")
    ax.set_xlabel("examples")
    train = [per_class["train"].get(name, 0) for name in order]
    which = (
        f"\nthe {half} rarest and the {half} most common of {len(order)} classes shown"
        if len(shown) < len(order)
        else ""
    )
    fig.suptitle(
        f"Examples per class, sorted ({metrics.get('dataset', 'data')}): training "
        f"{min(train):,} to {max(train):,} per class, {max(train) / max(min(train), 1):.1f}× apart"
        f"{which}"
    )
    style.widen(ax)  # room on the right for the legend, clear of the longest bars
    ax.legend(fontsize="small", loc="lower right")
    return style.write(fig, path)
