"""Step 1 for text: every source on tiny data, BANKING77's split, and every refusal of bad input."""

from __future__ import annotations

import codecs
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.tasks.text.sources import (
    TextSourceError,
    load_text_source,
)
from {{ cookiecutter.package_name }}.tasks.text.vocab import count_tokens

ROWS = [
    (f"how do I {verb} my card number {i}", label)
    for i in range(4)
    for verb, label in (("top up", "top_up"), ("freeze", "freeze"), ("close", "close"))
]


def write_csv(path: Path, body: bytes) -> Path:
    path.write_bytes(body)
    return path


def good_csv(tmp_path: Path, extra: str = "") -> Path:
    lines = "text,label\n" + "".join(f"{t},{label}\n" for t, label in ROWS) + extra
    return write_csv(tmp_path / "data.csv", lines.encode())


def refusal(tmp_path: Path, body: bytes, **kwargs) -> str:
    with pytest.raises(TextSourceError) as caught:
        load_text_source("csv", write_csv(tmp_path / "bad.csv", body), **kwargs)
    assert isinstance(caught.value, DataError)  # the CLI prints a DataError as its sentence
    message = str(caught.value)
    assert_one_sentence(message)
    return message


def test_banking77_keeps_its_test_split_and_stratifies_validation():
    """The published 3,080 test texts are the test split; every intent is in validation."""
    source = load_text_source("banking77", val_fraction=0.1, seed=1)
    splits = source.splits
    assert len(source.classes) == 77
    assert len(splits["test"].texts) == 3080
    assert len(splits["train"].texts) + len(splits["validation"].texts) == 10003
    assert set(splits["validation"].labels.tolist()) == set(range(77))
    assert not set(splits["train"].texts) & set(splits["validation"].texts) - {""}
    # The published split, shuffled with the seed (the file is sorted by intent): the same texts
    # with the same labels, in an order whose first few hundred mix the intents.
    pairs = set(zip(splits["test"].texts, splits["test"].labels.tolist(), strict=True))
    index = splits["test"].texts.index("How do I locate my card?")
    assert source.classes[splits["test"].labels[index]] == "card_arrival" and len(pairs) >= 3000
    assert len(set(splits["test"].labels[:300].tolist())) > 60


def test_the_same_seed_gives_the_same_split_and_another_seed_another():
    """A rerun trains on the same examples; the seed is what changes them."""
    first, again, other = (load_text_source("banking77", seed=s) for s in (3, 3, 4))
    assert first.splits["validation"].texts == again.splits["validation"].texts
    assert first.splits["validation"].texts != other.splits["validation"].texts
    assert first.fingerprint == other.fingerprint  # the same files were read


def test_csv_with_bom_crlf_quoted_comma_and_newline_is_read(tmp_path):
    """What spreadsheets write is handled: BOM dropped, CRLF read, quotes kept whole."""
    body = "\ufefftext,label\r\n" + "".join(f"{t},{label}\r\n" for t, label in ROWS)
    body += '"well, it broke\r\nafter a week",close\r\n'
    source = load_text_source(
        "csv", write_csv(tmp_path / "x.csv", body.encode()), val_fraction=0.2, test_fraction=0.2
    )
    texts = [t for split in source.splits.values() for t in split.texts]
    assert "well, it broke\nafter a week" in texts
    assert len(texts) == len(ROWS) + 1
    assert source.classes == ["close", "freeze", "top_up"]


def test_csv_columns_are_named_by_parameters(tmp_path):
    """Any column names work when the parameters name them; the split covers every class."""
    body = "id;msg;intent\n".replace(";", ",") + "".join(
        f"{i},{t},{label}\n" for i, (t, label) in enumerate(ROWS)
    )
    source = load_text_source(
        "csv",
        write_csv(tmp_path / "x.csv", body.encode()),
        text_column="msg",
        label_column="intent",
        val_fraction=0.25,
        test_fraction=0.25,
    )
    for split in source.splits.values():
        assert Counter(split.labels.tolist()) == {0: 1, 1: 1, 2: 1} or len(split.labels) == 6


