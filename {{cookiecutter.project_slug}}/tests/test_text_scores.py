"""Text scores: macro F1 as the mean of per-class F1, the confused pairs and confident mistakes."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_recall_fscore_support

from {{ cookiecutter.package_name }}.tasks.text.scores import (
    confident_mistakes,
    confused_pairs,
    macro_f1,
    mistake_line,
    per_class_scores,
    text_scores,
)

CLASSES = ["a", "b", "c", "d"]


def one_hot_probs(predictions: list[int], confidence: list[float]) -> np.ndarray:
    """Probabilities whose argmax is `predictions`, with that class at `confidence`."""
    probs = np.full((len(predictions), 4), 0.0)
    for row, (p, c) in enumerate(zip(predictions, confidence, strict=True)):
        probs[row] = (1 - c) / 3
        probs[row, p] = c
    return probs


def test_scores_agree_with_scikit_learn_on_random_predictions():
    """Per-class P/R/F1 and macro F1 match scikit-learn's, class by class."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 6, 300)
    predictions = np.where(rng.random(300) < 0.6, labels, rng.integers(0, 6, 300))
    expected = precision_recall_fscore_support(labels, predictions, zero_division=0)
    for mine, theirs in zip(per_class_scores(labels, predictions, 6), expected, strict=True):
        np.testing.assert_allclose(mine, theirs)
    assert macro_f1(labels, predictions, 6) == pytest.approx(
        f1_score(labels, predictions, average="macro")
    )


def test_macro_f1_is_the_mean_of_per_class_f1_not_of_macro_p_and_r():
    """A model good on one class, bad on another: the two definitions differ, ours is the mean."""
    labels = np.array([0] * 10 + [1] * 10)
    predictions = np.array([0] * 10 + [0] * 9 + [1])
    precision, recall, f1, _ = per_class_scores(labels, predictions, 2)
    from_macro_pr = 2 * precision.mean() * recall.mean() / (precision.mean() + recall.mean())
    assert macro_f1(labels, predictions, 2) == pytest.approx(f1.mean())
    assert macro_f1(labels, predictions, 2) < from_macro_pr - 0.05


def test_confused_pairs_most_first_with_direction():
    """(true, predicted) pairs are counted one way, most first, ties by name; top cuts."""
    labels = np.array([0, 0, 0, 1, 1, 2, 3, 3])
    predictions = np.array([1, 1, 0, 0, 2, 1, 3, 0])
    pairs = confused_pairs(labels, predictions, CLASSES, top=3)
    assert pairs == [
        {"true": "a", "predicted": "b", "count": 2},
        {"true": "b", "predicted": "a", "count": 1},
        {"true": "b", "predicted": "c", "count": 1},
    ]


def test_confident_mistakes_are_the_surest_wrong_predictions_as_text():
    """Only wrong predictions, by confidence, with their text and both class names."""
    labels = np.array([0, 1, 2, 3])
    probs = one_hot_probs([0, 2, 3, 1], [0.99, 0.6, 0.9, 0.7])
    texts = ["right", "meh", "sure but wrong", "fairly sure"]
    mistakes = confident_mistakes(labels, probs, CLASSES, texts, top=2)
    assert [m["text"] for m in mistakes] == ["sure but wrong", "fairly sure"]
    assert mistakes[0] == {
        "text": "sure but wrong",
        "true": "c",
        "predicted": "d",
        "confidence": pytest.approx(0.9),
    }


def test_a_mistake_prints_as_plain_text_with_the_true_and_the_predicted_class():
    """The texts come from the shards as a NumPy array (raw_examples): 03 prints the text, not
    np.str_('...'), and both classes."""
    labels = np.array([0, 1])
    texts = np.array(["whats your exchange rate", "fine"], dtype=str)
    (mistake,) = confident_mistakes(labels, one_hot_probs([2, 1], [0.93, 0.9]), CLASSES, texts)
    assert all(type(value) is str for key, value in mistake.items() if key != "confidence")
    assert mistake_line(mistake) == '93% sure it is c, labelled a: "whats your exchange rate"'


def test_text_scores_bundle_is_json_ready():
    """Accuracy, macro F1, one entry per class, pairs and mistakes: plain Python values."""
    import json

    labels = [0, 1, 2, 3, 3]
    probs = one_hot_probs([0, 1, 2, 3, 2], [0.9, 0.8, 0.7, 0.6, 0.5])
    scores = text_scores(labels, probs, CLASSES, ["w", "x", "y", "z", "zz"])
    assert scores["test_accuracy"] == pytest.approx(0.8)
    assert [c["class"] for c in scores["per_class"]] == CLASSES
    assert scores["per_class"][2] == {
        "class": "c",
        "precision": 0.5,
        "recall": 1.0,
        "f1": pytest.approx(2 / 3),
        "support": 1,
    }
    assert scores["confident_mistakes"][0]["text"] == "zz"
    json.dumps(scores)


def test_the_class_balance_of_77_classes_names_few_enough_to_read(tmp_path, monkeypatch):
    """Issue 42 §3.6: BANKING77's 77 names under 77 bars were unreadable at notebook size: the
    figure names the rarest and most common BALANCE_CLASSES at a readable size, says so, and
    its title stays inside the figure."""
    from {{ cookiecutter.package_name }}.tasks.text import plots

    classes = [f"class_with_a_long_name_{index}" for index in range(77)]
    counts = {name: 30 + index for index, name in enumerate(classes)}
    metrics = {"classes": classes, "per_class": {"train": counts}, "dataset": "banking77"}
    drawn = []
    monkeypatch.setattr(plots.style, "write", lambda fig, path: drawn.append(fig) or path)
    plots.plot_class_balance(metrics, tmp_path / "classes.png")
    (fig,) = drawn
    fig.draw_without_rendering()
    (ax,) = fig.axes
    named = [label for label in ax.get_yticklabels() + ax.get_xticklabels() if label.get_text()]
    names = {label.get_text() for label in named}
    assert names >= {classes[0], classes[-1]} and len(names & set(classes)) <= 24
    assert min(label.get_fontsize() for label in named) >= 8
    title = fig._suptitle
    assert "12 rarest and the 12 most common of 77 classes" in title.get_text()
    box, inside = title.get_window_extent(fig._get_renderer()), fig.bbox
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1
