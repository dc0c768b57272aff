"""Text examples on disk and in tf.data: records, tokenization in the pipeline, length buckets.

Tokenizing in tf.data keeps string ops out of the trained model (they would turn XLA off and stop
ONNX), and batching by length with `pad_to_bucket_boundary=True` gives the device a few fixed
shapes (8, 16, 32 … max_tokens) instead of one per batch, with far less padding than padding every
text to max_tokens. `padding_shares` measures that saving on a split.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from .vocab import token_ids

# The contract of a text record: what any reader needs to parse one, no package code required.
FEATURES = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SMALLEST_BUCKET = 8
TOKENIZE_BATCH = 256  # texts per TextVectorization call: one op call per batch, not per text


def serialize_example(text: str, label: int) -> bytes:
    """One example as a tf.train.Example: the UTF-8 text as bytes and the label id as int64."""
    feature = {
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode("utf-8")])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_records(path: str | os.PathLike[str], texts: Sequence[str], labels: Sequence[int]) -> int:
    """Write one TFRecord file whole (a partial file is never left under its name); the count."""
    partial = f"{os.fspath(path)}.partial"
    with tf.io.TFRecordWriter(partial) as writer:
        for text, label in zip(texts, labels, strict=True):
            writer.write(serialize_example(text, label))
    os.replace(partial, path)
    return len(texts)


def parse_example(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(text, label) of one serialized record, as FEATURES promises."""
    example = tf.io.parse_single_example(record, FEATURES)
    return example["text"], example["label"]


def read_records(paths: Sequence[str | os.PathLike[str]]) -> tf.data.Dataset:
    """(text, label) pairs of the given TFRecord files, parsed in parallel."""
    files = [os.fspath(path) for path in paths]
    return tf.data.TFRecordDataset(files).map(parse_example, num_parallel_calls=tf.data.AUTOTUNE)


def from_examples(texts: Sequence[str], labels: Sequence[int] | np.ndarray) -> tf.data.Dataset:
    """(text, label) pairs of a split held in memory (a TextSource's), as the records give them."""
    return tf.data.Dataset.from_tensor_slices(
        (tf.constant(list(texts), tf.string), tf.constant(np.asarray(labels), tf.int64))
    )


def tokenize(
    pairs: tf.data.Dataset, layer: keras.layers.TextVectorization, max_tokens: int
) -> tf.data.Dataset:
    """(ids [length], label) from (text, label): tokenized in batches, then one text again."""

    def ids(texts: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        ragged = token_ids(layer, texts, max_tokens)
        return ragged.to_tensor(), ragged.row_lengths(), labels

    def unpad(ids: tf.Tensor, length: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return ids[:length], label  # a plain Tensor: padded_batch and buckets take no ragged

    batched = pairs.batch(TOKENIZE_BATCH).map(ids, num_parallel_calls=tf.data.AUTOTUNE)
    return batched.unbatch().map(unpad)


def bucket_boundaries(max_tokens: int) -> list[int]:
    """Boundaries whose padded lengths are 8, 16, 32 … and max_tokens itself (the longest)."""
    lengths = []
    length = SMALLEST_BUCKET
    while length < max_tokens:
        lengths.append(length)
        length *= 2
    return [n + 1 for n in [*lengths, max_tokens]]


def batch_by_length(
    token_pairs: tf.data.Dataset, batch_size: int, max_tokens: int, bucketing: bool = True
) -> tf.data.Dataset:
    """Padded batches: by length bucket (a few fixed shapes), or to max_tokens without bucketing.

    Without bucketing every batch is padded to max_tokens: the one fixed shape the device would
    otherwise need, and the comparison `padding_shares` makes. It also keeps the examples in
    their order (buckets regroup them), so scoring uses it to match predictions to texts.
    """
    if not bucketing:
        return token_pairs.padded_batch(batch_size, padded_shapes=([max_tokens], []))
    boundaries = bucket_boundaries(max_tokens)
    return token_pairs.bucket_by_sequence_length(
        element_length_func=lambda ids, label: tf.shape(ids)[0],
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=True,
    )


def text_dataset(
    pairs: tf.data.Dataset,
    layer: keras.layers.TextVectorization,
    *,
    max_tokens: int,
    batch_size: int,
    shuffle_seed: int | None = None,
    bucketing: bool = True,
) -> tf.data.Dataset:
    """The training or evaluation input: tokenize, cache the ids, shuffle (training), batch.

    The ids are cached, not the strings, so tokenizing is paid once; shuffling comes before
    batching, so each epoch mixes the buckets' members differently.
    """
    data = tokenize(pairs, layer, max_tokens).cache()
    if shuffle_seed is not None:
        data = data.shuffle(16_384, seed=shuffle_seed, reshuffle_each_iteration=True)
    return batch_by_length(data, batch_size, max_tokens, bucketing).prefetch(tf.data.AUTOTUNE)


def padding_shares(
    pairs: tf.data.Dataset,
    layer: keras.layers.TextVectorization,
    *,
    max_tokens: int,
    batch_size: int,
    seed: int = 0,
) -> dict[str, float | int]:
    """The share of padded tokens in one shuffled epoch, with and without length buckets.

    Counted on the bucketed batches themselves (id 0 is only ever padding), so it is what the
    device sees: `bucketed`, `padded_to_max_tokens`, and the padded shapes each way. Without
    buckets every batch is padded to max_tokens (batch_by_length), so that share follows from the
    same epoch's tokens exactly: one epoch is tokenized and batched, not two.
    """
    data = text_dataset(
        pairs, layer, max_tokens=max_tokens, batch_size=batch_size, shuffle_seed=seed
    )
    padded = total = texts = 0
    lengths = set()
    for ids, _ in data:
        ids = ids.numpy()
        padded += int(np.sum(ids == 0))
        total += ids.size
        texts += ids.shape[0]
        lengths.add(ids.shape[1])
    flat = texts * max_tokens  # every text padded to max_tokens; as many tokens are not padding
    return {
        "bucketed": padded / total if total else 0.0,
        "bucketed_shapes": len(lengths),
        "padded_to_max_tokens": (flat - (total - padded)) / flat if flat else 0.0,
        "padded_to_max_tokens_shapes": 1 if texts else 0,
    }
