"""What every task's input pipeline shares: a split's shard files, how they are divided among
input pipelines and workers, and the check of a whole-number setting.

Each task reads its shards its own way (tasks/<folder>/: the image task decodes pixels, the text
task tokenizes); which files a pipeline reads, and the auto-shard policy that keeps tf.distribute
from sharding a second time, are the same for all.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from ..artifacts import DATA_DIR, META_FILE, resolve_run_dir
from .base import DataError

READ_BUFFER = 2**20  # bytes read ahead from each shard


def auto_shard_policy(num_shards: int, num_workers: int) -> tf.data.experimental.AutoShardPolicy:
    """FILE when every worker gets at least one shard (each reads only its files), else DATA.

    DATA makes every worker read all records and keep every n-th: correct, but n times the reading.
    """
    check_positive("num_shards", num_shards)
    check_positive("num_workers", num_workers)
    policy = tf.data.experimental.AutoShardPolicy
    return policy.FILE if num_shards >= num_workers else policy.DATA


def shard_paths(run_dir: str | os.PathLike[str], meta: dict[str, Any], split: str) -> list[str]:
    """The split's shard files (meta lists them relative to run_dir/data/); names a missing one."""
    root = resolve_run_dir(run_dir, create=False)
    folder, meta_path = root / DATA_DIR, root / META_FILE
    paths = [folder / name for name in meta["splits"][split]["shards"]]
    for path in paths:
        if not path.is_file():
            raise DataError(
                f"{path} is listed in {meta_path} but missing: run the data step "
                "(01_data) again with the same run_dir."
            )
    if not paths:
        raise DataError(f"{meta_path} lists no shards for split {split!r}.")
    return [os.fspath(path) for path in paths]


def shard_files(
    files: list[str], batch_size: int, context: tf.distribute.InputContext
) -> tuple[list[str], tuple[int, int] | None, int]:
    """This input pipeline's files (or every n-th record when shards are fewer) and batch size."""
    pipelines, index = context.num_input_pipelines, context.input_pipeline_id
    replicas = context.num_replicas_in_sync
    if batch_size % replicas:
        raise DataError(
            f"batch_size={batch_size} is not divisible by the {replicas} replicas in sync: use a "
            f"multiple of {replicas} (the global batch, split evenly across replicas)."
        )
    per_replica = context.get_per_replica_batch_size(batch_size)
    if len(files) >= pipelines:
        return files[index::pipelines], None, per_replica
    return files, (pipelines, index), per_replica


def check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"{name}={value!r} is not allowed: use a whole number >= 1.")
