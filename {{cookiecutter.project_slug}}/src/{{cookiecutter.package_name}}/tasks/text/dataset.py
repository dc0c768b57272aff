"""A run's text data as batches: one split of run_dir/data/ as (token ids, labels) for training.

`make_dataset` reads the split's shards from meta.json through the shared reader
(data/reader.py: sharding per input pipeline, cache, shuffle, repeat, options). The texts
are tokenized in tf.data with the saved vocabulary (checked against its sha256 in meta.json), a
few hundred per call, then batched by length with every batch padded to its bucket's boundary:
the device sees a handful of shapes. `raw_examples` and `model_examples` give the first texts of
a split in shard order, as strings (the export's signature) and as ids (ONNX, benchmarks).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

from ...artifacts import DATA_DIR, resolve_run_dir
from ...data.base import DataError
from ...data.meta import read_task_meta
from ...data.pipeline import check_positive, shard_paths
from ...data.reader import Plan, Reading, Source, read
from . import hub_data
from .pipeline import FEATURES
from .records import TASK
from .vocab import load_vocabulary, token_ids

PARSE_BATCH = 256  # records parsed and tokenized per call: one op call per batch, not per text
MAX_SHUFFLE = 16_384
CACHE_LIMIT = 1 << 30  # "auto" keeps the ids in memory below this estimate (int32 ids)
NO_AUGMENT = "augment=True is an image option; text has none: use augment=False."
KEYS = ("task", "classes", "num_classes", "splits", "max_tokens", "vocabulary", "bucket_boundaries")


def make_dataset(
    run_dir: str | os.PathLike[str], split: str = "train", batch_size: int = 64, **options: Any
) -> tf.data.Dataset:
    """(ids int32 [B, L], labels int32 [B]) of one split, L one of meta's padded lengths.

    The shared reader's options (data/reader.py); `cache` "auto" keeps the token ids in memory
    unless they would take over a GiB. Training batches texts of similar length; evaluation keeps
    the split's order (its scores are matched to its texts), padding each batch to the bucket
    length that holds its longest.
    """
    meta = hub_data.meta_for(run_dir, read_text_meta(run_dir))  # a preset: its tokenizer
    max_tokens, boundaries = int(meta["max_tokens"]), meta["bucket_boundaries"]

    def source(name: str) -> Source:
        files = shard_paths(run_dir, meta, name)
        layer = vocabulary(run_dir, meta)

        def choose(plan: Plan) -> Reading:
            batching = bucketed if plan.training else in_order
            return Reading(
                decode=lambda records: (
                    hub_data.tokenized(records, meta)
                    if hub_data.KEY in meta
                    else tokenized(records, layer, max_tokens)
                ),
                cache=plan.cache is True
                or (plan.cache == "auto" and plan.count * max_tokens * 4 < CACHE_LIMIT),
                shuffle_buffer=min(max(plan.count, 1), MAX_SHUFFLE),
                cycle=len(files) if plan.training else 1,
                batch=lambda data, size, drop: batching(data, size, boundaries, drop),
            )

        return Source(files, int(meta["splits"][name]["count"]), choose)

    return read(source, meta["splits"], split, batch_size, no_augment=NO_AUGMENT, **options)


def longest_batches(data: tf.data.Dataset, meta: dict[str, Any]) -> tf.data.Dataset:
    """make_dataset's batches, each padded on to the longest bucket (max_tokens): the shape
    that needs the most memory, which the batch-size finder must probe. Its first batches are
    otherwise the short buckets most texts fall in, and a batch that fits at 8 or 16 tokens can
    run out of memory at 64. Padding is masked: the model's answers do not change."""
    length = int(meta["bucket_boundaries"][-1]) - 1

    def pad(ids: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        ids = tf.pad(ids, [[0, 0], [0, length - tf.shape(ids)[1]]])
        return tf.ensure_shape(ids, [None, length]), labels

    return data.map(pad, num_parallel_calls=tf.data.AUTOTUNE)


def raw_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` texts of a split (str) and their labels (int32), in shard order: what
    the export's string signature takes."""
    check_positive("count", count)
    meta = read_text_meta(run_dir)
    if split not in meta["splits"]:
        raise DataError(
            f"split={split!r} is not in the data: use one of {', '.join(meta['splits'])}."
        )
    records = tf.data.TFRecordDataset(shard_paths(run_dir, meta, split)).take(count)
    texts: list[str] = []
    labels: list[np.ndarray] = []
    for batch in records.batch(PARSE_BATCH).map(lambda r: tf.io.parse_example(r, FEATURES)):
        texts += [text.decode("utf-8") for text in batch["text"].numpy()]
        labels.append(batch["label"].numpy())
    label_ids = np.concatenate(labels).astype(np.int32) if labels else np.zeros(0, np.int32)
    return np.array(texts, dtype=str), label_ids


def model_examples(
    run_dir: str | os.PathLike[str], split: str, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """raw_examples as the model takes them: int64 ids [N, L] (what the token_ids signature and
    ONNX take), L the smallest padded length that holds the longest text, padded with 0 after
    each text's ids (for parity and benchmarks)."""
    texts, labels = raw_examples(run_dir, split, count)
    meta = read_text_meta(run_dir)
    layer = vocabulary(run_dir, meta)
    ids = token_ids(layer, tf.constant(texts.tolist(), tf.string), int(meta["max_tokens"]))
    longest = int(tf.reduce_max(ids.row_lengths())) if len(texts) else 1
    length = next(b - 1 for b in meta["bucket_boundaries"] if b - 1 >= longest)
    dense = ids.to_tensor(0, shape=[len(texts), length])
    return tf.cast(dense, tf.int64).numpy(), labels


def read_text_meta(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The text data step's meta.json (data/meta.py: read_task_meta)."""
    return read_task_meta(run_dir, TASK, KEYS, "text")


def vocabulary(run_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Any:
    """The saved vocabulary as its TextVectorization, refused if it is not the one meta names."""
    path = resolve_run_dir(run_dir, create=False) / DATA_DIR / meta["vocabulary"]
    return load_vocabulary(path, meta.get("vocabulary_sha256"))


def tokenized(records: tf.data.Dataset, layer: Any, max_tokens: int) -> tf.data.Dataset:
    """(ids int32 [length], label int32) of serialized records, parsed and tokenized in batches
    of PARSE_BATCH on every core, then one example again, so buckets can regroup them."""

    def ids(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        example = tf.io.parse_example(serialized, FEATURES)
        ragged = token_ids(layer, example["text"], max_tokens)
        return (
            tf.cast(ragged.to_tensor(), tf.int32),
            ragged.row_lengths(),
            tf.cast(example["label"], tf.int32),
        )

    batched = records.batch(PARSE_BATCH).map(ids, num_parallel_calls=tf.data.AUTOTUNE)
    return batched.unbatch().map(lambda i, n, y: (i[:n], y), num_parallel_calls=tf.data.AUTOTUNE)


def bucketed(
    data: tf.data.Dataset, batch_size: int, boundaries: list[int], drop_remainder: bool = False
) -> tf.data.Dataset:
    """Batches by length bucket, each padded to its bucket's boundary (pipeline.bucket_boundaries):
    lengths 8, 16, 32 … max_tokens, a few fixed shapes for the device."""
    return data.bucket_by_sequence_length(
        element_length_func=lambda ids, label: tf.shape(ids)[0],
        bucket_boundaries=list(boundaries),
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=True,
        drop_remainder=drop_remainder,
    )


def in_order(
    data: tf.data.Dataset, batch_size: int, boundaries: list[int], drop_remainder: bool = False
) -> tf.data.Dataset:
    """Batches of consecutive texts, in the split's order, each padded to the smallest bucket
    length that holds its longest text: the same few shapes as training, nothing reordered."""
    lengths = tf.constant([boundary - 1 for boundary in boundaries], tf.int32)

    def pad(ids: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        longest = tf.shape(ids)[1]
        target = tf.reduce_min(tf.boolean_mask(lengths, lengths >= longest))
        return tf.pad(ids, [[0, 0], [0, target - longest]]), labels

    batches = data.padded_batch(
        batch_size, padded_shapes=([None], []), drop_remainder=drop_remainder
    )
    return batches.map(pad, num_parallel_calls=tf.data.AUTOTUNE)
