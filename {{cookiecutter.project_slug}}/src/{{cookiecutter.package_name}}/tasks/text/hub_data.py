"""A KerasHub preset's tokenizer in the text pipeline: it replaces the vocabulary step's for that
model, in tf.data, with the length buckets kept.

Which tokenizer a run folder's batches use follows the model: building a preset's model in this
process (training, the finders) makes its tokenizer the active one and writes `hub_tokens.json`
into the run folder (the preset, the sequence length, the data it was measured on); building one
of the task's own models removes that file; a process that builds no model (export, optimize)
reads it. The sequence length comes from the data: the longest tokenized training text plus the
start and end tokens, capped at the preset's position embeddings; batches are padded to length
buckets 8, 16, 32 … up to it, as the vocabulary's are up to max_tokens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from ...artifacts import resolve_run_dir
from ...data.pipeline import shard_paths
from . import hub
from .pipeline import FEATURES, bucket_boundaries

KEY = "hub_preset"  # in a meta that make_dataset tokenizes with a preset
MARKER = "hub_tokens.json"
PARSE_BATCH = 256
_UNSET = object()
_active: Any = _UNSET  # a preset, None (the task's own model), or _UNSET (no model built here)
_last: dict[str, Any] = {}  # the meta meta_for gave last, for the batch-size finder's probes
_said: set[tuple[str, str]] = set()  # (run folder, preset) whose length this process printed


def activate(preset: str | None) -> None:
    """The model this process builds: a preset (its tokenizer feeds it) or None (a vocabulary)."""
    global _active
    _active = preset


def meta_for(run_dir: str | os.PathLike[str], meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` as the active model reads the data: with a preset, its sequence length as
    max_tokens and bucket boundaries up to it, and KEY naming the preset; else as it is."""
    folder = resolve_run_dir(run_dir, create=False)
    marker, data = folder / MARKER, _data_key(meta)
    if _active is None:
        marker.unlink(missing_ok=True)
        return meta
    saved = _read(marker)
    if _active is _UNSET:
        if saved is None or saved.get("data") != data:
            return meta
        return _with(meta, saved["preset"], int(saved["sequence_length"]))
    if saved is None or saved.get("data") != data or saved.get("preset") != _active:
        length, longest, cap = sequence_length(folder, meta, _active)
        saved = {"preset": _active, "sequence_length": length, "longest": longest, "data": data}
        saved["cap"] = cap
        partial = marker.with_name(MARKER + ".partial")
        partial.write_text(json.dumps(saved, indent=2), encoding="utf-8")
        partial.replace(marker)
    if (str(folder), _active) not in _said:  # once a process: training, and 02 before it
        _said.add((str(folder), _active))
        length = int(saved["sequence_length"])
        print(
            f"Sequence length {length} tokens for model={_active}: the longest tokenized "
            f"training text ({saved['longest']} tokens with the start and end ones), capped at "
            f"the preset's {saved.get('cap', length)}; batches pad to "
            f"{', '.join(map(str, _lengths(length)))}.",
            flush=True,
        )
    return _with(meta, _active, int(saved["sequence_length"]))


def active_length(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with the active preset's length where this process measured or read one (the
    batch-size finder pads probes to it); else as it is."""
    return _last.get("meta", meta) if _active not in (None, _UNSET) else meta


def encode(preset: str, texts: tf.Tensor, length: int) -> tf.RaggedTensor:
    """int32 ids of a batch of strings: the start token, the text's first length - 2 tokens,
    the end token; [batch, (tokens)]. The pipeline, serving_default and a client alike."""
    if tf.executing_eagerly():  # KerasHub's tokenizers give Python lists when called eagerly
        return tf.function(lambda batch: encode(preset, batch, length))(tf.constant(texts))
    start, end, _ = hub.special_ids(preset)
    ids = tf.cast(hub.tokenizer(preset)(texts), tf.int32)
    count = tf.shape(texts)[0]
    edges = [value for value in (start, end) if value is not None]
    ids = ids[:, : length - len(edges)]

    def column(value: int) -> tf.RaggedTensor:
        return tf.RaggedTensor.from_tensor(tf.fill([count, 1], value))

    parts = ([column(start)] if start is not None else []) + [ids]
    return tf.concat(parts + ([column(end)] if end is not None else []), axis=1)


def tokenized(records: tf.data.Dataset, meta: dict[str, Any]) -> tf.data.Dataset:
    """(ids int32 [length], label int32) of serialized records, tokenized by the preset in
    batches of PARSE_BATCH on every core, then one example again for the buckets."""
    preset, length = meta[KEY], int(meta["max_tokens"])

    def ids(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        example = tf.io.parse_example(serialized, FEATURES)
        ragged = encode(preset, example["text"], length)
        return ragged.to_tensor(), ragged.row_lengths(), tf.cast(example["label"], tf.int32)

    batched = records.batch(PARSE_BATCH).map(ids, num_parallel_calls=tf.data.AUTOTUNE)
    return batched.unbatch().map(lambda i, n, y: (i[:n], y), num_parallel_calls=tf.data.AUTOTUNE)


def model_ids(meta: dict[str, Any], texts: np.ndarray) -> np.ndarray:
    """int64 ids [N, L] of raw texts, L the smallest padded length that holds the longest."""
    ragged = encode(meta[KEY], tf.constant(texts.tolist(), tf.string), int(meta["max_tokens"]))
    longest = int(tf.reduce_max(ragged.row_lengths())) if len(texts) else 1
    length = next(n for n in _lengths(int(meta["max_tokens"])) if n >= longest)
    return tf.cast(ragged.to_tensor(0, shape=[len(texts), length]), tf.int64).numpy()


def client_encoder(meta: dict[str, Any]) -> Any:
    """raw texts -> the int64 ids the token_ids signature takes, as its client runs it."""
    preset, length = meta[KEY], int(meta["max_tokens"])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def ids(texts: tf.Tensor) -> tf.Tensor:
        return tf.cast(encode(preset, texts, length).to_tensor(), tf.int64)

    return lambda texts: ids(tf.constant(texts)).numpy()


def sequence_length(folder: Path, meta: dict[str, Any], preset: str) -> tuple[int, int, int]:
    """(length, longest, cap): the longest tokenized training text with its start and end
    tokens, capped at the preset's position embeddings, and at least 8."""
    cap = hub.max_length(preset)
    records = tf.data.TFRecordDataset(shard_paths(folder, meta, "train")).batch(PARSE_BATCH)
    longest = 0
    for batch in records.map(lambda r: tf.io.parse_example(r, FEATURES)["text"]):
        ragged = encode(preset, batch, 1 << 30)
        longest = max(longest, int(tf.reduce_max(ragged.row_lengths())))
    return max(8, min(longest, cap)), longest, cap


def _with(meta: dict[str, Any], preset: str, length: int) -> dict[str, Any]:
    adjusted = {**meta, KEY: preset, "max_tokens": length}
    adjusted["bucket_boundaries"] = bucket_boundaries(length)
    _last["meta"] = adjusted
    return adjusted


def _lengths(length: int) -> list[int]:
    return [boundary - 1 for boundary in bucket_boundaries(length)]


def _data_key(meta: dict[str, Any]) -> str:
    """What the measured length depends on: the data step's output (a new one re-measures)."""
    train = meta["splits"]["train"]
    return f"{meta.get('vocabulary_sha256', '')}:{train.get('count')}:{meta.get('max_tokens')}"


def _read(marker: Path) -> dict[str, Any] | None:
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
