"""The text task's checks before TensorFlow loads (seam.early_check calls `check`): a KerasHub
preset name this machine cannot download, or a preset folder without the preset's files."""

from __future__ import annotations

from .hub_names import check

__all__ = ["check"]
