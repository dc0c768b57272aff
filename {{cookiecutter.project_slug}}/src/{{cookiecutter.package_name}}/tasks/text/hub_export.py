"""The SavedModel of a KerasHub encoder: raw strings in, the preset's tokenizer inside the graph.

`serving_default` takes strings and answers as the vocabulary models' export does (probabilities,
class ids and names, `oov_share`: the share of a text's word pieces that are [UNK]); `token_ids`
takes the ids, for ONNX Runtime and the compiled backends, which cannot run the tokenizer's
string ops.

The tokenizer's ops are tensorflow-text's (FastWordpieceTokenizeWithOffsets, ...): a process
that loads the SavedModel must `import tensorflow_text` first (`load_ops`). A model server
built without tensorflow-text's ops serves the `token_ids` signature instead and tokenizes in
front of it, with the same tokenizer (the README says how, and which servers have the ops).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf

from ..outputs import serving_outputs
from . import hub
from .export import IDS_SIGNATURE, OOV_OUTPUT, SIGNATURE, TEXT_INPUT, ids_spec
from .hub_data import encode


def build_archive(
    model: keras.Model, preset: str, classes: Sequence[str], length: int
) -> keras.export.ExportArchive:
    """serving_default (strings, the preset's tokenizer inside) and token_ids (int64 ids)."""
    load_ops()
    tokenizer = hub.tokenizer(preset)
    encode(preset, tf.constant([""]), length)  # built, as ExportArchive wants every layer it tracks
    _, _, unknown = hub.special_ids(preset)
    outputs = serving_outputs(model, classes)

    def serve_text(text: tf.Tensor) -> dict[str, tf.Tensor]:
        ids = encode(preset, text, length)
        answer = outputs(tf.cast(ids.to_tensor(), tf.int64))
        return {**answer, OOV_OUTPUT: unknown_share(ids, unknown)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)
    text_spec = tf.TensorSpec([None], tf.string, name=TEXT_INPUT)
    archive.add_endpoint(SIGNATURE, serve_text, input_signature=[text_spec])
    archive.add_endpoint(IDS_SIGNATURE, outputs, input_signature=[ids_spec()])
    return archive


def unknown_share(ids: tf.RaggedTensor, unknown: int | None) -> tf.Tensor:
    """float32 [batch]: the share of each text's word pieces (start and end tokens left out)
    that are the unknown token; 1.0 for a text with none."""
    pieces = tf.maximum(ids.row_lengths() - 2, 0)
    if unknown is None:
        return tf.zeros_like(tf.cast(pieces, tf.float32))
    count = tf.reduce_sum(tf.cast(tf.equal(ids, unknown), tf.float32), axis=1)
    return tf.where(pieces > 0, count / tf.cast(tf.maximum(pieces, 1), tf.float32), 1.0)


def load_ops() -> Any:
    """Register tensorflow-text's ops (the preset tokenizer's) in this process, where installed:
    tf.saved_model.load of an encoder's export needs them. None where it is not installed."""
    if importlib.util.find_spec("tensorflow_text") is None:
        return None
    import tensorflow_text

    return tensorflow_text
