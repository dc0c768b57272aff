"""The vocabulary: fitted on train only, a multiple of 8, and the same layer after a round trip."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.artifacts import StaleInputError
from {{ cookiecutter.package_name }}.tasks.text.vocab import (
    VocabularyError,
    build_vocabulary,
    count_tokens,
    load_vocabulary,
    save_vocabulary,
    token_ids,
)

TRAIN = ["Card, card CARD!", "my card is lost", "top up my account", "lost my phone"]
PROBE = tf.constant(["My CARD is lost, top up!", "validation-only words here", "[unused0]"])


def ids(layer, texts=PROBE, max_tokens=64) -> list[list[int]]:
    return token_ids(layer, texts, max_tokens).to_list()


def test_vocabulary_size_is_a_multiple_of_8_and_capped():
    """A small corpus is padded up to a multiple of 8; a large one is cut to vocab_size."""
    small = build_vocabulary(TRAIN, vocab_size=64)
    assert small.vocabulary_size() % 8 == 0 and small.vocabulary_size() == 16  # 8 words + 2, padded
    words = [f"word{i} " * (i % 7 + 1) for i in range(100)]
    assert build_vocabulary(words, vocab_size=24).vocabulary_size() == 24


def test_most_frequent_word_first_and_unseen_words_unknown():
    """Only training words get ids, most frequent first; other words and fillers map to 1."""
    layer = build_vocabulary(TRAIN, vocab_size=64)
    assert layer.get_vocabulary()[:3] == ["", "[UNK]", "card"]
    probe = ids(layer)
    assert probe[1] == [1, 1, 1]  # never seen in training
    assert probe[2] == [1]  # a filler token cannot be produced by standardization


def test_round_trip_gives_the_identical_layer(tmp_path):
    """Saved and loaded (in config or as an asset file), the layer gives the same ids."""
    layer = build_vocabulary(TRAIN, vocab_size=64)
    path = tmp_path / "data" / "vocabulary.txt"
    fingerprint = save_vocabulary(layer, path)
    assert fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.read_text(encoding="utf-8").splitlines()[0] == "card"  # plain: no special ids
    for as_asset in (False, True):
        again = load_vocabulary(path, fingerprint, as_asset=as_asset)
        assert again.get_vocabulary() == layer.get_vocabulary()
        assert ids(again) == ids(layer)


def test_a_changed_vocabulary_file_is_refused(tmp_path):
    """A file that is not the fingerprinted one names the step to re-run."""
    path = tmp_path / "vocabulary.txt"
    fingerprint = save_vocabulary(build_vocabulary(TRAIN, vocab_size=64), path)
    path.write_text(path.read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
    with pytest.raises(StaleInputError) as caught:
        load_vocabulary(path, fingerprint)
    assert_one_sentence(str(caught.value))
    assert "01_data" in str(caught.value)


def test_token_ids_cut_each_text_to_max_tokens():
    """Long texts keep their first max_tokens ids; short ones keep their length."""
    layer = build_vocabulary(TRAIN, vocab_size=64)
    cut = ids(layer, max_tokens=3)
    assert [len(row) for row in cut] == [3, 3, 1]
    assert cut[0] == ids(layer)[0][:3]
    assert np.all(np.array(cut[0]) > 1)


def test_a_text_without_tokens_gets_the_unknown_id():
    """Punctuation alone would be an all-padding row; it becomes one unknown token instead."""
    layer = build_vocabulary(TRAIN, vocab_size=64)
    assert ids(layer, tf.constant(["?!", "", "lost card"])) == [[1], [1], [4, 2]]


@pytest.mark.parametrize("value", [0, 12, 100, "20000", 8])
def test_vocab_size_not_a_multiple_of_8_from_16_is_refused(value):
    """The size rule is said in one sentence with an example."""
    with pytest.raises(VocabularyError) as caught:
        build_vocabulary(TRAIN, vocab_size=value)
    assert_one_sentence(str(caught.value))


def test_count_tokens_agrees_with_the_vectorizer():
    """The sources count long texts without TensorFlow; the counts are the layer's own."""
    texts = [
        "Where's my card?!  It's LATE.",
        "top-up (£20) failed; why??",
        "e-mail: me@bank.com\tthen\nnew line",
        "CAFÉ naïve — “quoted” …",
        "...",
        "",
    ]
    layer = build_vocabulary(TRAIN, vocab_size=64)
    lengths = layer(tf.constant(texts)).row_lengths().numpy().tolist()
    assert [count_tokens(text) for text in texts] == lengths
