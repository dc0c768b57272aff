"""The test split's scores at the edges that decide what a user gets (`make mutate MUTATE=recipe`):
the model in inference mode, one replica's batch, macro F1 as the mean of the per-class F1, the
sentences said, the baselines named.

In-process and fast: a fake task and model; test_train_recipe.py scores a trained model.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import tasks
from {{ cookiecutter.package_name }}.train import evaluate

# --- the test split ------------------------------------------------------------------------------


def test_macro_f1_is_the_mean_of_the_per_class_f1_not_f1_of_the_mean_precision_and_recall() -> None:
    """a: P 1, R 2/3, F1 0.8; b: P 0.5, R 1, F1 2/3; c: never said nor true (0). Macro F1 is
    (0.8 + 2/3 + 0) / 3 = 0.489; F1 of the macro precision (0.5) and recall (0.556) is 0.526."""
    junk = [np.full(3, 7.0) for _ in range(16)]  # numpy hands these buffers out again
    del junk  # a class never predicted nor present must score 0, not what memory held
    result = evaluate.scores(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), ["a", "b", "c"])
    assert result["test_macro_f1"] == pytest.approx((0.8 + 2 / 3 + 0) / 3)
    assert result["test_per_class"] == {
        "a": {
            "precision": 1.0,
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(0.8),
            "support": 3,
        },
        "b": {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1},
        "c": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
    }
    assert json.dumps(result["test_confusion_matrix"]) == "[[2, 1, 0], [0, 1, 0], [0, 0, 0]]"
    assert (result["test_accuracy"], result["test_examples"]) == (0.75, 4)
    two = evaluate.scores(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), ["a", "b"])
    assert two["test_macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)
    exact = evaluate.scores(np.array([0, 1]), np.array([0, 1]), ["a", "b"])  # each said once
    assert exact["test_macro_f1"] == 1.0 and exact["test_per_class"]["a"]["precision"] == 1.0
    half = evaluate.scores(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), ["a", "b"])
    assert half["test_macro_f1"] == 0.5  # precision + recall of 1 each
    empty = evaluate.scores(np.array([], int), np.array([], int), ["a", "b"])
    assert (empty["test_accuracy"], empty["test_examples"]) == (None, 0)


def evaluated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **values) -> tuple:
    """test_split on a fake task whose model's output depends on `training`: Dropout and
    BatchNorm behave otherwise in training mode, and the test split must see the final model.
    values: the run's global_batch and replicas, the task's baseline and test extras, its
    build_losses and build_metrics (the project's task's by default)."""
    labels = np.array([0, 1, 1, 0, 1])
    probabilities = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5], [1.0, 0.0]])
    asked, said = [], []

    def make_dataset(folder, split, batch, **kwargs):
        assert folder == tmp_path
        asked.append((split, batch, kwargs))
        return [(tf.constant(probabilities[:3]), tf.constant(labels[:3])),
                (tf.constant(probabilities[3:]), tf.constant(labels[3:]))]  # fmt: skip

    def model(inputs, training):
        return tf.reverse(inputs, [1]) if training else inputs  # training mode: all wrong

    def test_extras(folder, split, truth, probs, classes, predict):
        assert (folder, split, classes) == (tmp_path, "test", ["a", "1"])
        np.testing.assert_array_equal(truth, labels)
        np.testing.assert_array_equal(probs, probabilities)
        again, predicted = predict("validation")  # the task predicts other splits through it
        np.testing.assert_array_equal(again, labels)
        np.testing.assert_array_equal(predicted, probabilities)
        return values.get("extras", {"extra": split})

    fake = SimpleNamespace(
        build_inputs=make_dataset,
        build_losses=values.get("build_losses", tasks.current().build_losses),
        build_metrics=values.get("build_metrics", tasks.current().build_metrics),
        scores=SimpleNamespace(
            extras=test_extras,
            baseline=lambda folder: values.get("baseline") if folder == tmp_path else "elsewhere",
            compare=lambda loop, say: None,  # no other model trained beside (tables' own)
        ),
        noun="images",
    )
    monkeypatch.setattr(evaluate, "task", lambda: fake)
    loop = SimpleNamespace(
        folder=tmp_path,
        meta={"splits": {"train": 8, "test": 5}, "classes": ["a", 1]},
        global_batch=values.get("global_batch", 12),
        replicas=values.get("replicas", 3),
        model=model,
        verbose=True,  # the chief of a verbose run says the baseline is starting
        role=SimpleNamespace(is_chief=True),
    )
    return evaluate.test_split(loop, said.append), asked, said


def test_the_test_split_is_scored_by_the_model_in_inference_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One replica's batch (the model runs outside the strategy, on one device), in inference
    mode; the loss of a true class given probability 0 is -log(1e-7), not infinite."""
    result, asked, said = evaluated(tmp_path, monkeypatch)
    kwargs = {"training": False, "cache": False}
    assert asked == [("test", 4, kwargs), ("validation", 4, kwargs)]
    assert result["test_accuracy"] == 0.6 and result["test_examples"] == 5
    assert result["test_confusion_matrix"] == [[2, 0], [2, 1]]
    picked = [0.9, 0.8, 0.4, 0.5, 1e-7]
    assert result["test_loss"] == pytest.approx(float(np.mean(-np.log(picked))))
    assert list(result["test_per_class"]) == ["a", "1"]
    assert result["extra"] == "test" and result["baseline"] is None
    assert said == [
        "Test split (5 images, evaluated once, after training): accuracy 0.6000, macro F1 "
        f"{result['test_macro_f1']:.4f}."
    ]
    for global_batch, replicas, batch in ((12, 1, 12), (2, 3, 1)):
        _, asked, _ = evaluated(tmp_path, monkeypatch, global_batch=global_batch, replicas=replicas)
        assert [size for _, size, _ in asked] == [batch, batch]
        assert all(type(size) is int for _, size, _ in asked)  # a batch of 4.0 is refused


