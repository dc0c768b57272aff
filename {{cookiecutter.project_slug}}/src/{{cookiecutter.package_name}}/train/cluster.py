"""The cluster TF_CONFIG describes: how many workers train, and which one this process is.

MultiWorkerMirroredStrategy reads the same variable; reading it here first lets a typo in it be
refused in one sentence before any worker starts, connects and builds its model.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .errors import TrainError

# Task types of TF_CONFIG that train; MultiWorkerMirroredStrategy has no parameter servers.
TRAINING_TASKS = ("chief", "worker")


@dataclass(frozen=True)
class Cluster:
    """The part of TF_CONFIG that training needs: how many workers, and which one this is."""

    workers: int
    task_type: str
    task_index: int
    has_chief: bool = False

    @property
    def is_chief(self) -> bool:
        """The chief writes the run folder: task "chief", or worker 0 when no chief is named."""
        if self.task_type == "chief":
            return True
        return self.task_type == "worker" and self.task_index == 0 and not self.has_chief

    @property
    def rank(self) -> int:
        """0 for the chief, then the workers in order: the offset of this task's metrics port."""
        if self.task_type == "chief":
            return 0
        return self.task_index + (1 if self.has_chief else 0)

    @property
    def task(self) -> str:
        """The task as the metrics label it: "chief/0", "worker/1", …"""
        return f"{self.task_type}/{self.task_index}"


def read_tf_config(value: str | None = None) -> Cluster | None:
    """The cluster TF_CONFIG describes (default: the environment's), or None when it is unset."""
    text = os.environ.get("TF_CONFIG") if value is None else value
    if not text or not text.strip():
        return None
    try:
        config = json.loads(text)
        cluster, task = config.get("cluster") or {}, config.get("task") or {}
        workers = sum(len(cluster.get(kind) or []) for kind in TRAINING_TASKS)
        task_type, task_index = task["type"], int(task["index"])
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise TrainError(
            f"TF_CONFIG is not valid ({type(error).__name__}: {error}): it must be JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}}.'
        ) from None
    if task_type not in TRAINING_TASKS or not 0 <= task_index < len(cluster.get(task_type) or []):
        raise TrainError(
            f"TF_CONFIG names task {task_type!r} {task_index}, which is not one of its "
            f"{'/'.join(TRAINING_TASKS)} addresses: MultiWorkerMirroredStrategy trains on "
            "chief and worker tasks only."
        )
    return Cluster(
        workers=workers,
        task_type=task_type,
        task_index=task_index,
        has_chief=bool(cluster.get("chief")),
    )
