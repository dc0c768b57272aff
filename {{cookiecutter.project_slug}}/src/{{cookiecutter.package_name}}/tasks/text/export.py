"""The text SavedModel: raw strings in; probabilities, class ids and class names out.

The trained model takes token ids, so the serving graph puts the tokenization in front of it: the
vocabulary file travels as an asset of the SavedModel (its lookup table is built from that file
when the model loads), and a client sends plain strings, to TF Serving's REST API too; beside the
class it gets `oov_share`, the share of the text's tokens outside the vocabulary. A second
signature, `token_ids`, takes the ids themselves: compiled backends (ONNX Runtime and others)
cannot run string ops, so 05_optimize converts that one and tokenizes apart (its cost measured on
its own).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from ...artifacts import StepError
from ..outputs import call_signature, serving_outputs
from .vocab import load_vocabulary, token_ids

SIGNATURE = "serving_default"  # what TF Serving and saved_model_cli call by default
IDS_SIGNATURE = "token_ids"  # the string-free graph, for ONNX and the compiled backends
TEXT_INPUT = "text"
IDS_INPUT = "token_ids"
OOV_OUTPUT = "oov_share"  # serving_default's extra output: how unlike the training texts


def build_text_archive(
    model: keras.Model,
    vocabulary_path: str | os.PathLike[str],
    classes: Sequence[str],
    max_tokens: int,
    fingerprint: str | None = None,
) -> keras.export.ExportArchive:
    """An ExportArchive with `serving_default` (strings) and `token_ids` (int64 ids) endpoints.

    The vocabulary is the data step's file, checked against its fingerprint, so the export can
    never tokenize with another vocabulary than the one the model was trained on.
    """
    vectorizer = load_vocabulary(vocabulary_path, fingerprint, as_asset=True)
    vectorizer(tf.constant([""]))  # built, as ExportArchive wants every layer it tracks
    outputs = serving_outputs(model, classes)

    def serve_text(text: tf.Tensor) -> dict[str, tf.Tensor]:
        ids = token_ids(vectorizer, text, max_tokens)
        return {**outputs(ids.to_tensor()), OOV_OUTPUT: oov_share(ids)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(vectorizer)
    text_spec = tf.TensorSpec([None], tf.string, name=TEXT_INPUT)
    archive.add_endpoint(SIGNATURE, serve_text, input_signature=[text_spec])
    archive.add_endpoint(IDS_SIGNATURE, outputs, input_signature=[ids_spec()])
    return archive


def oov_share(ids: tf.RaggedTensor) -> tf.Tensor:
    """float32 [batch]: the share of each text's tokens (its first max_tokens) that are not in
    the vocabulary; 1.0 for a text with no token at all (empty, only punctuation or emoji).
    The model still answers such a text, from the few words it knows or from none: a client
    reads a high share as "this input is unlike anything the model was trained on"."""
    unknown = tf.reduce_sum(tf.cast(tf.equal(ids, 1), tf.float32), axis=1)
    return unknown / tf.cast(ids.row_lengths(), tf.float32)


def export_text_model(
    model: keras.Model,
    vocabulary_path: str | os.PathLike[str],
    classes: Sequence[str],
    max_tokens: int,
    export_dir: str | os.PathLike[str],
    fingerprint: str | None = None,
) -> str:
    """Write the SavedModel to export_dir (the steps' writer makes it whole-or-nothing)."""
    archive = build_text_archive(model, vocabulary_path, classes, max_tokens, fingerprint)
    archive.write_out(os.fspath(export_dir), verbose=False)
    return os.fspath(export_dir)


def check_texts(texts: Any) -> list[str]:
    """The texts as a list of str, or one sentence naming the first that is not one: a number or
    None sent as a text would be classified as the string "7" or "None" (issue 45)."""
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence | np.ndarray):
        raise StepError(
            f"texts must be a list of strings, not {type(texts).__name__}: wrap one text in a list."
        )
    items = texts.tolist() if isinstance(texts, np.ndarray) else list(texts)
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise StepError(
                f"texts[{index}] is {text!r}, not a string: send every text as a string (an empty "
                "one is allowed); the model tokenizes it itself."
            )
    return items


def predict_texts(export_dir: str | os.PathLike[str], texts: Sequence[str]) -> dict[str, Any]:
    """Call a written SavedModel's serving_default with strings, as a client would."""
    texts = check_texts(texts)
    loaded = tf.saved_model.load(os.fspath(export_dir))
    result = call_signature(loaded.signatures[SIGNATURE], {TEXT_INPUT: np.array(texts, object)})
    return {
        "probabilities": result["probabilities"].numpy(),
        "class_ids": result["class_ids"].numpy(),
        "class_names": [name.decode("utf-8") for name in result["class_names"].numpy()],
        OOV_OUTPUT: result[OOV_OUTPUT].numpy(),
    }


def rest_payload(texts: Sequence[str]) -> dict[str, Any]:
    """TF Serving's REST body for serving_default: the strings as they are, no ids, no base64."""
    return {"signature_name": SIGNATURE, "instances": check_texts(texts)}


def ids_spec() -> tf.TensorSpec:
    """The input of the `token_ids` signature and of the ONNX model: int64 [batch, length]."""
    return tf.TensorSpec([None, None], tf.int64, name=IDS_INPUT)


def parity_ids(
    vocabulary_path: str | os.PathLike[str], texts: Sequence[str], max_tokens: int
) -> np.ndarray:
    """The int64 ids [n, max_tokens] the `token_ids` signature (and ONNX) takes for `texts`:
    the same tokenization as serving_default, padded to one shape for a converted graph."""
    vectorizer = load_vocabulary(vocabulary_path, as_asset=False)
    ids = token_ids(vectorizer, tf.constant(list(texts), tf.string), max_tokens)
    return ids.to_tensor(shape=[None, max_tokens]).numpy()


def client_encoder(
    vectorizer: keras.layers.TextVectorization, max_tokens: int
) -> Callable[[np.ndarray], np.ndarray]:
    """What a client of the `token_ids` signature (or of its ONNX model) runs in front of it:
    serving_default's tokenization as one compiled TensorFlow function, texts in, int64 ids
    [n, longest] out. 05_optimize times a converted backend with it, end to end."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def ids(texts: tf.Tensor) -> tf.Tensor:
        return tf.cast(token_ids(vectorizer, texts, max_tokens).to_tensor(), tf.int64)

    return lambda texts: ids(tf.constant(texts)).numpy()
