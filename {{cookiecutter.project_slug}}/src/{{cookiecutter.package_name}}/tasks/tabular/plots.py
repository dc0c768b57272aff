"""The table task's own figures: how a risk score reads (reliability, ROC, precision-recall) and
the rows the export got most confidently wrong, drawn from the metrics the steps wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...figures import style

SHOWN_MISTAKES = 8


def plot_scores(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/train_scores.png: the reliability curve (with how many rows each bin holds), the
    ROC curve and the precision-recall curve of the test split, the baselines' AUCs named."""
    curves = metrics.get("test_curves") or {}
    if "roc_per_class" in curves:
        return _plot_classes(metrics, curves["roc_per_class"], path)
    if not curves:
        return None
    fig, axes = style.new(14, 4.2, ncols=3)
    calibration = curves["calibration"]
    ax = axes[0]
    ax.plot([0, 1], [0, 1], "--", color=style.MUTED, label="perfectly calibrated")
    ax.plot(calibration["predicted"], calibration["observed"], "o-", label="model")
    ax.set_xlabel("predicted probability of the positive class")
    ax.set_ylabel("observed share of positives")
    ax.set_title(f"Reliability (Brier {metrics.get('test_brier', float('nan')):.3f})")
    ax.legend(loc="upper left", fontsize="small")
    counts = ax.twinx()
    edges = np.linspace(0, 1, len(calibration["counts"]) + 1)
    counts.bar(edges[:-1], calibration["counts"], width=np.diff(edges), align="edge", alpha=0.15)
    counts.set_ylabel("test rows per bin")
    others = _baseline_aucs(metrics)
    roc, pr = curves["roc"], curves["pr"]
    axes[1].plot(roc["fpr"], roc["tpr"], label=f"model, AUC {metrics['test_roc_auc']:.3f}")
    _name_baselines(axes[1], others.get("roc_auc", []), "AUC")
    axes[1].plot([0, 1], [0, 1], "--", color=style.MUTED, label="chance")
    axes[1].set_xlabel("false positive rate")
    axes[1].set_ylabel("true positive rate")
    axes[1].set_title("ROC on test")  # the baselines in the legend: in titles they ran together
    axes[1].legend(loc="lower right", fontsize="small")
    share = metrics.get("test_positive_share", 0.0)
    axes[2].plot(pr["recall"], pr["precision"], label=f"model, AP {metrics['test_pr_auc']:.3f}")
    _name_baselines(axes[2], others.get("pr_auc", []), "AP")
    axes[2].axhline(share, linestyle="--", color=style.MUTED, label=f"chance ({share:.0%})")
    axes[2].set_xlabel("recall")
    axes[2].set_ylabel("precision")
    axes[2].set_title("Precision-recall on test")
    axes[2].legend(loc="lower left", fontsize="small")
    return style.write(fig, path)


def _plot_classes(metrics: dict[str, Any], per_class: dict[str, Any], path: Path) -> Path:
    """More than two classes: each class's one-vs-rest ROC curve on test, its AUC named."""
    fig, (ax,) = style.new(6.5, 4.8)
    for name, curve in per_class.items():
        ax.plot(curve["fpr"], curve["tpr"], label=f"{name}, AUC {curve['auc']:.3f}")
    ax.plot([0, 1], [0, 1], "--", color=style.MUTED, label="chance")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    macro = metrics.get("test_roc_auc")
    ax.set_title("One-vs-rest ROC on test" + (f" (macro AUC {macro:.3f})" if macro else ""))
    ax.legend(loc="lower right", fontsize="small")
    return style.write(fig, path)


def _baseline_aucs(metrics: dict[str, Any]) -> dict[str, list[tuple[str, float]]]:
    """{score: [(baseline name, value), ...]} for each score the baselines measured, or {}."""
    base = metrics.get("baseline") or {}
    models = [base, *base.get("others", [])] if base else []
    said = {}
    for key in ("roc_auc", "pr_auc"):
        values = [(m.get("short", m.get("name", "?")), m.get(key)) for m in models]
        said[key] = [(name, value) for name, value in values if value is not None]
    return said if any(said.values()) else {}


def _name_baselines(ax: Any, scores: list[tuple[str, float]], short: str) -> None:
    """One legend entry per baseline (no line: they have no curve here), its score named."""
    for name, value in scores:
        ax.plot([], [], " ", label=f"{name}, {short} {value:.3f}")


def plot_row_mistakes(
    rows: np.ndarray, metrics: dict[str, Any], classes: list[str], path: Path
) -> Path | None:
    """figures/export_misclassified.png: the rows the export was surest of and wrong about, as a
    table: their columns, the true class, what the model said and how sure."""
    wrong = (metrics.get("misclassified") or [])[:SHOWN_MISTAKES]
    if not wrong or rows.dtype.names is None:
        return None
    names = list(rows.dtype.names)
    cells = []
    for item in wrong:
        row = rows[item["index"]]
        values = [_cell(row[name]) for name in names]
        said = f"{classes[item['predicted']]} ({item['confidence']:.1%})"
        cells.append([*values, classes[item["label"]], said])
    fig, (ax,) = style.new(max(9.0, 1.0 * len(names)), 0.3 * len(cells) + 0.9)
    ax.axis("off")
    table = ax.table(
        cellText=cells, colLabels=[*names, "true", "said"], loc="center", cellLoc="center"
    )
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    table.auto_set_column_width(list(range(len(names) + 2)))
    split = metrics.get("parity_split", "validation")
    ax.set_title(f"The {len(cells)} {split} rows the export was surest of and wrong about")
    return style.write(fig, path)


def _cell(value: Any) -> str:
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float):
        return "missing" if np.isnan(value) else f"{value:g}"
    return str(value) or "missing"
