"""May training resume from the run folder's checkpoints? Refuse, resume, or start over on new data.

- Checkpoints made with other values (STATE_KEYS) are refused in one sentence: restoring them
  would fail on a shape, or silently continue a different experiment.
- Checkpoints made on other data (01_data re-ran since, so the data's lineage fingerprint differs
  from the one params.json recorded) are never resumed: their validation split may hold this
  split's training examples, so the scores would be inflated. Training starts from epoch 0 and the
  old checkpoints/ and logs/ are set aside beside them (renamed, not deleted: renaming costs
  nothing, and the record of what was trained before is kept; delete them when not needed).
- Checkpoints without a recorded fingerprint (made before the lineage existed) are resumed when
  their values match, as before.
- Damaged ones (a pointer, index or history that cannot be read) are refused naming the folder to
  delete. A truncated data file is found when restoring (state.Checkpoints.restore).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tensorflow as tf

from ..artifacts import CHECKPOINT_DIR, LOGS_DIR, SET_ASIDE
from .params import AUTO, Params, TrainError
from .state import DAMAGED, PARAMS_FILE, damaged, read_history
from .value_sources import RECIPE

POINTER_FILE = "checkpoint"  # TensorFlow's name, inside CHECKPOINT_DIR
EPOCH_KEY = "epoch/.ATTRIBUTES/VARIABLE_VALUE"  # the epoch counter (loop.py's Checkpoint(epoch=))
# The recipe's values (recipe.py: value_sources.RECIPE and the fine-tuning factor) at their Params
# defaults, which checkpoints written before a value existed stand for: those resume as before.
# `weights` is recorded as the file's sha256 (the path may move).
RECIPE_DEFAULTS = {
    field.name: field.default
    for field in dataclasses.fields(Params)
    if field.name in (*RECIPE, "fine_tune_lr_factor")
}
# The parameters the saved state depends on: resuming with other values is refused.
STATE_KEYS = (
    "model",
    "num_classes",
    "batch_size",
    "learning_rate",
    "width",
    "dropout",
    "precision",
    "seed",
    *RECIPE_DEFAULTS,
)
DATA_KEY = "data_fingerprint"  # in params.json: lineage.fingerprint(run_dir, "data")


@dataclass(frozen=True)
class Resume:
    """What the run folder's checkpoints allow: resume from `latest`, or start from epoch 0."""

    latest: str | None  # the checkpoint to restore; None: train from epoch 0
    other_data: bool = False  # the checkpoints were made on other data: set them aside first


def check(
    run_dir: Path,
    wanted: dict[str, Any],
    data_fingerprint: str | None,
    origins: dict[str, str] | None = None,
) -> Resume:
    """Decide from the checkpoints in run_dir, refusing incompatible or damaged ones; write nothing.

    `wanted` holds STATE_KEYS' values of this request; `origins` says where a value came from
    ("from" an optional part's file), for the sentence that refuses it.
    """
    folder = run_dir / CHECKPOINT_DIR
    latest = tf.train.latest_checkpoint(str(folder)) if folder.is_dir() else None
    if latest is None:
        if (folder / POINTER_FILE).is_file() and any(folder.glob("ckpt-*.index")):
            raise TrainError(
                f"{folder / POINTER_FILE} cannot be read, so the latest checkpoint is unknown: "
                f"delete {folder} to train from epoch 0, or use a new run_dir."
            )
        return Resume(None)
    try:
        saved = json.loads((folder / PARAMS_FILE).read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError):
        raise TrainError(
            f"{folder} holds checkpoints but no readable {PARAMS_FILE}, so they cannot be "
            "checked against this request: use a new run_dir, or delete that folder to start over."
        ) from None
    recorded = saved.get(DATA_KEY)
    if recorded is not None and recorded != data_fingerprint:
        return Resume(None, other_data=True)
    # STATE_KEYS and what the task adds (tasks.current().models.state: the image shape, ...)
    keys = [key for key in wanted if key != DATA_KEY]
    changed = [key for key in keys if saved.get(key, RECIPE_DEFAULTS.get(key)) != wanted[key]]
    if changed:
        raise TrainError(mismatch(folder, saved, wanted, changed, origins or {}))
    try:
        reader = tf.train.load_checkpoint(latest)  # reads the index: a damaged one fails here
    except DAMAGED as error:
        raise damaged(latest, error) from None
    read_history(folder, epochs_held(reader, latest))
    return Resume(latest)


