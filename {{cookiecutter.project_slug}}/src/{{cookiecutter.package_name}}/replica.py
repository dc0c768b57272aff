"""The step functions every replica runs, and the reductions that make their numbers exact.

- a train step run on every replica with `strategy.run`: per-example losses averaged over the
  GLOBAL batch (`tf.nn.compute_average_loss`), so summing the replicas' gradients, which the
  optimizer does, gives the gradient of the mean loss;
- under mixed_float16 the loss is multiplied by a dynamic loss scale before the gradients are
  taken (keras.optimizers.LossScaleOptimizer.scale_loss; its `apply` divides the gradients by the
  scale, and skips the step and halves the scale when they overflowed): float16 gradients smaller
  than 6e-8 would otherwise become 0. mixed_bfloat16 has float32's range and needs no scaling;
- loss and accuracy as sums and counts, reduced across replicas with `strategy.reduce(SUM)`, so
  they are exact whatever the number of replicas;
- the input wait: with `timed`, each step reads the clock (`tf.timestamp`) once the previous
  step's update is done, asks the pipeline for the next batch, and reads it again when the batch
  is there. The difference is time the step waited for data; the rest is the model's.

It sits below both floors that run these steps: train (the loop, its phases, the augmentation
benchmark) and find (the finders' probes, which train.auto calls), so neither imports the other.
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
    task: Any,
    global_batch: int,
    loss_scaling: bool,
    jit: bool,
    timed: bool = True,
    augment: Callable[[tf.Tensor, tf.Tensor], tuple[tf.Tensor, tf.Tensor]] | None = None,
    label_smoothing: float = 0.0,
    num_classes: int | None = None,
    stop: tf.Variable | None = None,
    class_weights: list[float] | None = None,
) -> Callable[[Any, tf.Tensor], tuple[tf.Tensor, tf.Tensor]]:
    """`train_steps(iterator, steps)`: that many steps, returning ([loss sum, correct, examples],
    seconds waited for the input; 0.0 when not `timed`). With `stop` (preempt.StopRequest.flag),
    fewer when it is set on any replica: every replica sums it with its numbers, so all of them
    leave after the same step (examples / global batch says how many ran).

    `augment` (augment.py) runs on each replica's batch before the model, outside XLA; it may
    return soft (mixed) labels. With those, or with `label_smoothing`, the loss is the categorical
    cross-entropy of one-hot targets, and accuracy counts the target's top class.

    The loss and the counted accuracy are the task's (`task`: tasks.current(), whose
    build_losses and build_metrics give them); this module imports no task. `class_weights`
    (one per class: Recipe.class_weights) multiply each example's loss (`weighted`)."""
    replicas = strategy.num_replicas_in_sync
    agree = loss_scaling and replicas > 1
    soft = bool(label_smoothing) or augment is not None

    # The task's loss (tasks/base.py build_losses): sparse cross-entropy by default.
    loss_of = task.build_losses(label_smoothing=label_smoothing, soft=soft, num_classes=num_classes)
    correct = task.build_metrics()["accuracy"]

    def gradients(inputs: tf.Tensor, labels: tf.Tensor):
        with tf.GradientTape() as tape:
            probabilities = model(inputs, training=True)
            per_example = loss_of(labels, probabilities)
            if class_weights is not None:
                per_example = weighted(per_example, labels, class_weights)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            if model.losses:  # weight regularizers, counted once over all replicas
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            scaled = optimizer.scale_loss(loss) if loss_scaling else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        if labels.shape.rank == 2:  # soft labels: their top class
            labels = tf.argmax(labels, axis=-1, output_type=tf.int32)
        return grads, sums(labels, correct(labels, probabilities), per_example)

    # XLA compiles the forward and backward pass, where the time goes; the update, with its
    # cross-replica all-reduce, stays outside, where every strategy supports it.
    compute = tf.function(gradients, jit_compile=True) if jit else gradients

    def replica_step(inputs: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        labels = tf.cast(labels, tf.int32)
        if augment is not None:
            inputs, labels = augment(inputs, labels)
        grads, totals = compute(inputs, labels)
        if replicas > 1:  # see dense()
            grads = dense(grads)
        if agree:
            grads = agree_on_overflow(optimizer, grads)
        optimizer.apply(grads, model.trainable_variables)
        if timed:  # read after the update: the totals, and the next step's clock, wait for it
            totals += 0.0 * tf.cast(optimizer.iterations, tf.float32)
        if stop is not None:  # the step runs to its end either way; the loop leaves after it
            totals = tf.concat([totals, [tf.cast(stop.read_value() > 0, tf.float32)]], 0)
        return totals

    @tf.function
    def train_steps(iterator, steps: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """`steps` steps in one call: Python's per-call overhead, large next to a small
        model's step, is paid once per call (an epoch, or a tenth of one when reporting live)."""
        totals, waited = tf.zeros([3]), tf.constant(0.0, tf.float64)
        for _ in tf.range(steps):
            if timed:
                batch, wait = timed_next(iterator, after=totals)
                waited += wait
            else:
                batch = next(iterator)
            per_replica = strategy.run(replica_step, args=batch)
            reduced = strategy.reduce(SUM, per_replica, axis=None)
            totals += reduced[:3]
            if stop is not None and reduced[3] > 0:
                break
        return totals, waited

    return train_steps


def timed_next(iterator: Any, *, after: tf.Tensor) -> tuple[Any, tf.Tensor]:
    """The next batch and the seconds spent waiting for it, the clock started once `after` (the
    previous step's totals) exists. Explicit dependencies order the three, which TensorFlow
    would otherwise be free to run in any order."""
    with tf.control_dependencies([after]):
        asked = tf.timestamp()
    with tf.control_dependencies([asked]):
        batch = next(iterator)
    with tf.control_dependencies(tf.nest.flatten(batch, expand_composites=True)):
        arrived = tf.timestamp()
    return batch, arrived - asked


def make_eval_step(
    strategy: tf.distribute.Strategy, model: keras.Model, task: Any
) -> Callable[[Any], tf.Tensor]:
    """`eval_step(batch)`: [loss sum, correct, examples] of one global batch, all replicas, by
    the task's loss and accuracy (its build_losses and build_metrics)."""

    loss_of, correct = task.build_losses(), task.build_metrics()["accuracy"]

    def scored(inputs: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        probabilities = model(inputs, training=False)
        labels = tf.cast(labels, tf.int32)
        return sums(labels, correct(labels, probabilities), loss_of(labels, probabilities))

    def replica_step(inputs: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        # The last batch of a split that does not fill every replica leaves a replica an empty
        # batch; on the CPU, TensorFlow's fused Conv2D+ReLU hands an empty input back unchanged
        # (its channels, not the filters'), and the next convolution fails. An empty batch adds
        # nothing to the sums, so it skips the model.
        return tf.cond(tf.size(labels) > 0, lambda: scored(inputs, labels), lambda: tf.zeros([3]))

    @tf.function(reduce_retracing=True)
    def eval_step(batch) -> tf.Tensor:
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(SUM, per_replica, axis=None)

    return eval_step


def weighted(per_example: tf.Tensor, labels: tf.Tensor, class_weights: Any) -> tf.Tensor:
    """Each example's loss times its class's weight (soft labels: the targets' mix of weights),
    in float32 whatever the policy; the replica's sum is then divided by the global batch as
    before, so the replicas' gradients still add up to the gradient of the weighted mean."""
    weights = tf.constant(class_weights, tf.float32)
    if labels.shape.rank == 2:
        of_each = tf.reduce_sum(tf.cast(labels, tf.float32) * weights, axis=-1)
    else:
        of_each = tf.gather(weights, tf.cast(labels, tf.int32))
    return tf.cast(per_example, tf.float32) * of_each


def sums(labels: tf.Tensor, correct: tf.Tensor, per_example: tf.Tensor) -> tf.Tensor:
    """[loss sum, correct predictions, examples] of one replica's batch, as float32: `correct`
    is the task's accuracy of each example (1.0 where the top class is the label)."""
    count = tf.cast(tf.size(labels), tf.float32)
    hits = tf.reduce_sum(tf.cast(correct, tf.float32))
    return tf.stack([tf.reduce_sum(tf.cast(per_example, tf.float32)), hits, count])


def dense(grads: list[Any]) -> list[Any]:
    """Each gradient as a dense tensor of its variable's shape.

    An embedding's gradient is `IndexedSlices`: the rows of the batch's tokens. Across replicas
    the optimizer all-gathers those rows, and when the replicas' batches differ in length (each
    holds its own length bucket) the gathers differ in shape and the collective aborts ("Shape
    mismatch ... CollectiveGatherV2"). Dense gradients are summed by an all-reduce of one shape."""
    return [
        tf.convert_to_tensor(grad) if isinstance(grad, tf.IndexedSlices) else grad for grad in grads
    ]


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
