"""The recipe inside the loop: the weights a run starts from, its phases, and its learning rates.

Kept out of loop.py so the epoch driver stays one job: loop.py calls `begin` once, `enter` before
every epoch (a new phase freezes or unfreezes layers and traces new train steps, since the
trainable variables are part of the traced step), and `summary` at the end for train.json.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..replica import make_train_steps
from ..tasks import current as task
from . import finetune, schedule

if TYPE_CHECKING:
    from .running import Running

TRAIN = "train"  # the one phase of a run without freeze_epochs


def plan(loop: Running) -> schedule.Plan:
    """The learning-rate plan of the run: its peak is the scaled rate (or the range test's)."""
    params = loop.params
    return schedule.plan_for(
        loop.learning_rate,
        loop.steps_per_epoch,
        params.epochs,
        params.warmup_epochs,
        params.schedule,
        loop.global_batch,
        params.freeze_epochs,
        float(params.fine_tune_lr_factor),
    )


def schedule_of(the_plan: schedule.Plan) -> schedule.WarmupSchedule:
    """The optimizer's learning rate: a function of its step counter, which checkpoints hold."""
    return schedule.WarmupSchedule(the_plan)


def begin(loop: Running, *, fresh: bool) -> None:
    """Load `weights=` a file into a fresh model (a resumed one has them in its checkpoint)."""
    params = loop.params
    loop.weights_loaded = None
    if fresh and finetune.from_file(params.weights):
        with loop.strategy.scope():
            loop.weights_loaded = finetune.load_into(loop.model, params.weights)


def enter(loop: Running, epoch: int) -> None:
    """Put the model in the phase of `epoch` (from 0); trace the train steps when it changes."""
    params = loop.params
    which = finetune.phase(epoch, params.freeze_epochs) if params.freeze_epochs else TRAIN
    if which == loop.phase:
        return
    if which != TRAIN:
        finetune.set_phase(loop.model, which, params.unfreeze)
        if loop.phase is not None:
            loop.say(
                f"Epoch {epoch + 1}: the backbone is unfrozen ({params.unfreeze} layer(s) with "
                f"weights, any BatchNorm kept frozen), learning rate x "
                f"{params.fine_tune_lr_factor:g}."
            )
    loop.phase = which
    loop.train_steps = make_train_steps(
        loop.strategy,
        loop.model,
        loop.optimizer,
        task=task(),
        global_batch=loop.global_batch,
        loss_scaling=loop.loss_scaling,
        jit=loop.jit,
        timed=loop.timed,
        augment=loop.augment,
        label_smoothing=float(params.label_smoothing),
        num_classes=int(loop.meta["num_classes"]),
        stop=loop.stop.flag,  # preempt: every replica leaves after the same step on a signal
        class_weights=loop.weighting["weights"] if loop.weighting else None,
    )


def rate_at_end_of(loop: Running, epoch: int) -> float:
    """The learning rate of the last step of `epoch` (from 0)."""
    step = (epoch + 1) * loop.steps_per_epoch - 1
    return float(schedule.WarmupSchedule(loop.plan)(step))


def describe(loop: Running) -> str:
    """What the recipe does, in a sentence or two: schedule, phases, weights, regularisation."""
    params = loop.params
    lines = [schedule.describe(loop.plan, loop.global_batch, params.warmup_epochs)]
    if params.weights != "none":
        loaded = loop.weights_loaded
        how = (
            f" ({loaded['layers']} layers by {loaded['matched_by']}, head {loaded['head']})"
            if loaded
            else ""
        )
        lines.append(f"Weights from {params.weights}{how}.")
    if params.freeze_epochs:
        lines.append(
            f"Backbone frozen for {params.freeze_epochs} epoch(s), then unfreeze={params.unfreeze}."
        )
    extras = [
        f"AdamW weight_decay {params.weight_decay:g}" if params.weight_decay else "",
        f"label_smoothing {params.label_smoothing:g}" if params.label_smoothing else "",
        *task().recipe.words(params),  # the task's own (images: augment=light on the device)
        loop.weighting["sentence"] if loop.weighting else "",  # tables: class_weight
    ]
    if any(extras):
        lines.append(", ".join(extra for extra in extras if extra) + ".")
    return " ".join(lines)


def summary(loop: Running) -> dict[str, Any]:
    """train.json's recipe keys: learning_rates (per epoch and per step), schedule, phases,
    weights (with the file's sha256), weight_decay, label_smoothing, and the task's own
    (Recipe.summary: the image task's augment)."""
    params, the_plan = loop.params, loop.plan
    phases: dict[str, list[int]] = {}
    for epoch in range(params.epochs):
        name = finetune.phase(epoch, params.freeze_epochs) if params.freeze_epochs else TRAIN
        phases.setdefault(name, []).append(epoch + 1)
    return {
        "learning_rates": schedule.per_epoch(the_plan),
        "learning_rates_per_step": schedule.per_step(the_plan),
        "learning_rates_step_stride": max(1, -(-the_plan.total_steps // 2000)),
        "schedule": {
            "name": the_plan.schedule,
            "warmup_epochs": the_plan.warmup_epochs,
            "warmup_asked": params.warmup_epochs,
            "peak": the_plan.peak,
            "floor": the_plan.peak * schedule.FLOOR if the_plan.schedule == "cosine" else None,
            "fine_tune_lr_factor": the_plan.fine_tune_factor if params.freeze_epochs else None,
            "sentence": schedule.describe(the_plan, loop.global_batch, params.warmup_epochs),
        },
        "phases": phases,
        "weights": {
            "source": params.weights,
            "sha256": finetune.file_sha256(params.weights),
            "loaded": loop.weights_loaded,
        },
        "weight_decay": params.weight_decay,
        "label_smoothing": params.label_smoothing,
        **task().recipe.summary(params),
        "class_weights": loop.weighting,  # None, or the weights, the shares and the sentence
    }
