"""04's figures: what the exported SavedModel gets wrong, from its answers in the parity check.

They come from the fresh process that reloaded the export (metrics/export.json: confusion_matrix,
misclassified), so they show the model a server will run, not the Keras object that trained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import style

MATRIX_CLASSES = 30  # more classes than this: the most confused pairs instead of the matrix


def plot_confusion(metrics: dict[str, Any], classes: list[str], path: Path) -> Path | None:
    """The confusion matrix as counts (true class down, predicted across), the diagonal green."""
    matrix = np.array(metrics.get("confusion_matrix") or [])
    if matrix.size == 0:
        return None
    if len(classes) > MATRIX_CLASSES:  # a 77 x 77 matrix is unreadable: the pairs it would show
        return plot_confused_pairs(matrix, metrics, classes, path)
    size = max(4.0, 0.45 * len(classes) + 2)
    fig, (ax,) = style.new(size + 1, size)
    shown = ax.imshow(matrix, cmap="Blues")
    split = metrics.get("parity_split", "validation")
    fig.colorbar(shown, ax=ax, shrink=0.8, label=f"{split} examples")
    ax.set_xticks(range(len(classes)), classes, rotation=90 if len(classes) > 10 else 0)
    ax.set_yticks(range(len(classes)), classes)
    high = matrix.max() or 1
    for (row, column), count in np.ndenumerate(matrix):
        if count:
            color = style.BEST if row == column else "tab:red"
            color = "white" if count > 0.6 * high else color
            ax.text(
                column, row, str(count), ha="center", va="center", fontsize="small", color=color
            )
    ax.set_xlabel("predicted class (the SavedModel's class_ids)")
    ax.set_ylabel("true class")
    accuracy = metrics.get("served_accuracy")
    said = f": accuracy {accuracy:.2%}" if isinstance(accuracy, float) else ""
    fig.suptitle(  # over the whole figure, on two lines: one line is wider than a 2-class figure
        f"Confusion matrix of export/{metrics.get('version')}\n"
        f"on {int(matrix.sum())} {split} examples{said}"
    )
    return style.write(fig, path)


def plot_confused_pairs(
    matrix: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Path, top: int = 20
) -> Path | None:
    """The `top` (true → predicted) pairs the export confuses most, as bars: what a confusion
    matrix of many classes holds, in a form that reads."""
    wrong = matrix.copy()
    np.fill_diagonal(wrong, 0)
    order = np.argsort(-wrong, axis=None, kind="stable")[:top]
    pairs = [divmod(int(flat), len(classes)) for flat in order if wrong.flat[flat]]
    if not pairs:
        return None
    fig, (ax,) = style.new(10, 0.32 * len(pairs) + 1.4)
    labels = [f"{classes[true]} → {classes[said]}" for true, said in pairs][::-1]
    ax.barh(labels, [wrong[pair] for pair in pairs][::-1], color="tab:red")
    ax.tick_params(axis="y", labelsize="small")
    ax.set_xlabel("examples: true class → the SavedModel's answer")
    split, accuracy = metrics.get("parity_split", "validation"), metrics.get("served_accuracy")
    said = f", accuracy {accuracy:.2%}" if isinstance(accuracy, float) else ""
    fig.suptitle(  # over the whole figure: the long class names take most of the axes' width
        f"export/{metrics.get('version')}: the {len(pairs)} pairs most confused on "
        f"{int(matrix.sum())} {split} examples{said}"
    )
    return style.write(fig, path)


def images_needed(metrics: dict[str, Any]) -> int:
    """How many of the split's first examples plot_misclassified shows from (0: none)."""
    return max((item["index"] + 1 for item in metrics.get("misclassified") or []), default=0)
