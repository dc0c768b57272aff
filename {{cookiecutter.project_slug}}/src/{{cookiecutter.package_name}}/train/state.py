"""Checkpoints, the history beside them, and the check that a run folder fits the request.

run_dir/checkpoints/ holds:
  ckpt-<epoch>.index, ckpt-<epoch>.data-*   model, optimizer (with its loss scale) and the epoch
                                            counter after that epoch (the last KEEP are kept)
  checkpoint                                TensorFlow's pointer to the latest, replaced atomically
  params.json                               what the checkpoints were made with (STATE_KEYS)
  history.json                              one entry per completed epoch

history.json is written before the checkpoint of the same epoch: a process killed between the two
leaves the history one epoch ahead, which a resume cuts back to the checkpoint's epoch, so the
history is never behind the weights. Under MultiWorkerMirroredStrategy every worker saves (saving
can involve collective ops), but only the chief writes here; the others save into a temporary
folder they delete.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ..artifacts import write_json
from .params import TrainError

CHECKPOINT_DIR = "checkpoints"
KEEP = 3
# The parameters the saved state depends on: resuming with other values is refused.
STATE_KEYS = (
    "model",
    "image_shape",
    "num_classes",
    "batch_size",
    "learning_rate",
    "width",
    "dropout",
    "precision",
    "seed",
)


def check_resumable(run_dir: Path, wanted: dict[str, Any]) -> bool:
    """True when run_dir holds checkpoints made with `wanted`; False when it holds none.

    Checkpoints made with other values are refused in one sentence: restoring them would fail
    on a shape, or silently continue a different experiment.
    """
    folder = run_dir / CHECKPOINT_DIR
    if tf.train.latest_checkpoint(str(folder)) is None:
        return False
    try:
        saved = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise TrainError(
            f"{folder} holds checkpoints but no readable params.json, so they cannot be checked "
            "against this request: use a new run_dir, or delete that folder to start over."
        ) from None
    for key in STATE_KEYS:
        if saved.get(key) != wanted[key]:
            raise TrainError(
                f"{folder} holds checkpoints made with {key}={saved.get(key)!r}, not "
                f"{wanted[key]!r}: resume with the same parameters, or use a new run_dir "
                "(or delete that folder) to start over."
            )
    return True


class Checkpoints:
    """Save after every epoch and restore the latest, with the history that goes with it."""

    def __init__(
        self,
        run_dir: Path,
        checkpoint: tf.train.Checkpoint,
        epoch: tf.Variable,
        *,
        chief: bool,
        state: dict[str, Any],
    ) -> None:
        self.folder = run_dir / CHECKPOINT_DIR
        self.checkpoint, self.epoch, self.chief, self.state = checkpoint, epoch, chief, state
        self._temp = None if chief else Path(tempfile.mkdtemp(prefix="worker-checkpoints-"))
        self.manager = tf.train.CheckpointManager(
            checkpoint, str(self._temp or self.folder), max_to_keep=KEEP if chief else 1
        )

    def restore(self) -> tuple[int, list[dict[str, Any]]]:
        """Load the latest checkpoint, if any: (epochs completed, their history)."""
        latest = tf.train.latest_checkpoint(str(self.folder))
        if latest is None:
            return 0, []
        try:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        except (AssertionError, ValueError, tf.errors.OpError) as error:
            message = " ".join(str(error).split())[:300]
            raise TrainError(
                f"{latest} does not fit this model ({message}): use a new run_dir, or delete "
                f"{self.folder} to start over."
            ) from None
        completed = int(self.epoch.numpy())
        history = read_history(self.folder)[:completed]
        return completed, history

    def save(self, completed: int, history: list[dict[str, Any]]) -> str | None:
        """Write the history, then the checkpoint after epoch `completed`; the chief's path."""
        if self.chief:
            write_json(self.folder / "history.json", history)
        self.epoch.assign(completed)
        path = self.manager.save(checkpoint_number=completed)
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            return None
        return path

    def start(self) -> None:
        """Record what the checkpoints of this run are made with (check_resumable reads it)."""
        if self.chief:
            write_json(self.folder / "params.json", self.state)

    def close(self) -> None:
        """Remove a worker's temporary folder."""
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)


def read_history(folder: Path) -> list[dict[str, Any]]:
    """history.json of a checkpoint folder; [] when there is none."""
    try:
        history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return history if isinstance(history, list) else []


def weights_digest(weights: list[Any]) -> str:
    """sha256 of the weights' bytes, in order: equal digests mean bit-identical models."""
    digest = hashlib.sha256()
    for weight in weights:
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(weight)).tobytes())
    return digest.hexdigest()
