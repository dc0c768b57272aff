"""The train/validation(/test) split: seeded and stratified, so every class is in each, every time.

The same labels, fractions and seed give the same split on any machine; a val_fraction that
would leave a class without an example on one side is refused with the range that would work.
With test_fraction > 0 a third split, test, is held out per class as well: validation then chooses
(early stopping, the values chosen on it), and the test split is scored once, after training
(train/evaluate.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .base import SPLITS, TEST_SPLIT, DataError


def split_indices(
    labels: np.ndarray,
    classes: Sequence[str],
    val_fraction: float,
    seed: int,
    test_fraction: float = 0.0,
) -> dict[str, np.ndarray]:
    """A seeded, stratified split: each class gives round(n × val_fraction) examples to validation.

    Every class must keep at least one example in each split; the order within each split is
    shuffled too, so every shard holds a mix of classes.
    """
    counts = {name: int(np.sum(labels == index)) for index, name in enumerate(classes)}
    for name, n in counts.items():
        if n < 2:
            raise DataError(
                f"Class {name!r} has {n} example(s): each class needs at least 2, one for "
                "training and one for validation."
            )
    smallest = min(counts.values())
    rng = np.random.default_rng(seed)
    names = SPLITS + ((TEST_SPLIT,) if test_fraction else ())
    parts: dict[str, list[np.ndarray]] = {split: [] for split in names}
    for index, name in enumerate(classes):
        members = np.flatnonzero(labels == index)
        n = len(members)
        n_val = int(n * val_fraction + 0.5)
        if not 1 <= n_val <= n - 1:
            # round(n * f) is in [1, n - 1] exactly when 0.5 / n <= f < 1 - 0.5 / n.
            low = math.ceil(0.5 / smallest * 1e4) / 1e4
            high = math.floor((1 - 0.5 / smallest) * 1e4) / 1e4
            side = "validation" if n_val < 1 else "training"
            raise DataError(
                f"val_fraction={val_fraction!r} leaves class {name!r} ({n} examples) without a "
                f"{side} example: with {smallest} examples in the smallest class, use a "
                f"val_fraction of at least {low} and below {high}."
            )
        members = rng.permutation(members)
        n_test = int(n * test_fraction + 0.5) if test_fraction else 0
        if test_fraction and not 1 <= n_test <= n - n_val - 1:
            raise DataError(
                f"test_fraction={test_fraction!r} leaves class {name!r} ({n} examples, {n_val} "
                f"for validation) without a {'test' if n_test < 1 else 'training'} example: use "
                "a smaller test_fraction or val_fraction, or more examples of that class."
            )
        parts["validation"].append(members[:n_val])
        if n_test:
            parts[TEST_SPLIT].append(members[n_val : n_val + n_test])
        parts["train"].append(members[n_val + n_test :])
    return {split: rng.permutation(np.concatenate(parts[split])) for split in names}


def check_test_fraction(test_fraction: object, val_fraction: object = 0.0) -> None:
    """Refuse a test_fraction that is not a share from 0 (no test split) to 1 - val_fraction."""
    fits = isinstance(test_fraction, int | float) and not isinstance(test_fraction, bool)
    room = 1 - val_fraction if isinstance(val_fraction, int | float) else 1
    if not fits or not 0 <= test_fraction < room:  # type: ignore[operator]
        raise DataError(
            f"test_fraction={test_fraction!r} is not allowed: use 0 (no test split) or a share "
            f"below {room:g} (what val_fraction={val_fraction!r} leaves), e.g. 0.1."
        )