def test_the_test_splits_loss_and_accuracy_are_the_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43 §4: the test split is scored by the task's build_losses and build_metrics, as
    training and validation are (replica.py), not by a cross-entropy written out here."""

    def build_losses():
        return lambda labels, probabilities: tf.fill(tf.shape(labels), 2.5)

    def build_metrics():
        return {"accuracy": lambda labels, probabilities: tf.ones(tf.shape(labels))}

    result, _, _ = evaluated(
        tmp_path, monkeypatch, build_losses=build_losses, build_metrics=build_metrics
    )
    assert (result["test_loss"], result["test_accuracy"]) == (2.5, 1.0)
    assert result["test_confusion_matrix"] == [[2, 0], [2, 1]]  # the top class, as before


def test_the_test_split_names_its_roc_auc_and_the_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = {"name": "forest", "seconds": 3.4, "test_accuracy": 0.5, "roc_auc": 0.61}
    baseline = {"name": "logistic", "seconds": 1.6, "test_accuracy": 0.75, "test_macro_f1": 0.7,
                "others": [other]}  # fmt: skip
    extras = {"test_roc_auc": 0.9}
    result, _, said = evaluated(tmp_path, monkeypatch, baseline=baseline, extras=extras)
    assert result["baseline"] == baseline and result["test_roc_auc"] == 0.9
    assert said[0].endswith(f"macro F1 {result['test_macro_f1']:.4f}, ROC AUC 0.9000.")
    assert said[1:] == [
        "Baseline logistic (scikit-learn, same split, 2 s): test accuracy 0.7500, macro F1 0.7000.",
        "Baseline forest (scikit-learn, same split, 3 s): test accuracy 0.5000, ROC AUC 0.6100.",
    ]
    alone = {"name": "logistic", "seconds": 1.0, "test_accuracy": 0.5}  # no others
    _, _, said = evaluated(tmp_path, monkeypatch, baseline=alone)
    assert said[1:] == ["Baseline logistic (scikit-learn, same split, 1 s): test accuracy 0.5000."]
    loop = SimpleNamespace(meta={"splits": {"train": 8, "validation": 2}})
    assert evaluate.test_split(loop, said.append) == {"test_accuracy": None}
