"""Did the model learn? Its validation accuracy against answering the most common class.

A run can end with every step "ok" and a model that learned nothing: a learning rate too high for
the batch (batch_size=auto and learning_rate=auto, chosen on a noisy machine), labels shuffled
against their examples, a loss that went NaN. Its val_accuracy is then the share of the class it
always answers. That share is known before training (the validation split's counts, meta.json), so
the verdict is a comparison, not a guess: the model learned when its accuracy clears the majority
class's share by more than two standard errors of that share on this many examples (and by one
point at least, so that a tiny split cannot call a coin's luck learning). Where one class
dominates, accuracy barely moves while the model ranks well: a binary task's ROC AUC of RANKED or
more also counts as learning.
"""

from __future__ import annotations

import math
from typing import Any

MARGIN = 0.01  # the least gap over the majority share that counts as learning
RANKED = 0.6  # a ROC AUC this far above a coin's 0.5 is learning, whatever the accuracy


def verdict(
    meta: dict[str, Any],
    val_accuracy: float | None,
    split: str = "validation",
    *,
    roc_auc: float | None = None,
) -> dict[str, Any]:
    """{"majority_share", "examples", "threshold", "learned", "sentence"} for metrics/train.json.

    `learned` is None (and the sentence too) where the split or the accuracy is missing."""
    counts = _counts(meta, split)
    total = sum(counts)
    if not counts or total == 0 or not isinstance(val_accuracy, (int, float)):
        return {
            "majority_share": None,
            "examples": total,
            "threshold": None,
            "learned": None,
            "sentence": None,
        }
    share = max(counts) / total
    threshold = min(1.0, share + max(MARGIN, 2 * math.sqrt(share * (1 - share) / total)))
    ranked = isinstance(roc_auc, (int, float)) and roc_auc >= RANKED
    learned = bool(val_accuracy > threshold) or share >= 1.0 or ranked
    sentence = (
        None
        if learned
        else (
            f"The model stayed at chance: val_accuracy {val_accuracy:.4f} is no better than "
            f"answering the most common class every time ({share:.4f} of the {total:,} validation "
            f"examples; learning needs more than {threshold:.4f} here). Try a lower learning_rate "
            "(learning_rate=auto chose it on this machine's noisy timings), more epochs, or check "
            "that the labels match their examples."
        )
    )
    return {
        "majority_share": share,
        "examples": total,
        "threshold": threshold,
        "learned": learned,
        "sentence": sentence,
    }


def _counts(meta: dict[str, Any], split: str) -> list[int]:
    """The split's examples per class: meta.json holds them as {class: n} (images, texts) or as a
    list in class order (tables)."""
    info = (meta.get("splits") or {}).get(split) or {}
    per_class = info.get("per_class")
    if isinstance(per_class, dict):
        return [int(n) for n in per_class.values()]
    if isinstance(per_class, list):
        return [int(n) for n in per_class]
    return []
