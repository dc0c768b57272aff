"""The seeded, stratified split every task's data step uses (data/split.py): each class is shuffled
before its validation share is taken, every class keeps an example on every side, and a fraction
that would empty one is refused in one sentence naming the value and the range that works.
Shipped in every bake: the split is shared code."""

from __future__ import annotations

import numpy as np
import pytest

from {{ cookiecutter.package_name }}.data import split
from {{ cookiecutter.package_name }}.data.base import DataError


def test_each_class_is_shuffled_before_its_validation_share_is_taken() -> None:
    """Validation is not each class's first files (folders are listed sorted: a camera's first
    day would always be validation); the same seed gives the same split, another seed another."""
    labels = np.repeat([0, 1], 20)
    firsts = []
    for seed in range(4):
        parts = split.split_indices(labels, ["a", "b"], 0.25, seed)
        assert sorted(np.concatenate(list(parts.values()))) == list(range(40))
        assert [int(np.sum(labels[parts["validation"]] == k)) for k in (0, 1)] == [5, 5]
        firsts.append(set(parts["validation"]) == {0, 1, 2, 3, 4, 20, 21, 22, 23, 24})
        again = split.split_indices(labels, ["a", "b"], 0.25, seed)
        assert all((again[name] == parts[name]).all() for name in parts)
    assert not any(firsts)
    other = split.split_indices(labels, ["a", "b"], 0.25, 9)["validation"]
    assert set(other) != set(parts["validation"])
    train = parts["train"]
    assert list(labels[train]) != sorted(labels[train])  # classes mixed within the split


def test_the_test_split_never_takes_a_class_s_last_training_example() -> None:
    labels = np.repeat([0, 1], 4)  # 4 each: 1 for validation at 0.25
    parts = split.split_indices(labels, ["a", "b"], 0.25, 0, test_fraction=0.5)
    assert [len(parts[name]) for name in ("train", "validation", "test")] == [2, 2, 4]
    assert not set(parts["test"]) & (set(parts["train"]) | set(parts["validation"]))
    with pytest.raises(DataError) as refused:
        split.split_indices(labels, ["a", "b"], 0.25, 0, test_fraction=0.75)
    assert str(refused.value) == (
        "test_fraction=0.75 leaves class 'a' (4 examples, 1 for validation) without a training "
        "example: use a smaller test_fraction or val_fraction, or more examples of that class."
    )
    with pytest.raises(DataError, match=r"test_fraction=0.1 leaves .* without a test example"):
        split.split_indices(labels, ["a", "b"], 0.25, 0, test_fraction=0.1)
    assert set(split.split_indices(labels, ["a", "b"], 0.25, 0)) == {"train", "validation"}
    parts = split.split_indices(labels, ["a", "b"], 0.25, 0, test_fraction=0.25)
    assert [len(parts[name]) for name in ("train", "validation", "test")] == [4, 2, 2]
    assert len(set(np.concatenate(list(parts.values())))) == 8
    with pytest.raises(DataError, match=r"3 for validation\) without a training example"):
        split.split_indices(labels, ["a", "b"], 0.75, 0, test_fraction=0.25)


def test_a_val_fraction_leaving_a_class_empty_is_refused_with_the_range_that_works() -> None:
    labels = np.repeat([0, 1, 2], [8, 4, 4])
    with pytest.raises(DataError) as refused:
        split.split_indices(labels, ["a", "b", "c"], 0.9, 0)
    assert str(refused.value) == (
        "val_fraction=0.9 leaves class 'b' (4 examples) without a training example: with 4 "
        "examples in the smallest class, use a val_fraction of at least 0.125 and below 0.875."
    )
    with pytest.raises(DataError, match=r"class 'a' \(8 examples\) without a validation"):
        split.split_indices(labels, ["a", "b", "c"], 0.05, 0)
    assert len(split.split_indices(labels, ["a", "b", "c"], 0.125, 0)["validation"]) == 3
    with pytest.raises(DataError, match="with 3 examples in .* at least 0.1667 and below 0.8333"):
        split.split_indices(np.repeat([0, 1], [3, 5]), ["a", "b"], 0.95, 0)
    assert len(split.split_indices(np.repeat([0, 1], 2), ["a", "b"], 0.5, 0)["train"]) == 2
    with pytest.raises(DataError) as refused:
        split.split_indices(np.array([0, 1, 1]), ["a", "b"], 0.5, 0)
    assert str(refused.value) == (
        "Class 'a' has 1 example(s): each class needs at least 2, one for training and one for "
        "validation."
    )


def test_a_test_fraction_is_a_share_below_what_validation_leaves() -> None:
    split.check_test_fraction(0)
    split.check_test_fraction(0.69, 0.3)
    cases = [(0.7, 0.3, "0.7"), (-0.1, 0.2, "0.8"), (True, 0.2, "0.8"), ("0.1", 0, "1")]
    for bad, val, room in cases + [(1, "x", "1")]:
        with pytest.raises(DataError) as refused:
            split.check_test_fraction(bad, val)
        assert str(refused.value) == (
            f"test_fraction={bad!r} is not allowed: use 0 (no test split) or a share below "
            f"{room} (what val_fraction={val!r} leaves), e.g. 0.1."
        )
