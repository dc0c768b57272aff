"""Scores for imbalanced tables: what accuracy hides when three rows in four are one class.

ROC AUC (how well the probabilities rank a positive above a negative) and PR AUC (average
precision: how clean the top of that ranking is) do not depend on a threshold; accuracy does, so
it is given at 0.5 and at the threshold that maximizes F1 on the validation split (chosen there,
applied to test once). The reliability curve says whether a predicted 0.8 happens 8 times in 10,
which a risk score is read as. scikit-learn's metrics compute all of it.

Where one class dominates (the training split's majority class is at least `DOMINANT` of the
test rows: 0.9, a share at which answering the majority to every row already "scores" 0.9), the
scores say what that constant answer would score, and the run's headline leads with the ranking
scores instead of accuracy. Tables with three classes or more get macro one-vs-rest ROC AUC
(no PR AUC) and no threshold: the arg-max decides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.metrics import (
    average_precision_score,
    brier_score_loss,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
)

CALIBRATION_BINS = 10
CURVE_POINTS = 200  # ROC and PR curves kept for the figure, thinned to about this many points
DOMINANT = 0.9  # a majority share of the test rows from which accuracy alone says little


def ranking_scores(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float | None]:
    """ROC AUC and PR AUC of the positive class (binary), or macro one-vs-rest ROC AUC (more
    classes); None where a split holds one class only."""
    labels = np.asarray(labels).astype(int)
    if len(np.unique(labels)) < 2:
        return {"roc_auc": None, "pr_auc": None}
    if probabilities.shape[1] == 2:
        positive = probabilities[:, 1]
        return {
            "roc_auc": float(roc_auc_score(labels, positive)),
            "pr_auc": float(average_precision_score(labels, positive)),
        }
    present = np.unique(labels)
    if len(present) < probabilities.shape[1]:
        return {"roc_auc": None, "pr_auc": None}
    return {
        "roc_auc": float(roc_auc_score(labels, probabilities, multi_class="ovr")),
        "pr_auc": None,
    }


def validation_roc_auc(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """02's objective for tables: the validation split's ROC AUC (macro one-vs-rest for more
    classes), what 03's headline compares with the trees; accuracy at 0.5 barely moves when a
    model ranks better (a search scored by it picked recipes that ranked worse on test).
    0.5, chance, where validation holds one class only and nothing can be ranked; NaN where the
    model's probabilities are not finite (a diverged trial: 02 fails it in one sentence)."""
    if not np.all(np.isfinite(probabilities)):
        return float("nan")
    roc_auc = ranking_scores(labels, probabilities)["roc_auc"]
    return 0.5 if roc_auc is None else roc_auc


def majority(labels: np.ndarray, train_counts: list[int], classes: list[str]) -> dict[str, Any]:
    """What answering the training split's most frequent class to every test row scores, and
    whether that class dominates the test rows (DOMINANT)."""
    labels = np.asarray(labels).astype(int)
    index = int(np.argmax(train_counts))
    share = float(np.mean(labels == index)) if len(labels) else 0.0
    return {
        "test_majority_class": str(classes[index]),
        "test_majority_accuracy": share,
        "test_dominated": share >= DOMINANT,
    }


def test_lines(metrics: dict[str, Any]) -> list[str]:
    """03's lines under the test accuracy, for any number of classes: the ranking scores, the
    threshold (binary), what the majority answer scores, and each baseline; a score that was not
    measured (PR AUC of more than two classes, any of a split without every class) is left out."""
    shown = [key for key in SCORES if metrics.get("test_" + key) is not None]
    said = ", ".join(f"{key} {metrics['test_' + key]:.4f}" for key in shown)
    lines = ["  " + (said or "no ranking score: the test split lacks a class")]
    if "threshold" in metrics:
        lines.append(
            f"  accuracy {metrics['test_accuracy_at_threshold']:.4f} at threshold "
            f"{metrics['threshold']:.3f} (from {metrics['threshold_from']}); positives: "
            f"{metrics['test_positive_share']:.1%} of the test rows"
        )
    if metrics.get("test_majority_class") is not None:
        read = ": one class dominates, read the ranking scores" if metrics["test_dominated"] else ""
        lines.append(
            f"  answering {metrics['test_majority_class']!r} to every row scores accuracy "
            f"{metrics['test_majority_accuracy']:.4f}{read}"
        )
    base = metrics.get("baseline")
    for model in [base, *base.get("others", [])] if base else []:
        values = zip(BASELINE_SCORES, (model.get(k) for k in BASELINE_SCORES.values()), strict=True)
        said = ", ".join(f"{name} {value:.4f}" for name, value in values if value is not None)
        lines.append(f"  {model['name']}: {said}")
        lines += [f"    {model['note']}"] if model.get("note") else []
    if metrics.get("compared"):  # compare_models: a table of every model and baseline
        from ...runner.numbers import compared_rows

        rows = compared_rows(metrics)
        width = max(len(name) for name, _ in rows)
        lines.append("  every model and baseline on the same test rows, best first:")
        lines += [f"    {name:<{width}}  {said}" for name, said in rows]
    return lines


