"""The image task's figures: a grid of training images (01) and the export's most confident
mistakes (04), drawn from uint8 images the steps read back from the shards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ...figures import style

MAX_CLASSES_SHOWN = 20  # rows of the sample grid; more classes are left out, and the title says so
SAMPLES_PER_CLASS = 8


def plot_samples(
    images: np.ndarray, labels: np.ndarray, metrics: dict[str, Any], path: Path
) -> Path | None:
    """A grid of training images (the data step reads them back from the shards, up to
    SAMPLES_PER_CLASS of each class): one row per class."""
    classes = [str(name) for name in metrics.get("classes") or []]
    if not classes:
        return None
    return draw_samples(images, labels, classes, path)


def draw_samples(images: np.ndarray, labels: np.ndarray, classes: list[str], path: Path) -> Path:
    """The grid itself, from uint8 images (N, H, W, C) and their labels: one mosaic, one imshow
    (80 small axes take seconds to draw; one image takes a tenth of that)."""
    shown_classes = classes[:MAX_CLASSES_SHOWN]
    rows, columns = len(shown_classes), SAMPLES_PER_CLASS
    height, width, channels = images.shape[1:] if len(images) else (8, 8, 1)
    pad = max(1, height // 8)
    mosaic = np.full(
        (rows * (height + pad), columns * (width + pad), channels), 255, dtype=np.uint8
    )
    filled = [0] * len(classes)
    for image, label in zip(images, labels, strict=True):
        label = int(label)
        if label < rows and filled[label] < columns:
            top, left = label * (height + pad), filled[label] * (width + pad)
            mosaic[top : top + height, left : left + width] = image
            filled[label] += 1
    fig = Figure(figsize=(0.6 + 0.8 * columns, 0.5 + 0.8 * rows), layout="constrained")
    ax = fig.add_subplot()
    gray = channels == 1
    ax.imshow(
        mosaic.squeeze(-1) if gray else mosaic, cmap="gray" if gray else None, vmin=0, vmax=255
    )
    ax.set_yticks([row * (height + pad) + (height - 1) / 2 for row in range(rows)], shown_classes)
    ax.set_xticks([])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    left_out = len(classes) - rows
    more = f"; {left_out} more classes not shown" if left_out > 0 else ""
    fig.suptitle(
        f"Training images as the model sees them ({height}×{width} pixels, one row per class{more})"
    )
    return style.write(fig, path)


def plot_misclassified(
    images: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Path
) -> Path | None:
    """The SavedModel's most confident mistakes: each image with its true and predicted class.
    `images`: the split's first ones in shard order, up to the last index named (images_needed)."""
    wrong = metrics.get("misclassified") or []
    if not wrong:
        return None
    split = metrics.get("parity_split", "validation")
    columns = min(8, len(wrong))
    rows = -(-len(wrong) // columns)
    fig, axes = style.new(1.5 * columns, 1.8 * rows + 0.4, nrows=rows, ncols=columns)
    for ax in axes:
        ax.axis("off")
    for ax, item in zip(axes, wrong, strict=False):
        image = images[item["index"]]
        ax.imshow(image.squeeze(), cmap="gray" if image.shape[-1] == 1 else None)
        ax.set_title(
            f"true {classes[item['label']]}\nsaid {classes[item['predicted']]} "
            f"({item['confidence']:.0%})",
            fontsize="small",
            color="tab:red",
        )
    count = len(metrics.get("misclassified") or [])
    fig.suptitle(f"The export's {count} most confident mistakes on the {split} images")
    return style.write(fig, path)
