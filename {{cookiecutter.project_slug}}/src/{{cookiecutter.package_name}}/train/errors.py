"""The error of the training step: a value or a run folder refused, in one sentence."""

from __future__ import annotations

from ..artifacts import StepError


class TrainError(StepError):
    """A training parameter or the run folder was refused; nothing was trained or written."""
