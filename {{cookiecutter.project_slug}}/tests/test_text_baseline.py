"""The TF-IDF baseline: learns from words and character n-grams, scored like the models."""

from __future__ import annotations

import numpy as np
import pytest

from {{ cookiecutter.package_name }}.tasks.text.baseline import make_baseline, run_baseline

TOPICS = {
    0: ["card", "arrive", "delivery", "post", "mail"],
    1: ["transfer", "send", "bank", "account", "payee"],
    2: ["pin", "unblock", "blocked", "code", "locked"],
}


def corpus(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 3
    filler = ["my", "the", "please", "why", "is", "how"]
    texts = [" ".join(rng.choice(TOPICS[y] + filler, size=6)) for y in labels]
    return texts, labels


def test_baseline_learns_a_topic_task_and_reports_its_scores():
    """Well above chance (1/3) on held-out texts; accuracy, macro F1 and seconds reported."""
    train, test = corpus(150, 0), corpus(60, 1)
    result = run_baseline(*train, *test, num_classes=3)
    assert result["test_accuracy"] > 0.9
    assert 0.85 < result["test_macro_f1"] <= 1
    assert result["seconds"] >= 0 and result["baseline"].startswith("tfidf")


def test_character_ngrams_carry_misspelt_words():
    """A word never seen whole ('transferr') still points to its class through char n-grams."""
    texts, labels = corpus(150, 0)
    model = make_baseline().fit(texts, labels)
    assert model.predict(["transferr sendd"]).tolist() == [1]
    assert model.predict(["unblockk pinn"]).tolist() == [2]


def test_labels_are_scored_not_just_accepted():
    """Shuffled test labels drop the score to about chance: the scores read the labels."""
    train, (texts, labels) = corpus(150, 0), corpus(60, 1)
    shuffled = np.random.default_rng(2).permutation(labels)
    assert run_baseline(*train, texts, shuffled, num_classes=3)["test_accuracy"] < 0.6


@pytest.mark.parametrize("c", [0.1, 10.0])
def test_regularization_strength_reaches_the_svm(c):
    """C is passed through to the LinearSVC."""
    assert c == make_baseline(c).named_steps["svm"].C
