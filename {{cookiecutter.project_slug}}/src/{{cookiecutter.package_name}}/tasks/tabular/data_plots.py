"""01's tabular figures: the label balance per split, the missing share per column, and each
column's distribution (a histogram of a numeric column, the most frequent values of a
categorical one), drawn with matplotlib's Figure directly from the metrics and the training
split, which the data step hands over (its DRAWERS)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...figures import style

COLUMNS_PER_ROW = 4
TOP_VALUES = 8  # bars of a categorical column's panel
SCHEMA_COLUMNS = (
    *("kind", "missing_share", "mean", "std", "min", "max"),
    *("distinct", "vocabulary_size"),
)
COUNTS = ("distinct", "vocabulary_size")  # whole numbers, blank for a numeric column


def schema_table(metrics: dict[str, Any]) -> pd.DataFrame:
    """01's schema table, one row per column, every statistic a column even where no column of
    this kind exists (a table of numbers only has no vocabulary; of categories only, no mean)."""
    rows = pd.DataFrame(metrics["schema"], columns=["name", *SCHEMA_COLUMNS])
    return rows.set_index("name")[list(SCHEMA_COLUMNS)]


def schema_view(metrics: dict[str, Any]) -> Any:
    """schema_table styled for a notebook: counts whole, shares as percentages, blanks for NaN."""
    shown = schema_table(metrics).style.format(precision=3, na_rep="")
    shown.format("{:,.0f}", subset=list(COUNTS), na_rep="")
    return shown.format("{:.1%}", subset=["missing_share"])


def plot_label_balance(metrics: dict[str, Any], path: Path) -> Path | None:
    """Rows per class in each split, stacked as shares, with the positive share written on."""
    per_class, classes = metrics.get("per_class") or {}, metrics.get("classes") or []
    if not per_class or not classes:
        return None
    splits = list(per_class)
    fig, (ax,) = style.new(8, 1.2 + 0.5 * len(splits))
    left = np.zeros(len(splits))
    for name in classes:
        counts = np.array([per_class[s].get(name, 0) for s in splits], dtype=float)
        totals = np.array([max(sum(per_class[s].values()), 1) for s in splits], dtype=float)
        bars = ax.barh(splits, counts / totals, left=left, label=name)
        ax.bar_label(bars, labels=[f"{share:.1%}" for share in counts / totals],
                     label_type="center", fontsize="small")  # fmt: skip
        left += counts / totals
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_xlabel("share of the split's rows")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), title="class")
    counts = ", ".join(f"{s} {sum(per_class[s].values()):,}" for s in splits)
    positive = metrics.get("positive_class")
    what = f"share of {positive!r} per split" if positive else "classes per split"
    fig.suptitle(f"Label balance: {what} (rows: {counts})")
    return style.write(fig, path)


def plot_missing(metrics: dict[str, Any], path: Path) -> Path | None:
    """The share of training rows missing each column, in the file's column order."""
    shares = metrics.get("missing_share") or {}
    if not shares:
        return None
    names = list(shares)
    fig, (ax,) = style.new(8, 1.2 + 0.28 * len(names))
    values = [shares[name] for name in names]
    colors = ["tab:red" if value > 0 else style.MUTED for value in values]
    bars = ax.barh(names, values, color=colors)
    style.bar_labels(ax, bars, [f"{value:.1%}" for value in values])
    ax.invert_yaxis()
    ax.set_xlabel("share of training rows with the value missing")
    ax.set_xlim(0, max(max(values) * 1.5, 0.01))
    some = sum(value > 0 for value in values)
    fig.suptitle(f"Missing values: {some} of {len(names)} columns have some (train)")
    return style.write(fig, path)


def plot_columns(train: pd.DataFrame, metrics: dict[str, Any], path: Path) -> Path | None:
    """One panel per column: a histogram of a numeric one, its most frequent values for a
    categorical one, with its distinct count and vocabulary size in the panel's title."""
    schema = metrics.get("schema") or []
    if not schema:
        return None
    rows = math.ceil(len(schema) / COLUMNS_PER_ROW)
    fig, axes = style.new(3.2 * COLUMNS_PER_ROW, 2.6 * rows, nrows=rows, ncols=COLUMNS_PER_ROW)
    for ax, column in zip(axes, schema, strict=False):
        values = train[column["name"]]
        if column["kind"] == "numeric":
            ax.hist(values.dropna(), bins=30, color="tab:blue")
            ax.set_title(f"{column['name']} (numeric)", fontsize="small")
            ax.set_ylabel("rows", fontsize="small")
        else:
            counts = values[values != ""].value_counts().head(TOP_VALUES)[::-1]
            ax.barh([str(v)[:18] for v in counts.index], counts.to_numpy(), color="tab:orange")
            hashed = f", hashed into {column['bins']}" if column.get("hashed") else ""
            ax.set_title(
                f"{column['name']}: {column['distinct']} values, "
                f"{column['vocabulary_size']} in vocab{hashed}",
                fontsize="small",
            )
            ax.set_xlabel("rows", fontsize="small")
        ax.tick_params(labelsize="x-small")
    for ax in axes[len(schema) :]:
        ax.set_axis_off()
    fig.suptitle(
        f"Training columns: histograms of the numeric ones, the {TOP_VALUES} most frequent "
        "values of the categorical ones"
    )
    return style.write(fig, path)
