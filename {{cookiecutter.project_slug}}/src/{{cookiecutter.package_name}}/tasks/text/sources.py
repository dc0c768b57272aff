"""Where the texts come from: the embedded BANKING77, a user's CSV, or a folder of .txt files.

Every source ends as one `TextSource`: class names and, per split, the texts with their label ids.
Every check runs while reading, before anything is written, and refuses bad input with one sentence
that names the file and line (`TextSourceError`, a `DataError`): an empty text, bytes that are not
UTF-8, a missing column, a label with a single example. What can be handled is handled: a file
with a byte-order mark is read in its encoding (files.py), CRLF and CR become LF, and the csv
module reads quoted commas and newlines. Texts longer than `max_tokens` are kept (the pipeline
truncates them) and counted.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ...data.split import check_test_fraction, split_indices
from .audit import look_alike_note, refuse_one_class, repeated_in_train
from .files import TextSourceError, decode, read_folder_rows
from .vocab import count_long

__all__ = ["TextSourceError", "load_text_source"]

SOURCES = ("banking77", "csv", "folder")
BANKING77 = resources.files(__package__) / "banking77"


@dataclass
class Examples:
    """One split: the texts and, in the same order, their label ids into `TextSource.classes`."""

    texts: list[str]
    labels: np.ndarray


@dataclass
class TextSource:
    """A loaded source: its splits (train, validation, test), classes and what was noticed."""

    dataset: str
    classes: list[str]
    splits: dict[str, Examples]
    fingerprint: str  # sha256 of the bytes read: changes when any input file does
    truncated: dict[str, int] = field(default_factory=dict)  # per split: texts over max_tokens
    notes: list[str] = field(default_factory=list)
    repeated: dict[str, int] = field(default_factory=dict)  # per split: texts also in train


def load_text_source(
    source: str = "banking77",
    path: str | Path | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 42,
    max_tokens: int = 64,
    skip_unreadable: bool = False,
) -> TextSource:
    """Read a source and split it: stratified and seeded, so a rerun gives the same examples.

    BANKING77 keeps its published test split (results compare with published ones) and takes
    validation from train; a CSV or folder has no test split of its own, so `test_fraction` of
    each class is held out. A folder's files that cannot be read as text are refused together,
    or left out with a note under `skip_unreadable` (files.py).
    """
    if source not in SOURCES:
        raise TextSourceError(f"source={source!r} is not a text source: use one of {SOURCES}.")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise TextSourceError(
            f"max_tokens={max_tokens!r} is not allowed: use a whole number of tokens, e.g. 64."
        )
    check_test_fraction(test_fraction if source != "banking77" else 0.0, val_fraction)
    skipped: list[str] = []  # notes of the reading: files left out, look-alike labels
    if source == "banking77":
        classes, texts, labels, test, digest = _banking77()
        test_fraction = 0.0
    elif path is None:
        raise TextSourceError(f"source={source!r} needs a path: give path=<the {source}>.")
    else:
        path = Path(path)
        if source == "csv":
            if not path.is_file():
                raise TextSourceError(f"{path} is not a file: give path=<a CSV file>.")
            data = path.read_bytes()
            rows = read_csv_rows(data, str(path), text_column, label_column)
        else:
            rows, data, skipped = read_folder_rows(path, skip_unreadable)
        digest = hashlib.sha256(data)
        refuse_one_class(rows[1], str(path))
        _refuse_single_examples(*rows)
        classes = sorted(set(rows[1]))
        skipped += look_alike_note(classes)
        texts, labels = _ids(*rows, classes)
    index = split_indices(labels, classes, val_fraction, seed, test_fraction)
    splits = {name: _take(texts, labels, members) for name, members in index.items()}
    if source == "banking77":  # its own test split, shuffled like the others: the file is sorted
        order = np.random.default_rng(seed).permutation(len(test.labels))  # by class, and the
        splits["test"] = _take(test.texts, test.labels, order)  # first N texts must mix them
    truncated = {name: count_long(split.texts, max_tokens) for name, split in splits.items()}
    notes = list(skipped)
    if sum(truncated.values()):
        total = sum(len(split.texts) for split in splits.values())
        notes.append(
            f"{sum(truncated.values())} of {total} texts are longer than max_tokens={max_tokens} "
            "tokens and will be truncated to it."
        )
    repeated, said = repeated_in_train(splits)
    notes += said
    return TextSource(source, classes, splits, digest.hexdigest(), truncated, notes, repeated)


def read_csv_rows(
    data: bytes, name: str, text_column: str, label_column: str
) -> tuple[list[str], list[str], list[str]]:
    """(texts, labels, "file, line N" of each row) of a CSV's bytes, every row checked."""
    text = decode(data, name)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise TextSourceError(f"{name} is empty: give a CSV with a header line and examples.")
    for column, parameter in ((text_column, "text_column"), (label_column, "label_column")):
        if column not in header:
            raise TextSourceError(
                f"{name}, line 1: no column {column!r} in the header {header}, so name the "
                f"column with {parameter}=."
            )
    at_text, at_label = header.index(text_column), header.index(label_column)
    texts: list[str] = []
    labels: list[str] = []
    places: list[str] = []
    line = reader.line_num + 1
    for row in _rows(reader, name):
        if row:  # a blank line is no example
            cells = [row[i].strip() if i < len(row) else "" for i in (at_text, at_label)]
            for value, what in zip(cells, ("text", "label"), strict=True):
                if not value:
                    raise TextSourceError(
                        f"{name}, line {line}: the {what} is empty, so give it one or remove the "
                        "line."
                    )
            texts.append(cells[0])
            labels.append(cells[1])
            places.append(f"{name}, line {line}")
        line = reader.line_num + 1
    if not texts:
        raise TextSourceError(f"{name} has a header but no examples: add at least one per class.")
    return texts, labels, places


