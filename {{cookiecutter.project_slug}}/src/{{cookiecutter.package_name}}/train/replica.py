"""The step functions every replica runs, and the reductions that make their numbers exact.

- a train step run on every replica with `strategy.run`: per-example losses averaged over the
  GLOBAL batch (`tf.nn.compute_average_loss`), so summing the replicas' gradients, which the
  optimizer does, gives the gradient of the mean loss;
- under mixed_float16 the loss is multiplied by a dynamic loss scale before the gradients are
  taken (keras.optimizers.LossScaleOptimizer.scale_loss; its `apply` divides the gradients by the
  scale, and skips the step and halves the scale when they overflowed): float16 gradients smaller
  than 6e-8 would otherwise become 0. mixed_bfloat16 has float32's range and needs no scaling;
- loss and accuracy as sums and counts, reduced across replicas with `strategy.reduce(SUM)`, so
  they are exact whatever the number of replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

SUM = tf.distribute.ReduceOp.SUM


def make_train_steps(
    strategy: tf.distribute.Strategy,
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    *,
    global_batch: int,
    loss_scaling: bool,
    jit: bool,
) -> Callable[[Any, tf.Tensor], tf.Tensor]:
    """`train_steps(iterator, steps)`: that many steps, returning [loss sum, correct, examples]."""
    agree = loss_scaling and strategy.num_replicas_in_sync > 1

    def gradients(images: tf.Tensor, labels: tf.Tensor):
        with tf.GradientTape() as tape:
            probabilities = model(images, training=True)
            per_example = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            if model.losses:  # weight regularizers, counted once over all replicas
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            scaled = optimizer.scale_loss(loss) if loss_scaling else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        return grads, sums(labels, probabilities, per_example)

    # XLA compiles the forward and backward pass, where the time goes; the update, with its
    # cross-replica all-reduce, stays outside, where every strategy supports it.
    compute = tf.function(gradients, jit_compile=True) if jit else gradients

    def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        grads, totals = compute(images, tf.cast(labels, tf.int32))
        if agree:
            grads = agree_on_overflow(optimizer, grads)
        optimizer.apply(grads, model.trainable_variables)
        return totals

    @tf.function
    def train_steps(iterator, steps: tf.Tensor) -> tf.Tensor:
        """`steps` steps in one call: Python's per-call overhead, large next to a small
        model's step, is paid once per epoch instead of once per step."""
        totals = tf.zeros([3])
        for _ in tf.range(steps):
            per_replica = strategy.run(replica_step, args=next(iterator))
            totals += strategy.reduce(SUM, per_replica, axis=None)
        return totals

    return train_steps


def make_eval_step(
    strategy: tf.distribute.Strategy, model: keras.Model
) -> Callable[[Any], tf.Tensor]:
    """`eval_step(batch)`: [loss sum, correct, examples] of one global batch, all replicas."""

    def replica_step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        probabilities = model(images, training=False)
        labels = tf.cast(labels, tf.int32)
        per_example = keras.losses.sparse_categorical_crossentropy(labels, probabilities)
        return sums(labels, probabilities, per_example)

    @tf.function(reduce_retracing=True)
    def eval_step(batch) -> tf.Tensor:
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(SUM, per_replica, axis=None)

    return eval_step


def sums(labels: tf.Tensor, probabilities: tf.Tensor, per_example: tf.Tensor) -> tf.Tensor:
    """[loss sum, correct predictions, examples] of one replica's batch, as float32."""
    predicted = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))
    count = tf.cast(tf.size(labels), tf.float32)
    return tf.stack([tf.reduce_sum(tf.cast(per_example, tf.float32)), correct, count])


def agree_on_overflow(optimizer: Any, grads: list[Any]) -> list[Any]:
    """Make every replica see an overflow when any replica's scaled gradients overflowed.

    LossScaleOptimizer checks for inf/NaN in each replica's own gradients, before they are summed
    across replicas. If one replica overflowed and another did not, the first would skip the
    update and the second would wait forever in its all-reduce. One scalar all-reduce makes the
    decision common: a NaN added to one gradient of every replica sends all of them down the
    skip-and-halve-the-scale path together.
    """
    finite = tf.cast(optimizer.check_finite(grads), tf.float32)
    overflows = tf.distribute.get_replica_context().all_reduce(SUM, 1.0 - finite)
    poison = tf.where(overflows > 0, float("nan"), 0.0)
    index = next(i for i, grad in enumerate(grads) if isinstance(grad, tf.Tensor))
    grads = list(grads)
    grads[index] = grads[index] + tf.cast(poison, grads[index].dtype)
    return grads
