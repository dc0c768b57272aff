"""The table task's checks before TensorFlow loads (seam.early_check calls `check`): a
class_weight it cannot parse, a model knob (TabM's members …) out of range, or compare_models
naming no table model, refused in the same sentence the train step gives."""

from __future__ import annotations

from typing import Any

from . import compare, knobs, weights


def check(values: dict[str, Any]) -> None:
    """class_weight, the model's own knobs, then compare_models."""
    weights.check_early(values)
    knobs.check_early(values)
    compare.check_early(values)
