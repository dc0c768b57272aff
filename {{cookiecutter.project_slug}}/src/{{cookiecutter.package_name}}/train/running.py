"""What a training run is, as the loop's helpers see it: the Loop (loop.py) hands itself over.

epoch, phases, report, preempt and evaluate read a run's state (and phases sets its phase and train
steps); they take it as this Protocol, so they import nothing of loop.py, which imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import keras
import tensorflow as tf

from .cluster import Cluster
from .params import Params
from .schedule import Plan
from .value_sources import Resolved
from .watch import Watch


class Running(Protocol):
    """One training run's state: its folder and data, values, strategy, model and progress."""

    folder: Path
    meta: dict[str, Any]
    resolved: Resolved
    params: Params
    strategy: tf.distribute.Strategy
    role: Cluster
    jit: bool
    loss_scaling: bool
    replicas: int
    global_batch: int
    steps_per_epoch: int
    learning_rate: float
    plan: Plan
    augment: Any
    weighting: dict[str, Any] | None  # the task's class weights (Recipe.class_weights)
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    stop: Any  # preempt.StopRequest: this process's stop flag
    phase: str | None
    timed: bool
    weights_loaded: Any
    train_steps: Callable[..., Any]
    eval_step: Callable[..., Any]
    verbose: bool
    watch: Watch  # set by Loop.run before the first epoch
    steps_done: int
    partial: dict[str, Any] | None

    def say(self, text: str) -> None: ...
