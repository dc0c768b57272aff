"""Test scores for text: accuracy, macro F1, per class, and the mistakes a reader can act on.

With 77 classes a confusion matrix is unreadable, so the report gets the ten most confused
(true, predicted) pairs and the mistakes the model was surest of, as text. Macro F1 is the mean of
the per-class F1 scores (not the F1 of macro precision and recall, which rates a model that is
good on some classes and bad on others higher than it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def text_scores(
    labels: Sequence[int] | np.ndarray,
    probabilities: np.ndarray,
    classes: Sequence[str],
    texts: Sequence[str],
    *,
    pairs: int = 10,
    mistakes: int = 10,
) -> dict[str, Any]:
    """Every score of the test split, JSON-ready for metrics/<step>.json and the report."""
    labels = np.asarray(labels, dtype=np.int64)
    probabilities = np.asarray(probabilities)
    predictions = probabilities.argmax(axis=1)
    precision, recall, f1, support = per_class_scores(labels, predictions, len(classes))
    return {
        "test_accuracy": accuracy(labels, predictions),
        "test_macro_f1": macro_f1(labels, predictions, len(classes)),
        "per_class": [
            {
                "class": name,
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i, name in enumerate(classes)
        ],
        "confused_pairs": confused_pairs(labels, predictions, classes, top=pairs),
        "confident_mistakes": confident_mistakes(
            labels, probabilities, classes, texts, top=mistakes
        ),
    }


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
    """The share of examples whose predicted class is the true one."""
    return float(np.mean(np.asarray(labels) == np.asarray(predictions))) if len(labels) else 0.0


def macro_f1(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> float:
    """The mean of per-class F1 over the classes that occur (as true or predicted class)."""
    _, _, f1, support = per_class_scores(labels, predictions, num_classes)
    predicted = np.bincount(np.asarray(predictions), minlength=num_classes)
    present = (support > 0) | (predicted > 0)
    return float(f1[present].mean()) if present.any() else 0.0


def per_class_scores(
    labels: np.ndarray, predictions: np.ndarray, num_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall, F1 and support per class id; a score with nothing to divide by is 0."""
    matrix = confusion(labels, predictions, num_classes)
    hits = np.diag(matrix).astype(float)
    support = matrix.sum(axis=1)
    predicted = matrix.sum(axis=0)
    precision = np.divide(hits, predicted, out=np.zeros_like(hits), where=predicted > 0)
    recall = np.divide(hits, support, out=np.zeros_like(hits), where=support > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros_like(hits), where=both > 0)
    return precision, recall, f1, support


def confusion(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> np.ndarray:
    """counts[true, predicted]."""
    flat = np.asarray(labels, dtype=np.int64) * num_classes + np.asarray(predictions)
    return np.bincount(flat, minlength=num_classes**2).reshape(num_classes, num_classes)


def confused_pairs(
    labels: np.ndarray, predictions: np.ndarray, classes: Sequence[str], top: int = 10
) -> list[dict[str, Any]]:
    """The `top` (true, predicted) pairs most often confused, most first; ties by class name."""
    matrix = confusion(labels, predictions, len(classes))
    np.fill_diagonal(matrix, 0)
    true, predicted = np.nonzero(matrix)
    order = sorted(
        zip(true.tolist(), predicted.tolist(), strict=True),
        key=lambda pair: (-matrix[pair], classes[pair[0]], classes[pair[1]]),
    )
    return [
        {"true": classes[t], "predicted": classes[p], "count": int(matrix[t, p])}
        for t, p in order[:top]
    ]


def confident_mistakes(
    labels: np.ndarray,
    probabilities: np.ndarray,
    classes: Sequence[str],
    texts: Sequence[str],
    top: int = 10,
) -> list[dict[str, Any]]:
    """The `top` wrong predictions made with the highest probability: often a label to fix."""
    predictions = probabilities.argmax(axis=1)
    confidence = probabilities.max(axis=1)
    wrong = np.flatnonzero(predictions != labels)
    wrong = wrong[np.argsort(-confidence[wrong], kind="stable")][:top]
    return [
        {
            "text": str(texts[i]),  # plain str: a NumPy string prints as np.str_('...')
            "true": str(classes[labels[i]]),
            "predicted": str(classes[predictions[i]]),
            "confidence": float(confidence[i]),
        }
        for i in wrong
    ]


def mistake_line(mistake: dict[str, Any]) -> str:
    """One confident mistake as 03 prints it: how sure, the predicted and the true class, the
    text in quotes."""
    return (
        f"{mistake['confidence']:.0%} sure it is {mistake['predicted']}, labelled "
        f'{mistake["true"]}: "{mistake["text"]}"'
    )
