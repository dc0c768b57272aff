"""The table SavedModel: one named input per raw column in; probabilities, class ids and names out.

The trained model takes the FeatureSpace's matrix, so the serving graph puts the fitted
FeatureSpace (and the training means that stand in for missing numbers) in front of it: a client
sends the columns as they are in the file, numbers as numbers (NaN where missing) and categories
as strings ("" where missing; an unseen one goes to the out-of-vocabulary bucket), to TF
Serving's REST API as JSON rows with named columns; beside the class it gets `out_of_range` and
`missing_share` (see `unusual`). A second signature, `features`, takes the
matrix itself: compiled backends (ONNX Runtime and others) cannot run string lookups, so 05_optimize
converts that one and measures the preprocessing's own cost apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...artifacts import StepError
from ..outputs import serving_outputs
from .columns import sanitize
from .features import encode, layout

SIGNATURE = "serving_default"  # what TF Serving and saved_model_cli call by default
FEATURES_SIGNATURE = "features"  # the string-free graph, for ONNX and the compiled backends
FEATURES_INPUT = "features"


def column_specs(schema: dict[str, Any]) -> dict[str, tf.TensorSpec]:
    """serving_default's inputs: float32 [batch] per numeric column, string [batch] per category."""
    specs = {
        c["name"]: tf.TensorSpec([None], tf.float32, name=c["name"]) for c in schema["numeric"]
    }
    for column in schema["categorical"]:
        specs[column["name"]] = tf.TensorSpec([None], tf.string, name=column["name"])
    return specs


def features_spec(width: int) -> tf.TensorSpec:
    """The input of the `features` signature and of the ONNX model: float32 [batch, width]."""
    return tf.TensorSpec([None, width], tf.float32, name=FEATURES_INPUT)


def build_table_archive(
    model: keras.Model, space: Any, schema: dict[str, Any], classes: Sequence[str], width: int
) -> keras.export.ExportArchive:
    """An ExportArchive with `serving_default` (raw columns) and `features` (the matrix)."""
    outputs = serving_outputs(model, classes)

    def serve_columns(columns: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        matrix = encode(space, columns, schema)
        return {**outputs(matrix), **unusual(columns, matrix, schema)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(space)
    archive.add_endpoint(SIGNATURE, serve_columns, input_signature=[column_specs(schema)])
    archive.add_endpoint(FEATURES_SIGNATURE, outputs, input_signature=[features_spec(width)])
    return archive


def unusual(
    columns: dict[str, tf.Tensor], matrix: tf.Tensor, schema: dict[str, Any]
) -> dict[str, tf.Tensor]:
    """serving_default's two outputs on input unlike the training split, per row:
    `out_of_range` (string): the columns, ", "-joined, whose number lies outside the training
    split's [min, max] or whose category the vocabulary does not hold (unseen, or rarer than
    min_count; a hashed column cannot tell); `missing_share` (float32): the share of columns
    missing (NaN, ""). The model still answers: a number beyond the range is extrapolated, an
    unknown category is the out-of-vocabulary bucket, a missing number the training mean."""
    positions = {slot["name"]: index for index, slot in enumerate(layout(schema))}
    names, outside, missing = [], [], []
    for column in schema["numeric"]:
        values = tf.cast(columns[column["name"]], tf.float32)
        low, high = (tf.constant(column[key], tf.float32) for key in ("min", "max"))
        names.append(column["name"])
        outside.append((values < low) | (values > high))  # NaN is neither: it is missing
        missing.append(tf.math.is_nan(values))
    for column in schema["categorical"]:
        absent = tf.equal(columns[column["name"]], "")
        unseen = tf.equal(matrix[:, positions[column["name"]]], 0.0)  # the OOV bucket's index
        names.append(column["name"])
        outside.append(tf.zeros_like(absent) if column.get("hashed") else unseen & ~absent)
        missing.append(absent)
    flags = tf.stack(outside, axis=1)
    table = tf.broadcast_to(tf.constant(names), tf.shape(flags))
    listed = tf.ragged.boolean_mask(table, flags)
    return {
        "out_of_range": tf.strings.reduce_join(listed, axis=1, separator=", "),
        "missing_share": tf.reduce_mean(tf.cast(tf.stack(missing, axis=1), tf.float32), axis=1),
    }


def check_rows(rows: np.ndarray, schema: dict[str, Any]) -> None:
    """A batch of raw rows must hold exactly the schema's columns, numbers where numbers go:
    a missing column, an extra one or a wrong type is one sentence before inference."""
    names = getattr(getattr(rows, "dtype", None), "names", None)
    if names is None:
        raise StepError(
            "rows without named columns are not allowed: send one value per column by name "
            f"({', '.join(column_specs(schema))})."
        )
    specs = column_specs(schema)
    missing = [name for name in specs if name not in names]
    extra = [name for name in names if name not in specs]
    if missing or extra:
        said = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(extra)}"
        hint = renamed(extra, specs)
        raise StepError(f"the rows have {said}: send exactly the columns {', '.join(specs)}.{hint}")
    for column in schema["numeric"]:
        if rows.dtype[column["name"]].kind not in "fiu":
            raise StepError(
                f"column {column['name']!r} holds {rows.dtype[column['name']]} values: it is "
                "numeric, send numbers (NaN where missing)."
            )


def renamed(sent: Sequence[str], expected: Sequence[str]) -> str:
    """A hint where a client sent a file's own column names: the data step made them identifiers
    (`education-num` → `education_num`), and those are the export's input names."""
    pairs = [(name, sanitize(name)) for name in sent if sanitize(name) in expected]
    if not pairs:
        return ""
    said = ", ".join(f"{name!r} as {ident!r}" for name, ident in pairs)
    return f" The data step renamed the file's columns to identifiers: send {said}."


def rest_rows(rows: np.ndarray) -> list[dict[str, Any]]:
    """JSON rows with named columns, a missing number kept NaN: json.dumps writes it as the bare
    token `NaN`, which TF Serving's JSON parser takes for a float input while it refuses `null`
    (json_tensor.cc), so one missing value would fail the whole request."""
    return [{name: row[name].item() for name in rows.dtype.names} for row in rows]


def rest_payload(rows: np.ndarray, schema: dict[str, Any]) -> dict[str, Any]:
    """TF Serving's REST body for serving_default: one JSON object per row, named columns."""
    check_rows(rows, schema)
    return {"signature_name": SIGNATURE, "instances": rest_rows(rows)}


def client_encoder(space: Any, schema: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """What a client of the `features` signature (or of its ONNX model) runs in front of it:
    serving_default's FeatureSpace as one compiled TensorFlow function, rows (a structured array)
    in, the float32 matrix out. 05_optimize times a converted backend with it, end to end."""
    specs = column_specs(schema)

    @tf.function(input_signature=[specs])
    def matrix(columns: dict[str, tf.Tensor]) -> tf.Tensor:
        return encode(space, columns, schema)

    return lambda rows: matrix({name: tf.constant(rows[name]) for name in specs}).numpy()
