"""The table task's checks before TensorFlow loads (seam.early_check calls `check`): a
class_weight it cannot parse, refused in the same sentence the train step gives."""

from __future__ import annotations

from .weights import check_early as check

__all__ = ["check"]
