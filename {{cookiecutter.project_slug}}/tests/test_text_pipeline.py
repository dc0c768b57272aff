"""The text pipeline: records anyone can read, tokens made in tf.data, and length buckets."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.tasks.text.pipeline import (
    bucket_boundaries,
    from_examples,
    padding_shares,
    read_records,
    text_dataset,
    write_records,
)
from {{ cookiecutter.package_name }}.tasks.text.vocab import build_vocabulary, token_ids

# Exactly what the contract promises a reader: no package code needed to read a text record.
FEATURES = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
WORDS = ["card", "top", "up", "lost", "phone", "account", "transfer", "fee", "rate", "pin"]


def corpus(n: int = 120, seed: int = 0) -> tuple[list[str], list[int]]:
    """Texts of 1 to 70 words (so some exceed max_tokens=64), labels 0-2."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 71, n)
    texts = [" ".join(rng.choice(WORDS, size=k)) for k in lengths]
    return texts, [i % 3 for i in range(n)]


@pytest.fixture(scope="module")
def layer():
    return build_vocabulary(corpus()[0], vocab_size=32)


def test_records_hold_utf8_text_and_int64_label_for_any_reader(tmp_path):
    """Plain tf.io reads the records back: accents, emoji, newlines and labels intact."""
    texts = ["café au lait", "line one\nline two", "card ✓ 💳", "x"]
    path = tmp_path / "train.tfrecord"
    assert write_records(path, texts, [3, 0, 76, 1]) == 4
    assert not list(tmp_path.glob("*.partial"))
    plain = [tf.io.parse_single_example(r, FEATURES) for r in tf.data.TFRecordDataset(str(path))]
    assert [e["text"].numpy().decode() for e in plain] == texts
    assert [int(e["label"]) for e in plain] == [3, 0, 76, 1]
    parsed = [(t.numpy().decode(), int(y)) for t, y in read_records([path])]
    assert parsed == list(zip(texts, [3, 0, 76, 1], strict=True))


def test_bucket_boundaries_pad_to_8_16_32_and_max_tokens():
    """Padded lengths are powers of 2 from 8, then max_tokens; boundary = length + 1."""
    assert bucket_boundaries(64) == [9, 17, 33, 65]
    assert bucket_boundaries(50) == [9, 17, 33, 51]
    assert bucket_boundaries(5) == [6]


def test_bucketed_batches_hold_every_example_once_tokenized_and_cut(layer):
    """One epoch: each example once, its ids as token_ids gives them, padded to a bucket."""
    texts, labels = corpus()
    data = text_dataset(from_examples(texts, labels), layer, max_tokens=64, batch_size=16)
    expected = Counter(
        (tuple(ids), label)
        for ids, label in zip(
            token_ids(layer, tf.constant(texts), 64).to_list(), labels, strict=True
        )
    )
    seen: Counter = Counter()
    widths = set()
    for ids, batch_labels in data:
        widths.add(ids.shape[1])
        for row, label in zip(ids.numpy(), batch_labels.numpy(), strict=True):
            assert row[0] != 0  # no text is all padding
            seen[(tuple(int(i) for i in row if i != 0), int(label))] += 1
    assert seen == expected
    assert widths <= {8, 16, 32, 64} and len(widths) > 1
    assert max(len(k[0]) for k in seen) == 64  # 70-word texts were cut to max_tokens


def test_shuffled_epochs_differ_and_evaluation_order_is_fixed(layer):
    """A training dataset reshuffles each epoch; without a seed the order is the records'."""
    texts, labels = corpus()
    train = text_dataset(
        from_examples(texts, labels), layer, max_tokens=64, batch_size=8, shuffle_seed=1
    )
    first, second = ([y.numpy().tolist() for _, y in train] for _ in range(2))
    assert first != second
    fixed = text_dataset(from_examples(texts, labels), layer, max_tokens=64, batch_size=8)
    order = [y for _, batch in fixed for y in batch.numpy().tolist()]
    assert Counter(order) == Counter(labels)


def test_without_bucketing_every_batch_is_max_tokens_wide(layer):
    """The comparison case: one shape, max_tokens."""
    texts, labels = corpus()
    data = text_dataset(
        from_examples(texts, labels), layer, max_tokens=64, batch_size=16, bucketing=False
    )
    assert {ids.shape[1] for ids, _ in data} == {64}


def test_padding_shares_count_what_the_device_sees(layer):
    """Each text is padded to its bucket's width (8, 16, 32, 64) or to 64: exact shares."""
    texts, labels = corpus()
    lengths = [min(len(t.split()), 64) for t in texts]
    widths = [next(w for w in (8, 16, 32, 64) if n <= w) for n in lengths]
    shares = padding_shares(from_examples(texts, labels), layer, max_tokens=64, batch_size=16)
    assert shares["padded_to_max_tokens"] == pytest.approx(1 - sum(lengths) / (len(texts) * 64))
    assert shares["bucketed"] == pytest.approx(1 - sum(lengths) / sum(widths))
    assert shares["bucketed"] < shares["padded_to_max_tokens"]
    assert shares["padded_to_max_tokens_shapes"] == 1 and 1 < shares["bucketed_shapes"] <= 4


def test_padding_shares_batch_one_epoch_not_two(layer, monkeypatch):
    """Issue 42 §3.9: the unbucketed share follows from the bucketed epoch's own tokens (every
    batch padded to max_tokens), so 01 tokenizes and batches the training split once for both;
    the shares stay exact (the test above)."""
    from {{ cookiecutter.package_name }}.tasks.text import pipeline

    made = []
    real = pipeline.text_dataset

    def counted(*args, **kwargs):
        made.append(kwargs.get("bucketing", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "text_dataset", counted)
    texts, labels = corpus()
    pipeline.padding_shares(from_examples(texts, labels), layer, max_tokens=64, batch_size=16)
    assert made == [True]