SCORES = ("roc_auc", "pr_auc", "accuracy_at_0.5", "brier")
BASELINE_SCORES = {"accuracy": "test_accuracy", "ROC AUC": "roc_auc", "PR AUC": "pr_auc"}


def best_threshold(labels: np.ndarray, positive: np.ndarray) -> float:
    """The probability threshold of the positive class with the highest F1 on these rows."""
    precision, recall, thresholds = precision_recall_curve(labels, positive)
    f1 = np.divide(
        2 * precision * recall,
        precision + recall,
        out=np.zeros_like(precision),
        where=(precision + recall) > 0,
    )
    return float(thresholds[int(np.argmax(f1[:-1]))]) if len(thresholds) else 0.5


def binary_report(
    test: tuple[np.ndarray, np.ndarray], validation: tuple[np.ndarray, np.ndarray] | None
) -> dict[str, Any]:
    """Everything the report says of a binary model on test: the ranking scores, accuracy at
    0.5 and at validation's best-F1 threshold, the Brier score, and the curves for the figures."""
    labels, probabilities = np.asarray(test[0]).astype(int), np.asarray(test[1])
    positive = probabilities[:, 1]
    result: dict[str, Any] = {
        f"test_{k}": v for k, v in ranking_scores(labels, probabilities).items()
    }
    threshold = 0.5
    if validation is not None and len(np.unique(validation[0])) == 2:
        threshold = best_threshold(np.asarray(validation[0]).astype(int), validation[1][:, 1])
    result.update(
        {
            "test_accuracy_at_0.5": float(np.mean((positive >= 0.5) == labels)),
            "threshold": threshold,
            "threshold_from": "validation (best F1)" if validation is not None else "default",
            "test_accuracy_at_threshold": float(np.mean((positive >= threshold) == labels)),
            "test_brier": float(brier_score_loss(labels, positive)),
            "test_positive_share": float(np.mean(labels)),
            "test_curves": curves(labels, positive),
        }
    )
    return result


def curves(labels: np.ndarray, positive: np.ndarray) -> dict[str, Any]:
    """The reliability curve (mean predicted vs observed share per bin, and each bin's count),
    the ROC curve and the precision-recall curve, thinned for a figure."""
    if len(np.unique(labels)) < 2:
        return {}
    observed, predicted = calibration_curve(labels, positive, n_bins=CALIBRATION_BINS)
    counts, _ = np.histogram(positive, bins=np.linspace(0, 1, CALIBRATION_BINS + 1))
    fpr, tpr, _ = roc_curve(labels, positive)
    precision, recall, _ = precision_recall_curve(labels, positive)
    return {
        "calibration": {
            "predicted": _round(predicted),
            "observed": _round(observed),
            "counts": [int(count) for count in counts],
        },
        "roc": {"fpr": _round(_thin(fpr)), "tpr": _round(_thin(tpr))},
        "pr": {"recall": _round(_thin(recall)), "precision": _round(_thin(precision))},
    }


def class_curves(labels: np.ndarray, probabilities: np.ndarray, classes: list[str]) -> dict:
    """More than two classes: each class's one-vs-rest ROC curve and AUC, for the figure (a
    class absent from the split has none)."""
    labels, said = np.asarray(labels).astype(int), {}
    for index, name in enumerate(classes):
        truth = labels == index
        if truth.all() or not truth.any():
            continue
        fpr, tpr, _ = roc_curve(truth, probabilities[:, index])
        auc = float(roc_auc_score(truth, probabilities[:, index]))
        said[str(name)] = {"fpr": _round(_thin(fpr)), "tpr": _round(_thin(tpr)), "auc": auc}
    return {"roc_per_class": said} if said else {}


def _thin(values: np.ndarray) -> np.ndarray:
    step = max(1, len(values) // CURVE_POINTS)
    return np.concatenate([values[::step], values[-1:]])


def _round(values: np.ndarray) -> list[float]:
    return [round(float(value), 4) for value in values]
