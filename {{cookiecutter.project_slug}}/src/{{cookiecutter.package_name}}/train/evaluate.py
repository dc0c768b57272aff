"""The held-out test split, evaluated once, after training: the number a report can headline.

Validation picks the epoch early stopping keeps and any values searched on it, so its accuracy is
optimistic: the choices were made on it. The test split (01_data's `test_fraction`) is read by
nothing else; the final model is scored on it once, here, with the per-class precision, recall
and F1 and the confusion matrix (rows: true class, columns: predicted), written by the chief.
Computed with NumPy from the confusion matrix: a few lines, where scikit-learn would add a
dependency for the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import progress
from ..tasks import current as task

if TYPE_CHECKING:
    from .running import Running

TEST_SPLIT = "test"


def test_split(loop: Running, say: Callable[[str], None]) -> dict[str, Any]:
    """{test_accuracy, test_loss, test_examples, test_per_class, test_confusion_matrix}, or
    {test_accuracy: None} when the data has no test split (test_fraction was 0)."""
    if TEST_SPLIT not in loop.meta["splits"]:
        return {"test_accuracy": None}
    truth, probabilities = predict(loop, TEST_SPLIT)
    classes = [str(name) for name in loop.meta["classes"]]
    result = scores(truth, probabilities.argmax(axis=-1), classes)
    result.update(by_the_task(truth, probabilities))  # the loss and accuracy training counts
    # What the task adds (text: the most confused pairs, the most confident mistakes as text).
    # (tables: ROC and PR AUC, and accuracy at the threshold chosen on validation, predicted here)
    extras = task().scores.extras(
        loop.folder, TEST_SPLIT, truth, probabilities, classes, predict=lambda s: predict(loop, s)
    )
    result.update(extras)
    auc = result.get("test_roc_auc")
    say(
        f"Test split ({result['test_examples']} {task().noun}, evaluated once, after training): "
        f"accuracy {result['test_accuracy']:.4f}, macro F1 {result['test_macro_f1']:.4f}"
        + (f", ROC AUC {auc:.4f}." if auc is not None else ".")
    )
    # A scikit-learn model trained on the same training split, scored on the same test split:
    # the bar the network has to clear (None where the task measures none).
    if loop.verbose and loop.role.is_chief:  # `train --json`: stdout holds the metrics alone
        progress.starting("Baseline: a scikit-learn model fitted on the training split", "5-60 s")
    result["baseline"] = task().scores.baseline(loop.folder)
    for said in _baselines(result["baseline"]):
        f1, auc = said.get("test_macro_f1"), said.get("roc_auc")
        also = f", macro F1 {f1:.4f}" if f1 is not None else ""
        also += f", ROC AUC {auc:.4f}" if auc is not None else ""
        say(
            f"Baseline {said['name']} (scikit-learn, same split, {said['seconds']:.0f} s): test "
            f"accuracy {said['test_accuracy']:.4f}{also}."
        )
    # Other models trained on the same split and scored on the same test rows, not exported.
    result["compared"] = task().scores.compare(loop, say) or []
    return result


def by_the_task(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, Any]:
    """test_loss and test_accuracy by the task's own loss and accuracy (its build_losses and
    build_metrics), as training and validation count them: sparse cross-entropy and the top
    class by default; a task that scores otherwise is scored so on the test split too."""
    import tensorflow as tf

    if not len(labels):
        return {"test_loss": None, "test_accuracy": None}
    truth = tf.constant(labels, tf.int32)
    given = tf.constant(probabilities, tf.float32)
    loss = task().build_losses()(truth, given).numpy()
    correct = task().build_metrics()["accuracy"](truth, given).numpy()
    return {
        "test_loss": float(np.mean(loss, dtype=np.float64)),
        "test_accuracy": float(np.sum(correct, dtype=np.float64) / len(labels)),
    }


def _baselines(first: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The headlined baseline and the others measured beside it (tables: two)."""
    return [first, *first.get("others", [])] if first else []


def predict(loop: Running, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(labels, probabilities) of a split, in its order, by the trained model outside the
    strategy, in inference mode."""
    # One replica's batch: the model runs outside the strategy, on the first device only, and a
    # whole global batch there (replicas x what training put on one device) could run it out
    # of memory at the very end of a run.
    batch = max(1, loop.global_batch // max(1, loop.replicas))
    dataset = task().build_inputs(loop.folder, split, batch, training=False, cache=False)
    labels, outputs = [], []
    for inputs, batch_labels in dataset:
        outputs.append(loop.model(inputs, training=False).numpy())
        labels.append(batch_labels.numpy().astype(int))
    return np.concatenate(labels), np.concatenate(outputs)


def scores(labels: np.ndarray, predicted: np.ndarray, classes: list[str]) -> dict[str, Any]:
    """Accuracy, per-class precision/recall/F1/support, macro F1 and the confusion matrix."""
    count = len(classes)
    confusion = np.zeros((count, count), dtype=int)
    np.add.at(confusion, (labels, predicted), 1)
    hits = np.diag(confusion).astype(float)
    support, said = confusion.sum(axis=1), confusion.sum(axis=0)
    precision = np.divide(hits, said, out=np.zeros(count), where=said > 0)
    recall = np.divide(hits, support, out=np.zeros(count), where=support > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros(count), where=both > 0)
    per_class = {
        name: {
            "precision": float(precision[index]),
            "recall": float(recall[index]),
            "f1": float(f1[index]),
            "support": int(support[index]),
        }
        for index, name in enumerate(classes)
    }
    total = int(confusion.sum())
    return {
        "test_accuracy": float(hits.sum() / total) if total else None,
        "test_examples": total,
        "test_macro_f1": float(f1.mean()),
        "test_per_class": per_class,
        "test_confusion_matrix": confusion.tolist(),
    }
