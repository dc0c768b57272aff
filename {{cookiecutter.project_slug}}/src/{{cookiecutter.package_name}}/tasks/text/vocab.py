"""The vocabulary: fitted on the training split only, saved as a plain file with its fingerprint.

Fitting it on train alone keeps validation and test words out of what the model can know. The
file holds one token per line, most frequent first, without the padding and out-of-vocabulary
entries (ids 0 and 1): the format `TextVectorization(vocabulary=<file>)` and TensorFlow's
`TextFileInitializer` read, so the export ships the same file as an asset. The vocabulary size
(tokens plus those two) is padded to a multiple of 8 with tokens that standardization can never
produce, so the embedding's rows suit Tensor Cores under mixed precision.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import keras
import tensorflow as tf

from ...artifacts import StaleInputError, StepError

VOCABULARY_FILE = "vocabulary.txt"
STANDARDIZE = "lower_and_strip_punctuation"
SPECIAL = 2  # id 0 pads, id 1 is every word outside the vocabulary
MULTIPLE = 8
# Standardization strips punctuation, so no text ever gives a token with brackets in it.
FILLER = "[unused{}]"
# What "lower_and_strip_punctuation" removes (keras' DEFAULT_STRIP_REGEX), to count tokens.
_PUNCTUATION = re.compile(r"[!\"#$%&()\*\+,\-\./:;<=>?@\[\\\]^_`{|}~']")


class VocabularyError(StepError):
    """A vocabulary parameter or file a step cannot use: one sentence naming it."""


def build_vocabulary(
    train_texts: Sequence[str], vocab_size: int = 20_000
) -> keras.layers.TextVectorization:
    """Adapt a TextVectorization on the training texts; its size is a multiple of 8.

    `vocab_size` is the most ids it may have (padding and unknown included); a smaller corpus
    gives fewer, rounded up to a multiple of 8 with filler tokens.
    """
    if not isinstance(vocab_size, int) or vocab_size < 16 or vocab_size % MULTIPLE:
        raise VocabularyError(
            f"vocab_size={vocab_size!r} is not allowed: use a multiple of 8 from 16 up, e.g. 20000."
        )
    if not train_texts:
        raise VocabularyError("The training split has no texts to build a vocabulary from.")
    fitter = keras.layers.TextVectorization(
        max_tokens=vocab_size, standardize=STANDARDIZE, split="whitespace", output_mode="int"
    )
    fitter.adapt(tf.data.Dataset.from_tensor_slices(list(train_texts)).batch(1024))
    tokens = fitter.get_vocabulary(include_special_tokens=False)
    short = -(len(tokens) + SPECIAL) % MULTIPLE
    return vectorizer(tokens + [FILLER.format(i) for i in range(short)])


def save_vocabulary(layer: keras.layers.TextVectorization, path: str | Path) -> str:
    """Write the tokens, one a line, and return the file's sha256: the lineage's fingerprint."""
    path = Path(path)
    tokens = layer.get_vocabulary(include_special_tokens=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(f"{token}\n" for token in tokens), encoding="utf-8", newline="\n")
    partial.replace(path)  # whole or not at all
    return file_fingerprint(path)


def load_vocabulary(
    path: str | Path, fingerprint: str | None = None, as_asset: bool = False
) -> keras.layers.TextVectorization:
    """The saved vocabulary as the same layer; refused if it is not the file `fingerprint` names.

    `as_asset` builds the lookup table from the file itself, so a SavedModel carries the file as
    an asset; otherwise the tokens live in the layer's config, as a `.keras` file wants them.
    """
    path = Path(path)
    if not path.is_file():
        raise VocabularyError(f"No vocabulary at {path}: run the data step (01_data) first.")
    if fingerprint is not None and file_fingerprint(path) != fingerprint:
        raise StaleInputError(
            f"{path} is not the vocabulary the data was written with (its sha256 differs), "
            "so re-run the data step (01_data)."
        )
    if as_asset:
        return vectorizer(str(path))
    return vectorizer(read_tokens(path))


def vectorizer(vocabulary: list[str] | str) -> keras.layers.TextVectorization:
    """The one way the task builds its layer: ragged int ids, so tf.data can bucket by length."""
    return keras.layers.TextVectorization(
        standardize=STANDARDIZE,
        split="whitespace",
        output_mode="int",
        ragged=True,
        vocabulary=vocabulary,
    )


def token_ids(
    layer: keras.layers.TextVectorization, texts: tf.Tensor, max_tokens: int
) -> tf.RaggedTensor:
    """Ids of a batch of strings, each text cut to its first max_tokens: [batch, (length)].

    Used by the pipeline and by the export's serving graph alike, so both cut texts the same way.
    A text with no token at all ("?!") gets the unknown id, so no row is all padding (a masked
    mean over nothing is 0 / 0).
    """
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise VocabularyError(
            f"max_tokens={max_tokens!r} is not allowed: use a whole number of tokens, e.g. 64."
        )
    ids = layer(texts)[:, :max_tokens]
    empty = tf.cast(ids.row_lengths() == 0, tf.int64)
    return tf.concat([ids, tf.ragged.range(empty, 2 * empty)], axis=1)


def count_tokens(text: str) -> int:
    """The number of tokens the vectorizer's standardize and whitespace split make of a text,
    without TensorFlow: the sources count what the pipeline will truncate before any is built."""
    return len(tokens(text))


def tokens(text: str) -> list[str]:
    """The words the vectorizer reads in a text (lower-cased, punctuation removed, split on
    whitespace), without TensorFlow."""
    return _PUNCTUATION.sub("", text.lower()).split()


def count_long(texts: Sequence[str], max_tokens: int) -> int:
    """How many texts the pipeline will truncate to `max_tokens`."""
    return sum(count_tokens(text) > max_tokens for text in texts)


def read_tokens(path: str | Path) -> list[str]:
    """The tokens of a vocabulary file, in id order from 2."""
    text = Path(path).read_text(encoding="utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def file_fingerprint(path: str | Path) -> str:
    """sha256 of the file's bytes, as every artifact in the lineage is fingerprinted."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
