"""The table task's checks before TensorFlow loads (seam.early_check calls `check`): a
class_weight it cannot parse, or a model knob (TabM's members …) out of range, refused in the
same sentence the train step gives."""

from __future__ import annotations

from typing import Any

from . import knobs, weights


def check(values: dict[str, Any]) -> None:
    """class_weight, then the model's own knobs."""
    weights.check_early(values)
    knobs.check_early(values)