def test_missing_column_is_refused_with_the_parameter_to_set(tmp_path):
    """A header without the text column names the file, line 1 and text_column."""
    message = refusal(tmp_path, b"sentence,label\nhi,a\nho,a\n")
    assert "bad.csv, line 1" in message and "'text'" in message and "text_column" in message


def test_empty_text_is_refused_with_its_line(tmp_path):
    """An empty (or blank) text names the line it is on, counting the header as line 1."""
    body = "text,label\n" + "".join(f"{t},{label}\n" for t, label in ROWS) + '"  ",close\n'
    message = refusal(tmp_path, body.encode())
    assert f"bad.csv, line {len(ROWS) + 2}" in message and "text is empty" in message


def test_line_numbers_count_newlines_inside_quoted_fields(tmp_path):
    """After a quoted field spanning two lines, the next row's line is its line in an editor."""
    body = 'text,label\n"two\nlines",a\nfine,a\n,a\n'
    assert "bad.csv, line 5" in refusal(tmp_path, body.encode())


def test_bytes_that_are_not_utf8_are_refused_with_their_line(tmp_path):
    """Latin-1 text is not guessed at: the file and line of the first bad byte are named."""
    body = b"text,label\nfine,a\nalso fine,a\n" + "caf\xe9,a\n".encode("latin-1")
    message = refusal(tmp_path, body)
    assert "bad.csv, line 4" in message and "0xe9" in message and "UTF-8" in message


def test_label_with_a_single_example_is_refused(tmp_path):
    """One example cannot be in both train and validation: its line is named."""
    body = "text,label\na,x\nb,x\nc,x\nlonely,y\n"
    message = refusal(tmp_path, body.encode())
    assert "line 5" in message and "'y'" in message and "single example" in message


def test_long_texts_are_kept_and_counted(tmp_path):
    """Texts over max_tokens stay (the pipeline truncates them), and how many is said."""
    long = " ".join(["word"] * 30)
    path = good_csv(tmp_path, extra=f"{long},close\n{long},close\n")
    source = load_text_source("csv", path, max_tokens=20, val_fraction=0.2, test_fraction=0.2)
    assert sum(source.truncated.values()) == 2
    assert any(
        note.startswith("2 of 14 texts are longer than max_tokens=20") for note in source.notes
    )
    assert load_text_source(
        "csv", path, max_tokens=30, val_fraction=0.2, test_fraction=0.2
    ).truncated == {
        "train": 0,
        "validation": 0,
        "test": 0,
    }


def test_count_tokens_strips_punctuation_like_the_vectorizer():
    """Punctuation is no token and case does not matter, as in lower_and_strip_punctuation."""
    assert count_tokens("Where's my card?!  It's LATE.") == 5


def test_folder_of_txt_files_gives_one_class_per_subfolder(tmp_path):
    """Sub-folder names are the classes; each .txt is one example, BOM and CRLF handled."""
    for label in ("billing", "login"):
        (tmp_path / label).mkdir()
        for i in range(5):
            text = f"\ufeff{label} problem\r\nnumber {i}"
            (tmp_path / label / f"{i}.txt").write_bytes(text.encode())
    (tmp_path / "login" / "notes.md").write_text("ignored")
    source = load_text_source("folder", tmp_path, val_fraction=0.2, test_fraction=0.2)
    assert source.classes == ["billing", "login"]
    texts = [t for split in source.splits.values() for t in split.texts]
    assert len(texts) == 10 and "login problem\nnumber 3" in texts
    labels = np.concatenate([split.labels for split in source.splits.values()])
    assert np.bincount(labels).tolist() == [5, 5]


def test_folder_refuses_an_empty_file_and_a_single_example_class(tmp_path):
    """Both refusals name the file."""
    for label, count in (("a", 3), ("b", 1)):
        (tmp_path / label).mkdir()
        for i in range(count):
            (tmp_path / label / f"{i}.txt").write_text(f"text {i}")
    with pytest.raises(TextSourceError, match=r"b/0\.txt: the label 'b' has this single"):
        load_text_source("folder", tmp_path)
    (tmp_path / "a" / "1.txt").write_text("  \n")
    with pytest.raises(TextSourceError, match=r"a/1\.txt, line 1: the text is empty"):
        load_text_source("folder", tmp_path)


