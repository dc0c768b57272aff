"""What every task's SavedModel answers, whatever its input: the one serving contract.

`serving_default` returns float32 probabilities, int64 class ids and the class names; a client
of any task reads the same three outputs. Light to import: TensorFlow loads when a graph is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
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


def call_signature(signature: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A loaded serving signature called with `inputs` ({name: batch}) once check_inputs has
    taken them: a bad input is one sentence, not TensorFlow's text from inside the call."""
    return signature(**check_inputs(signature, inputs))


def check_inputs(
    signature: Any, inputs: Mapping[str, Any], called: str = SIGNATURE
) -> dict[str, Any]:
    """The signature's keyword arguments as tensors of its input specs, or one sentence (StepError)
    naming the first input that is missing, unknown, of another kind (numbers for text, text for
    numbers) or of another shape (a 2-D batch for a 1-D one): called directly, the signature
    answers with TensorFlow's own text (issue 45)."""
    import numpy as np
    import tensorflow as tf

    from ..artifacts import StepError

    specs = signature.structured_input_signature[1]
    for name in [*specs, *inputs]:
        if (name in specs) != (name in inputs):
            said = "is missing" if name in specs else f"is no input of {called}"
            raise StepError(
                f"the input {name!r} {said}: {called} takes {', '.join(sorted(specs))}."
            )
    given = {}
    for name, spec in specs.items():
        value = inputs[name]
        array = np.asarray(value.numpy() if tf.is_tensor(value) else value)
        strings = spec.dtype == tf.string
        wanted = "strings" if strings else f"{spec.dtype.name} numbers"
        takes = f"{called} takes {wanted} for it, of shape {spec.shape.as_list()} (None: any size)"
        odd = _odd(array, "US" if strings else "iu" if spec.dtype.is_integer else "fiu")
        if odd is not None:
            raise StepError(f"the input {name!r} holds {odd}: {takes}.")
        if not spec.shape.is_compatible_with(array.shape):
            raise StepError(f"the input {name!r} has the shape {list(array.shape)}: {takes}.")
        if not array.size:  # an empty batch: no value to judge, the spec's dtype
            given[name] = tf.zeros(array.shape, spec.dtype)
            continue
        if not strings:
            array = array.astype(np.float64) if array.dtype.kind == "O" else array
            info = (np.iinfo if spec.dtype.is_integer else np.finfo)(spec.dtype.as_numpy_dtype)
            finite = array[~np.isnan(array)] if array.dtype.kind == "f" else array
            if finite.size and (finite.min() < info.min or finite.max() > info.max):
                raise StepError(
                    f"the input {name!r} holds values beyond {spec.dtype.name}'s range "
                    f"({info.min:g} to {info.max:g}): {takes}."
                )
        given[name] = tf.constant(array, dtype=spec.dtype)
    return given


def _odd(array: Any, kinds: str) -> str | None:
    """What in `array` an input taking NumPy `kinds` ("US": text) cannot take, or None."""
    strings = kinds == "US"
    if array.dtype.kind != "O":
        if array.dtype.kind in kinds or not array.size:
            return None
        return (
            f"text ({array.ravel()[0].item()!r})"
            if array.dtype.kind in "US"
            else f"{array.dtype} values"
        )
    for item in array.ravel():
        if strings and not isinstance(item, str | bytes):
            return f"{item!r}, not a string"
        if not strings and (isinstance(item, bool) or not isinstance(item, int | float)):
            return f"{item!r}, not a number"
    return None


def output_dtype(model: Any) -> str:
    """The dtype the model's predictions come out in: float32 for every task's model, whatever
    the precision policy (a float16 softmax rounds small probabilities to 0)."""
    import keras

    return keras.backend.standardize_dtype(model.outputs[0].dtype)
