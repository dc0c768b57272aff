"""What the search refuses before any work, in one sentence each: values, keras-tuner, the data.

The same checks serve `check` (the runner's pre-flight and notebook 02's first cell) and `search`,
so a value is refused with the same sentence wherever it is given.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import data, limits
from ..artifacts import DATA_DIR, StepError
from ..steps import param
from ..tasks import current as task
from ..tasks import read_meta
from ..train.finetune import allowed, check_weights, pretrained

ALGORITHMS = ("random", "hyperband")
MAX_WORKERS = 256  # worker processes one search starts or serves: more is a typo, not a plan
INSTALL = "it is a dependency of this project: reinstall it (make setup, or pip install -e .)"


class TuneError(StepError):
    """A tuning parameter was refused, or the search found nothing; nothing was written."""


@dataclass(frozen=True)
class Params:
    """The parameters of notebook 02 (all but run_dir), with its defaults."""

    algorithm: str = param("random", "random or hyperband")
    max_trials: int = param(4, "models to try (hyperband: at most this many)")
    epochs: int = param(2, "epochs per trial (hyperband: the most one trial gets)")
    batch_size: int = param(64, "examples per batch in every trial")
    model: str | None = param(
        None, f"the builder searched (None: the task's default): {task().models.help}"
    )
    weights: str = param(
        "none", f"{allowed()} .weights.h5 file to start from; not none: freeze_epochs searched"
    )
    seed: int = param(42, "seed of the search and of every trial's weights")
    workers: int = param(
        1, "processes that run trials at once: 1 in this process, more: a chief and N workers"
    )

    def __post_init__(self) -> None:
        """model=None is the task's default model, asked when the values are made, not when this
        module is imported (a test's fake task is asked, not the bake's own)."""
        if self.model is None:
            object.__setattr__(self, "model", task().models.default)


def check_params(params: Params, overwrite: bool = True) -> dict[str, Any]:
    """Refuse a bad search request in one sentence before any work; return the values as a dict."""
    algorithm, model = params.algorithm, params.model
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise TuneError(f"algorithm={algorithm!r} is not allowed: use {' or '.join(ALGORITHMS)}.")
    for name in ("max_trials", "epochs", "batch_size", "seed"):  # the ranges train's share
        limits.whole(name, getattr(params, name), TuneError)
    check_workers(params.workers, params.max_trials)
    if not isinstance(model, str) or (
        model not in task().models.names and not task().models.takes(model)
    ):
        raise TuneError(f"model={model!r} is not allowed: use {task().models.help}.")
    try:  # training's own sentences: none, a pretrained name or an existing weights file
        check_weights(params.weights)
    except StepError as error:
        raise TuneError(str(error)) from None
    if not isinstance(overwrite, bool):
        raise TuneError(f"overwrite={overwrite!r} is not allowed: use true or false.")
    return {**asdict(params), "overwrite": overwrite}


def check_workers(workers: Any, max_trials: int) -> None:
    """Refuse a worker count that is not a whole number from 1 to MAX_WORKERS, or one larger
    than max_trials (a worker that can get no trial is a process started for nothing)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise TuneError(
            f"workers={workers!r} is not allowed: use a whole number from 1 to {MAX_WORKERS} "
            "(1 searches in this process, more start a chief and that many worker processes)."
        )
    if workers > max_trials:
        raise TuneError(
            f"workers={workers} is more than max_trials={max_trials}: use at most {max_trials} "
            "workers, since each worker runs whole trials."
        )


def check_keras_tuner() -> None:
    """Refuse in one sentence when keras-tuner is missing, without importing it (fast)."""
    if importlib.util.find_spec("keras_tuner") is None:
        raise TuneError(f"keras-tuner is not installed, and the search needs it: {INSTALL}.")


def require_keras_tuner() -> Any:
    """The keras_tuner module, or one sentence saying how to install it."""
    try:
        import keras_tuner
    except ImportError:
        raise TuneError(
            f"keras-tuner is not installed, and the search needs it: {INSTALL}."
        ) from None
    return keras_tuner


def check_data(folder: Path, model: str, batch_size: int, weights: str = "none") -> dict[str, Any]:
    """The data step's meta, refused when missing (naming 01_data), when the model cannot take its
    inputs (or its pretrained weights), or when one batch is larger than its training split."""
    meta = read_meta(folder)
    try:
        task().models.check(model, meta, weights=pretrained(weights))
        data.meta.check_batch(meta, batch_size, where=str(folder / DATA_DIR))
    except StepError as error:
        raise TuneError(str(error)) from None
    return meta
