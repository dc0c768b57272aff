"""One trial, trained by training's own loop: the values keras-tuner chose become a train.Params.

Why not `model.fit`: the recipe (warmup and cosine, AdamW's decay, label smoothing, augmentation
inside the train step, a frozen backbone that thaws) lives in train's Loop and its phases, not in
`compile`. A trial built here is a train.Loop: the same check_values, builder, optimizer,
schedule, train steps and epoch as step 3, on the same batches, so a value tuned here means in
step 3 what it meant here. keras-tuner's callbacks (its checkpoint of the best epoch, which
Hyperband continues from; the progress lines) are called around each epoch as fit would.

A trial that cannot train is a failed trial, not a failed search: keras-tuner records a
FailedTrialError (a NaN loss, out of memory) or any error of the builder as FAILED, with its
message, and asks for the next trial.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from ..find.probes import out_of_memory
from ..tasks import current as task
from ..train import phases
from ..train.epoch import run_epoch
from ..train.errors import TrainError
from ..train.evaluate import predict
from ..train.loop import Loop
from ..train.params import Params as TrainParams
from ..train.params import check_values
from ..train.value_sources import Resolved
from ..train.watch import Watch
from .space import choose, objective, training_values


class Trials:
    """keras-tuner's HyperModel (build, fit) of one search: `fixed` holds the search's own values
    (model, weights, epochs, batch_size, seed), `space` what keras-tuner chooses."""

    def __init__(
        self,
        kt: Any,
        folder: Path,
        meta: dict[str, Any],
        space: dict[str, dict[str, Any]],
        fixed: dict[str, Any],
        *,
        jit: bool,
        built: list[dict[str, Any]],
    ) -> None:
        self.kt, self.folder, self.meta, self.space = kt, folder, meta, space
        self.fixed, self.jit, self.built = fixed, jit, built
        self.loop: Loop | None = None
        hypermodel = self

        class HyperModel(kt.HyperModel):  # keras-tuner checks the type of what it is given
            def build(self, hp: Any) -> keras.Model:
                return hypermodel.build(hp)

            def fit(self, hp: Any, model: keras.Model, *args: Any, **kwargs: Any) -> Any:
                return hypermodel.fit(model, *args, **kwargs)

        self.hypermodel = HyperModel()

    def build(self, hp: Any) -> keras.Model:
        """The model step 3 would build with these values (its Loop: optimizer, schedule too)."""
        chosen = training_values(
            {name: choose(hp, name, spec) for name, spec in self.space.items()}, self.space
        )
        self.built.append(chosen)
        params = TrainParams(**self.fixed, **chosen)
        placement = check_values(params)  # training's own checks: a refusal fails this trial
        policy = keras.mixed_precision.dtype_policy()
        strategy = tf.distribute.get_strategy()
        resolved = Resolved(params, {}, (), placement)
        self.loop = Loop(
            self.folder,
            self.meta,
            resolved,
            strategy,
            jit=self.jit,
            loss_scaling=policy.name == "mixed_float16",
            verbose=False,
        )
        return self.loop.model

    def fit(
        self,
        model: keras.Model,
        *,
        epochs: int,
        initial_epoch: int = 0,
        callbacks: list[keras.callbacks.Callback] | None = None,
        **_: Any,
    ) -> keras.callbacks.History:
        """Epochs initial_epoch+1 … epochs of the trial's Loop; its history as fit returns it.

        Hyperband continues a trial from the best epoch of an earlier one: keras-tuner has loaded
        its weights into the model, and the optimizer's step counter moves to initial_epoch so
        the schedule continues on the same curve."""
        loop = self.loop
        assert loop is not None and loop.model is model, "build() made another model"
        history = keras.callbacks.History()
        listed = keras.callbacks.CallbackList([*(callbacks or []), history], model=model)
        try:
            loop.watch = Watch(self.folder, loop.params, loop.role)
            phases.begin(loop, fresh=initial_epoch == 0)  # weights=FILE into a fresh model
            loop.optimizer.iterations.assign(initial_epoch * loop.steps_per_epoch)
            # training's pipeline, reshuffled for a continued trial as for a resumed run
            iterator = iter(loop.dataset("train", seed=loop.params.seed + initial_epoch))
            validation = loop.dataset("validation")
            listed.on_train_begin()
            for epoch in range(initial_epoch, epochs):
                listed.on_epoch_begin(epoch)
                phases.enter(loop, epoch)  # frozen or fine-tuning, as training's epoch would be
                record = run_epoch(loop, epoch, iterator, validation, [])
                logs = {key: record[key] for key in ("loss", "accuracy", "val_loss")}
                logs[objective()] = _score(loop, record)
                if not all(math.isfinite(value) for value in logs.values()):
                    raise self.kt.errors.FailedTrialError(
                        f"the loss is not a number after epoch {epoch + 1} (loss "
                        f"{logs['loss']:.4g}, val_loss {logs['val_loss']:.4g}): these values "
                        "diverge"
                    )
                listed.on_epoch_end(epoch, logs)
            listed.on_train_end()
        except (tf.errors.ResourceExhaustedError, tf.errors.InternalError) as error:
            reason = out_of_memory(error)
            if reason is None:
                raise
            raise self.kt.errors.FailedTrialError(
                f"{reason} at batch_size={loop.params.batch_size}: a smaller batch or model fits"
            ) from error
        except TrainError as error:
            raise self.kt.errors.FailedTrialError(str(error)) from error
        finally:
            self.loop = None
        return history


def _score(loop: Loop, record: dict[str, Any]) -> float:
    """The trial's objective after an epoch: the epoch's val_accuracy, or the task's score of
    the validation split's probabilities (tables: ROC AUC)."""
    name = objective()
    if name in record:
        return record[name]
    return float(task().scores.objective_score(*predict(loop, "validation")))
