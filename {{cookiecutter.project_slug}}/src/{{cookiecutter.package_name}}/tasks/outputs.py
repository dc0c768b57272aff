"""What every task's SavedModel answers, whatever its input: the one serving contract.

`serving_default` returns float32 probabilities, int64 class ids and the class names; a client
of any task reads the same three outputs. Light to import: TensorFlow loads when a graph is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

SIGNATURE = "serving_default"  # what TF Serving and saved_model_cli call by default
OUTPUTS = ("probabilities", "class_ids", "class_names")


def serving_outputs(model: Any, classes: Sequence[str]) -> Any:
    """The serving outputs every task's export returns for the model's input: float32
    probabilities, int64 class ids and their class names."""
    import tensorflow as tf

    names = tf.constant(list(classes), dtype=tf.string)

    def outputs(inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        probabilities = tf.cast(model(inputs, training=False), tf.float32)
        class_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int64)
        return {
            "probabilities": probabilities,
            "class_ids": class_ids,
            "class_names": tf.gather(names, class_ids),
        }

    return outputs


def input_name(signature: Any) -> str:
    """The one input a serving signature takes, by name ("images", "text", "token_ids"): from a
    loaded signature's structured input, else a plain function's one parameter (a table's
    serving_default takes one per column: `feed` passes those)."""
    structured = getattr(signature, "structured_input_signature", None)
    if structured is not None:
        (name,) = structured[1]
        return name
    return next(iter(inspect.signature(signature).parameters))


def feed(signature: Any, batch: Any) -> dict[str, Any]:
    """A signature's keyword arguments for a batch of raw examples: the one input for an array
    (images, texts, token ids), one input per column for a structured array (a table's rows)."""
    import tensorflow as tf

    names = getattr(getattr(batch, "dtype", None), "names", None)
    if names:
        return {name: tf.constant(batch[name]) for name in names}
    return {input_name(signature): tf.constant(batch)}


def output_dtype(model: Any) -> str:
    """The dtype the model's predictions come out in: float32 for every task's model, whatever
    the precision policy (a float16 softmax rounds small probabilities to 0)."""
    import keras

    return keras.backend.standardize_dtype(model.outputs[0].dtype)