def epochs_held(reader: Any, latest: str) -> int:
    """The epoch counter checkpoint `latest` holds: its number is not the epoch when a stop
    signal saved it mid-epoch (state.py numbers those above any epoch)."""
    if reader.has_tensor(EPOCH_KEY):
        return int(reader.get_tensor(EPOCH_KEY))
    return int(latest.rsplit("-", 1)[-1])


def mismatch(
    folder: Path,
    saved: dict[str, Any],
    wanted: dict[str, Any],
    changed: list[str],
    origins: dict[str, str],
) -> str:
    """The refusal, naming the values asked for outright first: an `auto` that differs (a batch
    the finder would choose anew) only follows from them, so naming it would hide the cause."""
    keys = [key for key in changed if wanted[key] != AUTO]
    keys = keys or (["batch_size"] if "batch_size" in changed else changed)  # the rate follows it
    then = ", ".join(f"{key}={_shown(saved.get(key, RECIPE_DEFAULTS.get(key)))}" for key in keys)
    now = ", ".join(f"{key}={_shown(wanted[key])}" for key in keys)
    grouped: dict[str, list[str]] = {}
    for key in keys:
        if key in origins:
            grouped.setdefault(origins[key], []).append(key)
    why = "; ".join(f"{', '.join(names)} {origin}" for origin, names in grouped.items())
    return (
        f"{folder} holds checkpoints made with {then}, not {now}{f' ({why})' if why else ''}: "
        "resume with the same parameters, or use a new run_dir (or delete that folder) to "
        "start over."
    )


def _shown(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else repr(value)


def recipe_state(params: Any) -> dict[str, Any]:
    """The recipe's part of params.json: what a resumed run must share (see RECIPE_DEFAULTS)."""
    from .finetune import file_sha256

    state = {key: getattr(params, key) for key in RECIPE_DEFAULTS}
    sha = file_sha256(params.weights)  # None for none and the task's pretrained names
    state["weights"] = f"sha256:{sha}" if sha else params.weights
    return state


def set_aside(run_dir: Path) -> list[Path]:
    """Rename checkpoints/ and logs/ to <name>.other-data-<time>/; return the new paths."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for name in (CHECKPOINT_DIR, LOGS_DIR):
        source = run_dir / name
        if source.exists():
            target = run_dir / SET_ASIDE.format(name=name, stamp=stamp)
            source.rename(target)
            moved.append(target)
    return moved


def other_data_sentence(moved: list[Path] | None) -> str:
    """Why training starts over, in one sentence (printed, and kept in metrics/train.json).

    `moved` is what set_aside returned; None on a worker, where the chief sets them aside.
    """
    if moved is None:
        where = "by the chief"
    else:
        where = "in " + (" and ".join(str(path) for path in moved) or "no folder (none was left)")
    return (
        f"{CHECKPOINT_DIR}/ were made on other data (01_data re-ran since): training starts from "
        f"epoch 0; the old {CHECKPOINT_DIR}/ and {LOGS_DIR}/ are set aside {where}."
    )


def check_same_start(strategy: tf.distribute.Strategy, epoch: int, folder: Path) -> None:
    """Refuse when workers restored different epochs: their run_dir is not shared storage."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return
    value = tf.constant([float(epoch), float(epoch) ** 2])
    values = strategy.experimental_distribute_values_from_function(lambda _: value)
    mean = strategy.reduce(tf.distribute.ReduceOp.MEAN, values, axis=None)
    mean, mean_square = (float(part) for part in mean.numpy())
    if not math.isclose(mean_square, mean**2, abs_tol=1e-3):
        raise TrainError(
            f"The workers resumed from different epochs (this one from epoch {epoch}): "
            f"{folder} must be storage that every worker reads, so that all of them "
            "restore the chief's checkpoint."
        )
