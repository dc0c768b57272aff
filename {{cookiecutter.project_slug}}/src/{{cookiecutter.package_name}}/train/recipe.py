"""The training recipe's values, checked: one sentence each, before anything is built.

The recipe is what trains the model, as against where it trains (params.py): the weights it starts
from and the two phases of fine-tuning (finetune.py), the learning-rate schedule (schedule.py),
AdamW's weight decay and label smoothing. A task's own training parameters (the image task's
augment) are its Recipe's: it checks them, and train's Params adds them (params.py).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import keras

from ..tasks import current as task
from .errors import TrainError
from .finetune import check_weights
from .schedule import SCHEDULES


class Recipe(Protocol):
    """The recipe's values as check_recipe reads them (params.Params has them): the type lives
    here so that params.py imports this module and not the other way round."""

    weights: str
    epochs: int
    freeze_epochs: int
    unfreeze: str | int
    fine_tune_lr_factor: float
    warmup_epochs: int | str
    schedule: str
    weight_decay: float
    label_smoothing: float


# Variables AdamW does not decay: biases, BatchNorm's scale and shift (decaying them only fights
# the normalisation; NVIDIA's and timm's recipes exclude them too). Matched on the variable's name.
NO_DECAY = ("bias", "gamma", "beta")


def check_recipe(params: Recipe) -> None:
    """Refuse the first bad recipe value in one sentence (TrainError)."""
    check_weights(params.weights)
    epochs = params.epochs if _is_int(params.epochs) else None
    freeze = params.freeze_epochs
    if not _is_int(freeze) or freeze < 0 or (epochs is not None and freeze >= epochs):
        raise TrainError(
            f"freeze_epochs={freeze!r} is not allowed with epochs={params.epochs!r}: use a whole "
            "number from 0 to epochs - 1 (at least one epoch must fine-tune after it)."
        )
    if freeze and params.weights == "none":
        raise TrainError(
            f"freeze_epochs={freeze} freezes a backbone with random weights, which learns "
            f"nothing: give weights ({_sources()}), or freeze_epochs=0."
        )
    unfreeze = params.unfreeze
    if unfreeze != "all" and not (_is_int(unfreeze) and unfreeze >= 0):
        raise TrainError(
            f"unfreeze={unfreeze!r} is not allowed: use all, or a whole number >= 0 of backbone "
            "layers (with weights, from the top) to fine-tune after freeze_epochs."
        )
    _number("fine_tune_lr_factor", params.fine_tune_lr_factor, 0, 1, "above 0 and at most 1")
    warmup = params.warmup_epochs
    if warmup != "auto" and (
        not _is_int(warmup) or warmup < 0 or (epochs is not None and warmup > epochs)
    ):
        raise TrainError(
            f"warmup_epochs={warmup!r} is not allowed with epochs={params.epochs!r}: use auto or a "
            "whole number from 0 to epochs."
        )
    if params.schedule not in SCHEDULES:
        raise TrainError(
            f"schedule={params.schedule!r} is not allowed: use {' or '.join(SCHEDULES)}."
        )
    _number("weight_decay", params.weight_decay, 0, 1, "from 0 to below 1, e.g. 0.05", low_ok=True)
    _number(
        "label_smoothing", params.label_smoothing, 0, 1, "from 0 to below 1, e.g. 0.1", low_ok=True
    )


def make_optimizer(learning_rate: Any, weight_decay: float) -> keras.optimizers.Optimizer:
    """Adam, or AdamW (decoupled weight decay, Loshchilov & Hutter) when weight_decay > 0."""
    if not weight_decay:
        return keras.optimizers.Adam(learning_rate)
    optimizer = keras.optimizers.AdamW(learning_rate, weight_decay=float(weight_decay))
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer


def _number(
    name: str, value: Any, low: float, high: float, allowed: str, *, low_ok: bool = False
) -> None:
    fits = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (value >= low if low_ok else value > low)
        and (value < high if low_ok else value <= high)
    )
    if not fits:
        raise TrainError(f"{name}={value!r} is not allowed: use a number {allowed}.")


def _sources() -> str:
    """Where weights can come from: a .keras file, or the task's pretrained names."""
    names = task().models.pretrained
    return "a .keras file" + (f", or {' or '.join(names)}" if names else "")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