def test_files_are_read_by_their_byte_order_mark(tmp_path):
    """UTF-16 either way round, UTF-32 and UTF-8 with a mark, in a folder and as a CSV: the
    same texts as plain UTF-8 gives, accents and CRLF included."""
    encodings = ["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32"]
    for label in ("billing", "login"):
        (tmp_path / label).mkdir()
        for i, encoding in enumerate(encodings):
            body = f"{label} café\r\nnumber {i}"
            data = body.encode(encoding)
            if encoding == "utf-16-be":  # Python writes the big-endian mark only when asked
                data = codecs.BOM_UTF16_BE + data
            (tmp_path / label / f"{i}.txt").write_bytes(data)
    source = load_text_source("folder", tmp_path, val_fraction=0.2, test_fraction=0.2)
    texts = sorted(t for split in source.splits.values() for t in split.texts)
    assert texts == sorted(f"{label} café\nnumber {i}" for label in ("billing", "login")
                           for i in range(5))  # fmt: skip
    lines = "text,label\r\n" + "".join(f"{t} é,{label}\r\n" for t, label in ROWS)
    csv = write_csv(tmp_path / "utf16.csv", lines.encode("utf-16"))
    source = load_text_source("csv", csv, val_fraction=0.25, test_fraction=0.25)
    assert sorted(t for split in source.splits.values() for t in split.texts) == sorted(
        f"{t} é" for t, _ in ROWS
    )


def unreadable_folder(root: Path) -> Path:
    """Two classes of 4 good texts each, and 5 files that are not text (0x80 on line 2)."""
    for label in ("card", "fee"):
        (root / label).mkdir()
        for i in range(4):
            (root / label / f"{i}.txt").write_text(f"{label} question {i}", encoding="utf-8")
        for i in range(3 if label == "card" else 2):
            (root / label / f"binary{i}.txt").write_bytes(b"fine\n\x80\x81 not text")
    return root


def test_a_folders_unreadable_files_are_refused_together_named_and_counted(tmp_path):
    with pytest.raises(TextSourceError) as caught:
        load_text_source("folder", unreadable_folder(tmp_path))
    message = str(caught.value)
    assert_one_sentence(message)
    assert message.startswith(f"5 files in {tmp_path} cannot be read as text: ")
    assert "card/binary0.txt (line 2: the byte 0x80 is not UTF-8); card/binary1.txt" in message
    assert "fee/binary0.txt" not in message and "and 2 more" in message
    assert "skip_unreadable=True" in message


def test_skip_unreadable_leaves_them_out_and_says_how_many(tmp_path):
    source = load_text_source(
        "folder", unreadable_folder(tmp_path), val_fraction=0.25, test_fraction=0.25,
        skip_unreadable=True,
    )  # fmt: skip
    texts = [t for split in source.splits.values() for t in split.texts]
    assert sorted(texts) == sorted(f"{c} question {i}" for c in ("card", "fee") for i in range(4))
    assert source.notes[0].startswith("Skipped 5 files that cannot be read as text")
    assert "card/binary0.txt (line 2: the byte 0x80 is not UTF-8)" in source.notes[0]


def test_what_the_csv_module_cannot_parse_is_refused_with_its_line(tmp_path):
    """A field over the csv module's limit (131,072 characters) is named by file and line."""
    message = refusal(tmp_path, b"text,label\nfine,a\n" + b"x" * 200_000 + b",a\n")
    assert "bad.csv, line 3" in message and "cannot be read" in message


@pytest.mark.parametrize("kwargs", [{"max_tokens": 0}, {"test_fraction": 1.5}])
def test_bad_sizes_and_fractions_are_refused(tmp_path, kwargs):
    """max_tokens and the fractions are checked before any file is read."""
    with pytest.raises(DataError) as caught:
        load_text_source("csv", tmp_path / "missing.csv", **kwargs)
    assert_one_sentence(str(caught.value))


def test_unknown_source_and_missing_path_are_refused():
    """One sentence each, naming the value."""
    for args in (("tweets",), ("csv",)):
        with pytest.raises(TextSourceError) as caught:
            load_text_source(*args)
        assert_one_sentence(str(caught.value))
