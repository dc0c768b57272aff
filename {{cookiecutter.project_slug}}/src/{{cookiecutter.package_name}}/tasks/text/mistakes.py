"""Texts drawn as a figure: the export's most confident mistakes, one line each, readable.

A figure (not only a table in metrics) so the report and notebook 04 show text mistakes where
they show an image task's pictures: what was said, what it is, what the model said, how sure.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from ...figures import style

WIDTH = 90  # characters of a text shown per line


def plot_text_mistakes(
    texts: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Path
) -> Path | None:
    """figures/export_misclassified.png: each mistake's text, true and predicted class."""
    wrong = metrics.get("misclassified") or []
    if not wrong:
        return None
    split = metrics.get("parity_split", "validation")
    lines: list[tuple[str, str]] = []
    for item in wrong:
        said = textwrap.shorten(str(texts[item["index"]]), WIDTH, placeholder=" …")
        lines.append((f"“{said}”", "black"))
        lines.append(
            (
                f"    true {classes[item['label']]}  ·  said {classes[item['predicted']]} "
                f"({item['confidence']:.0%})",
                "tab:red",
            )
        )
    fig, (ax,) = style.new(9.5, 0.26 * len(lines) + 0.8)
    ax.axis("off")
    for row, (line, color) in enumerate(lines):
        ax.text(
            0,
            1 - (row + 0.5) / len(lines),
            line,
            color=color,
            fontsize="small",
            va="center",
            ha="left",
            transform=ax.transAxes,
            family="DejaVu Sans",
        )
    fig.suptitle(f"The export's {len(wrong)} most confident mistakes on the {split} texts")
    return style.write(fig, path)
