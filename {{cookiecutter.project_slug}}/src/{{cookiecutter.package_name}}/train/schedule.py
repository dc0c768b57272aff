"""The learning rate over a run: linear warmup, then constant or cosine, times a fine-tuning factor.

Why warmup: the linear scaling rule (params.LR_RULE) gives a global batch of 1024 sixteen times the
rate of 64, and a freshly initialised network taking steps that large in its first updates can
diverge or settle somewhere worse; Goyal et al. (2017) ramp the rate up from near zero over the
first epochs (5 of 90 there) and large-batch training then matches small-batch accuracy. Why
cosine: decaying the rate towards a small floor at the end lets the weights settle into a minimum
instead of bouncing around it (Loshchilov & Hutter, SGDR; NVIDIA's vision recipes use it).

The schedule is a pure function of the optimizer's step counter, which the checkpoint holds, so a
resumed run continues on the same curve. The warmup and cosine are the numbers of Keras'
`CosineDecay(warmup_target=…, warmup_steps=…, alpha=FLOOR)` (a test compares them step by step);
they are written out here because CosineDecay takes one step at a time (its `cond` cannot take the
vector of every step that train.json's `learning_rates` and the figure need), and has neither the
constant variant nor the drop by `fine_tune_lr_factor` once the backbone is unfrozen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

SCHEDULES = ("constant", "cosine")
FLOOR = 0.01  # cosine ends at this fraction of the peak rate, not at 0 (a step of 0 is wasted)
WARMUP_START = 0.01  # warmup starts at this fraction of the peak ("near zero")
# warmup_epochs=auto: warmup when the global batch exceeds this (Goyal et al. warm up from 256 up).
WARMUP_BATCH = 256
AUTO_WARMUP_EPOCHS = 5


@dataclass(frozen=True)
class Plan:
    """The numbers a schedule is made of, in steps; `describe` says them in a sentence."""

    peak: float
    steps_per_epoch: int
    epochs: int
    warmup_epochs: int
    schedule: str
    freeze_epochs: int = 0
    fine_tune_factor: float = 1.0

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def warmup_steps(self) -> int:
        return self.warmup_epochs * self.steps_per_epoch

    @property
    def freeze_steps(self) -> int:
        return self.freeze_epochs * self.steps_per_epoch


def auto_warmup(warmup_epochs: int | str, global_batch: int, epochs: int) -> int:
    """warmup_epochs as a number: "auto" is 0 up to WARMUP_BATCH, else 5 (at most a fifth of the
    run, at least 1), since a run shorter than its warmup would never train at its peak rate."""
    if warmup_epochs != "auto":
        return int(warmup_epochs)
    if global_batch <= WARMUP_BATCH:
        return 0
    return max(1, min(AUTO_WARMUP_EPOCHS, epochs // 5))


def plan_for(
    peak: float,
    steps_per_epoch: int,
    epochs: int,
    warmup_asked: int | str,
    schedule: str,
    global_batch: int,
    freeze_epochs: int = 0,
    fine_tune_factor: float = 1.0,
) -> Plan:
    """The plan a run with these parameters trains on: training builds its own with this, and
    03 describes the run's before it starts from the same call, so the two cannot differ."""
    return Plan(
        peak=peak,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        warmup_epochs=auto_warmup(warmup_asked, global_batch, epochs),
        schedule=schedule,
        freeze_epochs=freeze_epochs,
        fine_tune_factor=fine_tune_factor,
    )


class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """plan.peak × (warmup ramp, then constant or cosine) × (fine_tune_factor once unfrozen)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def __call__(self, step: Any) -> Any:
        plan, ops = self.plan, keras.ops
        step = ops.cast(step, "float32")
        start = plan.peak * WARMUP_START
        if plan.warmup_steps:
            ramp = start + (plan.peak - start) * ops.minimum(step / plan.warmup_steps, 1.0)
        else:
            ramp = ops.full_like(step, plan.peak)
        rate = ramp
        if plan.schedule == "cosine":
            decay_steps = max(1, plan.total_steps - plan.warmup_steps)
            done = ops.clip((step - plan.warmup_steps) / decay_steps, 0.0, 1.0)
            cosine = 0.5 * (1.0 + ops.cos(np.pi * done))
            decayed = plan.peak * ((1.0 - FLOOR) * cosine + FLOOR)
            rate = ops.where(step < plan.warmup_steps, ramp, decayed)
        if plan.freeze_epochs and plan.fine_tune_factor != 1.0:
            rate = rate * ops.where(step >= plan.freeze_steps, plan.fine_tune_factor, 1.0)
        return ops.cast(rate, "float32")

    def get_config(self) -> dict[str, Any]:
        return dict(vars(self.plan))


def rates(plan: Plan) -> np.ndarray:
    """The rate of every step of the run (step 0 first), as the optimizer will see it."""
    schedule = WarmupSchedule(plan)
    steps = np.arange(plan.total_steps, dtype="float32")
    return np.asarray(keras.ops.convert_to_numpy(schedule(steps)), dtype="float64")


def per_epoch(plan: Plan) -> list[float]:
    """The rate at the last step of every epoch: what train.json's `learning_rates` holds."""
    every = rates(plan)
    return [float(every[(epoch + 1) * plan.steps_per_epoch - 1]) for epoch in range(plan.epochs)]


def per_step(plan: Plan, most: int = 2000) -> list[float]:
    """Every step's rate, or every n-th when the run has more than `most` steps (for the figure)."""
    every = rates(plan)
    stride = max(1, -(-len(every) // most))
    return [float(rate) for rate in every[::stride]]


def describe(plan: Plan, global_batch: int, warmup_asked: int | str) -> str:
    """One sentence on the schedule, naming why warmup is on or off when "auto" chose it; the
    reason is given only where it is true of `global_batch` (issue 42: a plan drawn with warmup
    for a batch of 64 said "the global batch 64 exceeds 256")."""
    parts = []
    large = global_batch > WARMUP_BATCH
    if plan.warmup_epochs:
        why = (
            f" (warmup_epochs=auto: the global batch {global_batch} exceeds {WARMUP_BATCH})"
            if warmup_asked == "auto" and large
            else ""
        )
        parts.append(
            f"warmup over {plan.warmup_epochs} epoch(s) from {plan.peak * WARMUP_START:.3g} to "
            f"{plan.peak:.3g}{why}"
        )
    elif warmup_asked == "auto":
        parts.append(
            "no warmup" if large else f"no warmup (global batch {global_batch} <= {WARMUP_BATCH})"
        )
    then = "then " if plan.warmup_epochs else ""
    if plan.schedule == "cosine":
        start = "" if plan.warmup_epochs else f"from {plan.peak:.3g} "
        parts.append(f"{then}cosine decay {start}to {plan.peak * FLOOR:.3g}")
    else:
        parts.append(f"{then}constant at {plan.peak:.3g}")
    if plan.freeze_epochs:
        parts.append(
            f"x {plan.fine_tune_factor:g} from epoch {plan.freeze_epochs + 1} (fine-tuning)"
        )
    return "Learning rate: " + ", ".join(parts) + "."