def _rows(reader: Any, name: str) -> Iterator[list[str]]:
    """The csv reader's rows; what it cannot parse (a field over its size limit) named by line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise TextSourceError(
                f"{name}, line {reader.line_num}: the CSV cannot be read ({error}), so fix that "
                "line."
            ) from None
        yield row


def _banking77() -> tuple[list[str], list[str], np.ndarray, Examples, Any]:
    """The vendored data set: its intents, train texts and ids, test split, and a digest."""
    classes = json.loads((BANKING77 / "categories.json").read_text(encoding="utf-8"))
    digest = hashlib.sha256()
    parts = {}
    for split in ("train", "test"):
        data = gzip.decompress((BANKING77 / f"{split}.csv.gz").read_bytes())
        digest.update(data)
        parts[split] = read_csv_rows(data, f"banking77/{split}.csv", "text", "category")
    texts, labels = _ids(*parts["train"], classes)
    return classes, texts, labels, Examples(*_ids(*parts["test"], classes)), digest


def _refuse_single_examples(texts: list[str], labels: list[str], places: list[str]) -> None:
    """A class with one example cannot be split stratified: name its file and line."""
    counts = Counter(labels)
    for label, place in zip(labels, places, strict=True):
        if counts[label] == 1:
            raise TextSourceError(
                f"{place}: the label {label!r} has this single example, so it cannot be "
                "split stratified; add examples of it or remove the line."
            )


def _ids(
    texts: list[str], labels: list[str], places: list[str], classes: list[str]
) -> tuple[list[str], np.ndarray]:
    """Label names to ids into `classes`; a label outside them is refused with its line."""
    index = {label: i for i, label in enumerate(classes)}
    for label, place in zip(labels, places, strict=True):
        if label not in index:
            raise TextSourceError(f"{place}: the label {label!r} is not one of the classes listed.")
    return texts, np.array([index[label] for label in labels], dtype=np.int64)


def _take(texts: list[str], labels: np.ndarray, rows: np.ndarray) -> Examples:
    return Examples([texts[i] for i in rows], labels[rows])
