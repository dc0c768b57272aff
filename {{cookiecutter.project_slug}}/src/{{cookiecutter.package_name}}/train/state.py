"""Checkpoints, the history beside them, and saving and restoring them after every epoch.

run_dir/checkpoints/ holds:
  ckpt-<epoch>.index, ckpt-<epoch>.data-*   model, optimizer (with its loss scale) and the epoch
                                            counter after that epoch (the last KEEP are kept)
  ckpt-<n>.index, ckpt-<n>.data-*           a step inside an epoch, saved on a stop signal: n is
                                            above MAX_EPOCHS and every number in the folder
  checkpoint                                TensorFlow's pointer to the latest, replaced atomically
  params.json                               what the checkpoints were made with (STATE_KEYS) and
                                            on which data (its lineage fingerprint)
  history.json                              one entry per completed epoch

history.json is written before the checkpoint of the same epoch: a process killed between the two
leaves the history one epoch ahead, which a resume cuts back to the checkpoint's epoch, so the
history is never behind the weights. Under MultiWorkerMirroredStrategy every worker saves (saving
can involve collective ops), but only the chief writes here; the others save into a temporary
folder they delete. Whether a folder's checkpoints may be resumed at all is resume.py's job.
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

from ..artifacts import CHECKPOINT_DIR
from ..limits import MAX_EPOCHS
from ..writes import write_json, writing
from .params import TrainError

KEEP = 3
PARAMS_FILE = "params.json"  # inside CHECKPOINT_DIR
HISTORY_FILE = "history.json"  # inside CHECKPOINT_DIR
# What to do when a checkpoint cannot be written (a full disk): the last whole one is kept.
RESUME = "run 03_train again with the same run_dir (it resumes from the last checkpoint)"
# Errors of a checkpoint file cut short or damaged: TensorFlow's, and IndexError ("Read less
# bytes than requested") from a truncated data file.
DAMAGED = (tf.errors.OpError, IndexError)


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

    def restore(self, latest: str | None) -> tuple[int, list[dict[str, Any]]]:
        """Load checkpoint `latest`, if any: (epochs completed, their history)."""
        if latest is None:
            return 0, []
        try:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        except DAMAGED as error:
            raise damaged(latest, error) from None
        except (AssertionError, ValueError) as error:
            message = " ".join(str(error).split())[:300].replace(". ", "; ").rstrip(".")
            raise TrainError(
                f"{latest} does not fit this model ({message}): use a new run_dir, or delete "
                f"{self.folder} to start over."
            ) from None
        completed = int(self.epoch.numpy())
        history = read_history(self.folder, completed)
        return completed, history

    def save(
        self, completed: int, history: list[dict[str, Any]], *, mid_epoch: bool = False
    ) -> str | None:
        """Write the history, then the checkpoint after epoch `completed` (ckpt-<completed>),
        or, `mid_epoch`, of a step inside the next epoch; the chief's path.

        A mid-epoch checkpoint takes a number no epoch's checkpoint and no file here has: saved
        as ckpt-<completed>, it overwrote the epoch's checkpoint in place, and a failed save's
        cleanup below then deleted the last good checkpoint, so the next run could not resume."""
        if self.chief:
            write_json(self.folder / HISTORY_FILE, history, then=RESUME)
        self.epoch.assign(completed)
        number = self._free_number() if mid_epoch else completed
        with writing(self.folder / f"ckpt-{number}", RESUME):
            try:
                path = self.manager.save(checkpoint_number=number)
            except BaseException:  # a full disk: the pointer still names the last whole one
                for partial in Path(self.manager.directory).glob(f"ckpt-{number}[._]*"):
                    if partial.is_dir():
                        shutil.rmtree(partial)
                    else:
                        partial.unlink()
                raise
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            return None
        return path

    def _free_number(self) -> int:
        """Above MAX_EPOCHS and above every checkpoint in the manager's folder."""
        numbers = [MAX_EPOCHS]
        for index in Path(self.manager.directory).glob("ckpt-*.index"):
            suffix = index.name[len("ckpt-") : -len(".index")]
            numbers += [int(suffix)] if suffix.isdigit() else []
        return max(numbers) + 1

    def start(self) -> None:
        """Record what the checkpoints of this run are made with (resume.check reads it)."""
        if self.chief:
            write_json(self.folder / PARAMS_FILE, self.state)

    def close(self) -> None:
        """Remove a worker's temporary folder."""
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)


def read_history(folder: Path, completed: int) -> list[dict[str, Any]]:
    """The first `completed` epochs of history.json; a missing, unreadable or short one is refused.

    The history is written before each checkpoint, so it always covers the checkpoint's epochs:
    when it does not, it was damaged, and resuming would report a history that is not this run's.
    """
    if completed == 0:
        return []
    path = folder / HISTORY_FILE
    try:
        history = json.loads(path.read_text(encoding="utf-8"))
        valid = isinstance(history, list) and all(isinstance(item, dict) for item in history)
    except (OSError, ValueError) as error:
        history, valid = None, False
        reason = "missing" if isinstance(error, FileNotFoundError) else "unreadable"
    else:
        reason = "not a list of epochs" if not valid else "shorter than the checkpoints"
    if not valid or len(history) < completed:
        raise TrainError(
            f"{path} is {reason} (the checkpoints hold {completed} epoch(s)): delete {folder} "
            "to train from epoch 0, or use a new run_dir."
        )
    return history[:completed]


def damaged(path: str | Path, error: BaseException) -> TrainError:
    """The one sentence for a checkpoint file that is cut short or corrupt."""
    folder = Path(path).parent
    return TrainError(
        f"Checkpoint {path} is truncated or corrupt ({type(error).__name__}): delete {folder} "
        "to train from epoch 0, or use a new run_dir."
    )


def weights_digest(weights: list[Any]) -> str:
    """sha256 of the weights' bytes, in order: equal digests mean bit-identical models."""
    digest = hashlib.sha256()
    for weight in weights:
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(weight)).tobytes())
    return digest.hexdigest()
