"""The train/validation split: seeded and stratified, so every class is in both, every time.

The same labels, val_fraction and seed give the same split on any machine; a val_fraction that
would leave a class without an example on one side is refused with the range that would work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .base import SPLITS, DataError


def split_indices(
    labels: np.ndarray, classes: Sequence[str], val_fraction: float, seed: int
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
    parts: dict[str, list[np.ndarray]] = {split: [] for split in SPLITS}
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
        parts["validation"].append(members[:n_val])
        parts["train"].append(members[n_val:])
    return {split: rng.permutation(np.concatenate(parts[split])) for split in SPLITS}
