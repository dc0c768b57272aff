"""The benchmarks' cheapest input: the training split as batches already built in memory.

pipeline_vs_memory asks whether training waits on its input, and gpu-bench times training without
reading anything, so train.run must be fed by something that costs next to nothing. train.run has
no hook for another input (and should not grow one for a benchmark), so for the duration of one
call the task's build_inputs, which every step reads through, is swapped and then restored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from ..tasks import current as task


@contextlib.contextmanager
def fed_from_memory(inputs: Any, labels: np.ndarray) -> Iterator[None]:
    """Feed the training split from batches built in memory, for the duration of one call.

    Validation still comes from the pipeline (it is not timed). The task's build_inputs is the
    class's own again afterwards, also when the call fails.
    """
    current = task()
    original = current.build_inputs

    def build_inputs(
        run_dir: Any, split: str = "train", batch_size: int = 64, **options: Any
    ) -> tf.data.Dataset:
        if split != "train":
            return original(run_dir, split, batch_size, **options)
        return memory_dataset(
            inputs,
            labels,
            batch_size,
            seed=options.get("seed", 42),
            repeat=options.get("repeat", False),
            input_context=options.get("input_context"),
        )

    current.build_inputs = build_inputs  # type: ignore[method-assign]
    try:
        yield
    finally:
        del current.build_inputs  # the class's own again


def memory_dataset(
    examples: np.ndarray,
    labels: np.ndarray,
    batch_size: int,
    *,
    seed: int,
    repeat: bool,
    input_context: tf.distribute.InputContext | None,
) -> tf.data.Dataset:
    """Every batch built once in memory, shuffled once: nothing is read, decoded or batched.

    With an input context, this input pipeline takes its share of the examples in per-replica
    batches, as the task's build_inputs does.
    """
    if input_context is not None:
        part = slice(input_context.input_pipeline_id, None, input_context.num_input_pipelines)
        examples, labels = examples[part], labels[part]
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    steps = len(labels) // batch_size
    order = np.random.default_rng(seed).permutation(len(labels))[: steps * batch_size]
    batches = (
        examples[order].reshape(steps, batch_size, *examples.shape[1:]),
        labels[order].reshape(steps, batch_size),
    )
    dataset = tf.data.Dataset.from_tensor_slices(batches).cache()
    if repeat:
        dataset = dataset.repeat()
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
