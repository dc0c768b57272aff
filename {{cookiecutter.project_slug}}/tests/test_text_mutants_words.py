"""What the text task tells a user, word for word, where a changed word or bound would mislead:
the refusals and notes of reading a folder or a CSV, the label audit, and the scores at their
edges (`make mutate text` runs these in-process)."""

from __future__ import annotations

import codecs
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_recall_fscore_support

from {{ cookiecutter.package_name }}.tasks.text import audit, records, sources
from {{ cookiecutter.package_name }}.tasks.text.files import TextSourceError, read_folder_rows, text_of
from {{ cookiecutter.package_name }}.tasks.text.scores import (
    accuracy,
    confident_mistakes,
    confused_pairs,
    macro_f1,
    per_class_scores,
    text_scores,
)


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(TextSourceError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def folder(root: Path, labels=("card", "fee"), count: int = 2) -> Path:
    for label in labels:
        (root / label).mkdir(parents=True, exist_ok=True)
        for index in range(count):
            (root / label / f"{index:02d}.txt").write_text(f"{label} {index}")
    return root


# ----------------------------------------------------------------------------- scores


def test_scores_at_their_edges_match_scikit_learn():
    """A class never seen nor predicted scores 0 (not NaN, not left-over memory); a class with
    precision and recall under one half keeps its F1; an empty split scores 0."""
    labels = np.array([0, 0, 0, 1, 1, 2])
    predictions = np.array([0, 1, 1, 1, 2, 0])
    expected = precision_recall_fscore_support(
        labels, predictions, labels=range(4), zero_division=0
    )
    for _ in range(3):  # memory freed just before, full of 7s, must not show through
        junk = [np.full(4, 7.0) for _ in range(50)]
        del junk
        for mine, theirs in zip(per_class_scores(labels, predictions, 4), expected, strict=True):
            np.testing.assert_array_equal(np.round(mine, 12), np.round(theirs, 12))
    assert accuracy(np.array([]), np.array([])) == 0.0
    assert macro_f1(np.array([], int), np.array([], int), 3) == 0.0


def test_macro_f1_counts_every_class_seen_or_predicted_once():
    """A class with one example, a class predicted once and never seen: both count; a class
    neither seen nor predicted does not."""
    labels = np.array([0, 0, 1, 1, 3])
    predictions = np.array([0, 0, 1, 2, 0])
    expected = f1_score(labels, predictions, average="macro")
    assert macro_f1(labels, predictions, 5) == pytest.approx(expected)


def test_the_report_lists_ten_pairs_and_ten_mistakes_by_default_most_first():
    """12 confused pairs and 12 mistakes: ten of each, the most frequent pair first; labels read
    as floats (a CSV through NumPy) are class ids all the same."""
    classes = [f"c{i}" for i in range(12)]
    labels = np.arange(12).repeat(2).astype(float)
    predictions = (labels.astype(int) + 1) % 12
    predictions[:2] = [5, 5]  # class 0 taken for c5 twice: the pair most often confused
    probabilities = np.eye(12)[predictions] * 0.9 + 0.1 / 12
    scores = text_scores(labels, probabilities, classes, [f"t{i}" for i in range(24)])
    assert set(scores) == {
        "test_accuracy", "test_macro_f1", "per_class", "confused_pairs", "confident_mistakes"
    }  # fmt: skip
    assert len(scores["confused_pairs"]) == 10 and len(scores["confident_mistakes"]) == 10
    assert scores["confused_pairs"][0] == {"true": "c0", "predicted": "c5", "count": 2}
    assert [m["text"] for m in scores["confident_mistakes"]] == [f"t{i}" for i in range(10)]
    assert len(confused_pairs(labels, predictions, classes)) == 10
    assert len(confident_mistakes(labels.astype(int), probabilities, classes, ["t"] * 24)) == 10


def test_confused_pairs_come_most_often_first_not_by_class_id():
    pairs = confused_pairs(np.array([0, 1, 1, 1]), np.array([1, 0, 0, 0]), ["a", "b"])
    assert [(p["true"], p["count"]) for p in pairs] == [("b", 3), ("a", 1)]


def test_mistakes_equally_sure_keep_the_splits_order():
    """Ties in confidence (a saturated softmax) keep the texts' order, so 03 and the report list
    the same mistakes on every run."""
    sure = np.random.default_rng(0).choice([0.6, 0.7, 0.9], size=2000)
    probabilities = np.stack([1 - sure, sure], axis=1)
    texts = [str(i) for i in range(2000)]
    found = confident_mistakes(np.zeros(2000, int), probabilities, ["a", "b"], texts, 2000)
    order = sorted(range(2000), key=lambda i: -sure[i])  # Python's sort is stable
    assert [m["text"] for m in found] == [texts[i] for i in order]


# ----------------------------------------------------------------------------- audit


def test_the_audit_says_its_findings_word_for_word():
    assert refused(audit.refuse_one_class, ["card"] * 3, "x.csv") == (
        "x.csv: every one of its 3 examples has the label 'card', so there is a single class; a "
        "classifier needs at least 2 classes, so add examples of another class."
    )
    assert audit.look_alike_note(["a", "b"]) == []
    (note,) = audit.look_alike_note(["A", "B", "C", "D", "a", "b", "c", "d", "e"])
    assert note == (
        "4 group(s) of labels differ only in case or surrounding spaces and are kept as separate "
        "classes: 'A' / 'a'; 'B' / 'b'; 'C' / 'c'; and 1 more group(s). If each group is one "
        "class, write its labels the same way (rename the folders or edit the label column) and "
        "run 01_data again."
    )
    (three,) = audit.look_alike_note(["A", "B", "C", "a", "b", "c"])
    assert "separate classes: 'A' / 'a'; 'B' / 'b'; 'C' / 'c'. If each group" in three


def test_texts_repeated_from_train_are_counted_as_the_model_reads_them():
    split = SimpleNamespace
    splits = {
        "train": split(texts=["Lost my card!", "a fee"]),
        "validation": split(texts=["lost my  CARD", "new text", "other"]),
        "test": split(texts=["nothing alike"]),
    }
    counts, (note,) = audit.repeated_in_train(splits)
    assert counts == {"validation": 1, "test": 0}
    assert note == (
        "1 of 3 validation texts (33.3%) also appear in train (the same words once lower-cased "
        "and without punctuation, as the model reads them): scores on them measure memory of "
        "train, so remove the repeated rows from the source if that is not intended."
    )
    splits["test"] = split(texts=["A FEE", "lost my card"])
    counts, (note,) = audit.repeated_in_train(splits)
    assert counts == {"validation": 1, "test": 2}
    assert note.startswith("1 of 3 validation texts (33.3%) and 2 of 2 test texts (100.0%) also")
    assert audit.repeated_in_train({"train": splits["train"], "test": split(texts=["x"])}) == (
        {"test": 0},
        [],
    )


# ----------------------------------------------------------------------------- files


def test_a_file_is_decoded_by_its_mark_and_a_bad_byte_named_by_its_line():
    line = "\u0a0a\n".encode("utf-16-le")  # a character whose bytes hold 0x0A: no line break
    data = codecs.BOM_UTF16_LE + line * 2 + b"\x00\xdc" + "x".encode("utf-16-le")
    assert text_of(data) == ("", "line 3: the byte 0x00 is not UTF-16")
    assert text_of(codecs.BOM_UTF8 * 2 + b"hi\r\nthere\r") == ("hi\nthere\n", "")


def test_a_folders_refusals_and_notes_word_for_word(tmp_path):
    root = folder(tmp_path / "texts")
    assert refused(read_folder_rows, tmp_path / "none") == (
        f"{tmp_path / 'none'} is not a folder: give path=<one sub-folder per class>."
    )
    (tmp_path / "empty" / "card").mkdir(parents=True)
    assert refused(read_folder_rows, tmp_path / "empty") == (
        f"{tmp_path / 'empty'} holds no .txt files in sub-folders: put each class's texts in "
        "its own folder."
    )
    assert read_folder_rows(root)[2] == []
    (root / "card" / "bad.txt").write_bytes(b"ok\n\xff")
    message = refused(read_folder_rows, root)  # skip_unreadable is off unless asked for
    assert message == (
        f"1 file in {root} cannot be read as text: card/bad.txt (line 2: the byte 0xff is not "
        "UTF-8), so fix it (text saved as UTF-8 or with a byte-order mark), or give "
        "skip_unreadable=True to leave them out."
    )
    for index in range(3):
        (root / "fee" / f"bad{index}.txt").write_bytes(b"\xff")
    message = refused(read_folder_rows, root)
    assert message.startswith(f"4 files in {root} cannot be read as text: card/bad.txt (")
    assert "fee/bad1.txt (line 1: the byte 0xff is not UTF-8); and 1 more, so fix them (" in message
    (root / "fee" / "bad2.txt").unlink()
    message = refused(read_folder_rows, root)
    assert "fee/bad1.txt (line 1: the byte 0xff is not UTF-8), so fix them" in message
    (root / "fee" / "bad1.txt").unlink()
    assert "(line 1: the byte 0xff is not UTF-8), so fix them" in refused(read_folder_rows, root)
    (_, _, notes) = read_folder_rows(root, skip_unreadable=True)
    assert notes[0].startswith("Skipped 2 files that cannot be read as text (skip_unreadable): ")


def test_links_to_folders_and_files_are_read_once_and_said(tmp_path):
    """A link to a class folder already read is skipped even when it sorts first; a link to a
    folder outside is a class of its own; a linked file inside is read; a file linking outside,
    and a .txt that links to a folder, are said and the folder's later files still read."""
    root = folder(tmp_path / "texts")
    outside = folder(tmp_path / "elsewhere", ("pin",))
    os.symlink(root / "card", root / "aaa")
    os.symlink(outside / "pin", root / "pin")
    os.symlink(tmp_path / "secret.txt", root / "card" / "00a.txt")
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(root / "fee" / "00.txt", root / "fee" / "00a.txt")
    os.symlink(root / "card", root / "fee" / "link.txt")
    (texts, labels, _), _, notes = read_folder_rows(root, skip_unreadable=True)
    assert sorted(set(labels)) == ["card", "fee", "pin"]
    assert labels.count("card") == 2 and labels.count("fee") == 3 and labels.count("pin") == 2
    assert "secret" not in texts
    assert notes[0] == (
        "Skipped 1 file that cannot be read as text (skip_unreadable): fee/link.txt (a link to a "
        "folder, not a file)."
    )
    assert notes[1].startswith("Skipped 1 class folder(s) that link to a class folder already")
    assert notes[1].endswith(": aaa (a link to card).")
    assert notes[2] == (
        f"Skipped 1 file(s) that link outside {root}: card/00a.txt (a link to "
        f"{tmp_path / 'secret.txt'}); a text must be a file in the data folder."
    )


def test_texts_in_sub_folders_are_merged_and_the_first_three_named(tmp_path):
    root = folder(tmp_path / "texts")
    for name in ("a", "b", "c", "d"):
        (root / "card" / name).mkdir()
        (root / "card" / name / "x.txt").write_text(f"nested {name}")
    notes = read_folder_rows(root)[2]
    assert notes == [
        "4 text(s) in sub-folders merged into their class: card/a/ (1), card/b/ (1), card/c/ (1) "
        f"and 1 more; a class needs its own folder directly in {root}."
    ]
    shutil.rmtree(root / "card" / "d")
    assert "card/c/ (1); a class needs" in read_folder_rows(root)[2][0]


# ----------------------------------------------------------------------------- CSV rows


def test_a_csvs_refusals_name_the_file_line_and_parameter():
    def rows(text: str, **columns) -> str:
        names = {"text_column": "text", "label_column": "label", **columns}
        return refused(sources.read_csv_rows, text.encode(), "x.csv", *names.values())

    assert rows("") == "x.csv is empty: give a CSV with a header line and examples."
    assert rows("text,label\n") == (
        "x.csv has a header but no examples: add at least one per class."
    )
    assert rows("text,label\n", label_column="intent") == (
        "x.csv, line 1: no column 'intent' in the header ['text', 'label'], so name the column "
        "with label_column=."
    )
    assert "with text_column=." in rows("text,label\n", text_column="body")
    assert rows("text,label\nonly text\n") == (
        "x.csv, line 2: the label is empty, so give it one or remove the line."
    )
    too_long = rows("text,label\nfine,a\n" + "x" * 200_000 + ",a\n")
    assert too_long.startswith("x.csv, line 3: the CSV cannot be read (")
    assert too_long.endswith("), so fix that line.")


def test_a_label_with_one_example_or_outside_the_classes_is_named_by_its_line():
    message = refused(
        sources._refuse_single_examples, ["a", "b", "c"], ["x", "x", "y"], ["l2", "l3", "l4"]
    )
    assert message == (
        "l4: the label 'y' has this single example, so it cannot be split stratified; add "
        "examples of it or remove the line."
    )
    assert refused(sources._ids, ["a"], ["z"], ["l2"], ["x", "y"]) == (
        "l2: the label 'z' is not one of the classes listed."
    )


# ----------------------------------------------------------------------------- data/


def test_the_old_data_waits_hidden_beside_the_new_and_a_left_over_does_not_fail(
    tmp_path, monkeypatch
):
    """During the swap the old data/ is a hidden sibling (.data.old-*) in the run folder, not
    elsewhere; a new data/ with no old one fails its rename as itself; an old folder that cannot
    be removed afterwards does not fail a complete write."""
    out, staging = tmp_path / "data", tmp_path / ".data.tmp-1"
    out.mkdir()
    staging.mkdir()
    rename, seen = Path.rename, []

    def watching(self, target):
        if self == staging:
            seen.extend(sorted(p.name for p in tmp_path.iterdir()))
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", watching)

    def stubborn(path, ignore_errors=False):
        if not ignore_errors:
            raise OSError("busy")

    monkeypatch.setattr(records.shutil, "rmtree", stubborn)
    records.replace_folder(staging, out)
    monkeypatch.undo()
    assert len(seen) == 2 and seen[0].startswith(".data.old-") and seen[1] == staging.name
    shutil.rmtree(out)
    staging.mkdir()

    def refusing(self, target):
        raise OSError("no")

    monkeypatch.setattr(Path, "rename", refusing)
    with pytest.raises(OSError, match="no"):
        records.replace_folder(staging, out)
