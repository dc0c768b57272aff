"""Text sources under bad input (issue 45): a single class refused before anything is written,
look-alike labels named, texts repeated across splits counted, a folder's odd files (deeper
folders, links, folders named .txt, unreadable files) said, not skipped or read without a word."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.tasks.text.data_step import MAX_TOKENS
from {{ cookiecutter.package_name }}.tasks.text.records import prepare
from {{ cookiecutter.package_name }}.tasks.text.sources import TextSourceError, load_text_source


def csv_of(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in rows))
    return path


def class_folders(root: Path, labels: tuple[str, ...] = ("card", "fee"), count: int = 4) -> Path:
    for label in labels:
        (root / label).mkdir(parents=True)
        for i in range(count):
            (root / label / f"{i}.txt").write_text(f"{label.strip()} question number {i}")
    return root


def all_texts(source) -> list[str]:
    return sorted(t for split in source.splits.values() for t in split.texts)


def test_a_single_class_is_refused_before_data_is_written(tmp_path):
    """Every row one label: one sentence naming it and the 2 classes needed; no data/ folder."""
    data = csv_of(tmp_path / "one.csv", [(f"lost card {i}", "card") for i in range(12)])
    with pytest.raises(TextSourceError) as caught:
        prepare(tmp_path / "run", "csv", data_dir=data)
    message = str(caught.value)
    assert_one_sentence(message)
    assert "the label 'card'" in message and "at least 2 classes" in message
    assert not (tmp_path / "run" / "data").exists()
    with pytest.raises(TextSourceError, match="at least 2 classes"):
        load_text_source("folder", class_folders(tmp_path / "folder", ("card",)))


def test_labels_that_differ_only_in_case_or_spaces_are_named_in_a_note(tmp_path):
    """card / CARD / ' card' stay three classes (they may be meant), and a note names the group
    and how to merge it."""
    source = load_text_source(
        "folder", class_folders(tmp_path, ("card", "CARD", " card", "fee")), val_fraction=0.25,
        test_fraction=0.25,
    )  # fmt: skip
    assert source.classes == [" card", "CARD", "card", "fee"]
    note = next(n for n in source.notes if "differ only in case" in n)
    assert "' card' / 'CARD' / 'card'" in note and "kept as separate classes" in note
    assert "'fee'" not in note
    plain = load_text_source("folder", class_folders(tmp_path / "plain"), val_fraction=0.25,
                             test_fraction=0.25)  # fmt: skip
    assert not [n for n in plain.notes if "differ only in case" in n]


def test_texts_repeated_across_splits_are_counted_in_a_note_and_the_metrics(tmp_path):
    """Each text twice (once in upper case): most validation and test texts are in train too,
    counted after the vectorizer's standardization, in the notes and in metrics' meta."""
    rows = [
        (f"how do I {verb} my card {i}", verb) for i in range(10) for verb in ("freeze", "close")
    ]
    rows += [(text.upper() + "!", label) for text, label in rows]
    data = csv_of(tmp_path / "twice.csv", rows)
    source = load_text_source("csv", data, val_fraction=0.2, test_fraction=0.2)
    counts = source.repeated
    sizes = {name: len(source.splits[name].texts) for name in ("validation", "test")}
    assert set(counts) == {"validation", "test"} and counts["test"] >= 1
    note = next(n for n in source.notes if "also appear in train" in n)
    assert f"{counts['test']} of {sizes['test']} test texts" in note
    meta = prepare(tmp_path / "run", "csv", data_dir=data, val_fraction=0.2, test_fraction=0.2)
    written = json.loads((tmp_path / "run" / "data" / "meta.json").read_text())
    assert written["repeated_in_train"] == meta["repeated_in_train"] == counts
    unique = [(f"how do I {verb} my card {i}", verb) for i in range(10) for verb in ("a", "b")]
    clean = load_text_source("csv", csv_of(tmp_path / "u.csv", unique), val_fraction=0.2,
                             test_fraction=0.2)  # fmt: skip
    assert clean.repeated == {"validation": 0, "test": 0}
    assert not [n for n in clean.notes if "also appear in train" in n]


def test_the_data_command_refuses_a_value_before_tensorflow_loads(tmp_path):
    """`<package> data -p max_tokens=0` loaded TensorFlow (8-31 s) before refusing: now exit 2,
    the step's sentence, nothing written, and TensorFlow never imported (checked in the process)."""
    run_dir = tmp_path / "run"
    code = (
        "import sys\n"
        "from {{ cookiecutter.package_name }}.cli import main\n"
        f"status = main(['data', '--run-dir', {str(run_dir)!r}, '-p', 'max_tokens=0'])\n"
        "assert status == 2, status\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = f"max_tokens=0 is not allowed: use a whole number from 1 to {MAX_TOKENS}."
    assert expected in done.stderr, done.stderr
    assert not run_dir.exists()


def test_a_folders_sub_folders_links_and_outside_files_are_said(tmp_path):
    """Texts one level deeper are merged into their class (as the image task does), a class
    folder that links to another is not a second class, a link to /etc/passwd is not a text,
    an empty folder named x.txt is no file: each in a note, nothing skipped without a word."""
    root = class_folders(tmp_path / "data")
    (root / "card" / "extra").mkdir()
    for i in range(2):
        (root / "card" / "extra" / f"deep{i}.txt").write_text(f"deeper card question {i}")
    (root / "card_copy").symlink_to(root / "card", target_is_directory=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash")
    (root / "fee" / "passwd.txt").symlink_to(outside)
    (root / "fee" / "x.txt").mkdir()
    (root / ".ipynb_checkpoints").mkdir()  # hidden entries: skipped as the image task skips them
    (root / ".ipynb_checkpoints" / "0.txt").write_text("a checkpoint, not a class")
    (root / "fee" / ".0-checkpoint.txt").write_text("fee question number 0")
    source = load_text_source("folder", root, val_fraction=0.25, test_fraction=0.25)
    assert source.classes == ["card", "fee"]
    texts = all_texts(source)
    assert "deeper card question 1" in texts and len(texts) == 10
    assert not [t for t in texts if "root:x" in t]
    notes = " ".join(source.notes)
    assert "2 text(s) in sub-folders merged into their class: card/extra/ (2)" in notes
    assert "Skipped 1 class folder(s) that link to a class folder already read" in notes
    assert "card_copy (a link to card)" in notes
    assert f"Skipped 1 file(s) that link outside {root}: fee/passwd.txt (a link to" in notes


def test_a_dangling_link_and_a_read_error_join_the_unreadable_files(tmp_path, monkeypatch):
    """No FileNotFoundError or OSError: both are named with their reason in the one refusal of
    the unreadable files, and skip_unreadable leaves them out with a note."""
    root = class_folders(tmp_path / "data")
    (root / "card" / "gone.txt").symlink_to(root / "card" / "missing.txt")
    broken = root / "fee" / "bad.txt"
    broken.write_text("a file on a failing disk")
    read_bytes = Path.read_bytes

    def failing(path: Path) -> bytes:
        if path == broken:
            raise OSError(5, "Input/output error")
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", failing)
    with pytest.raises(TextSourceError) as caught:
        load_text_source("folder", root)
    message = str(caught.value)
    assert_one_sentence(message)
    assert message.startswith(f"2 files in {root} cannot be read as text: ")
    assert "card/gone.txt (a link to " in message and "which does not exist" in message
    assert "fee/bad.txt (cannot be read: Input/output error)" in message
    source = load_text_source(
        "folder", root, val_fraction=0.25, test_fraction=0.25, skip_unreadable=True
    )
    assert len(all_texts(source)) == 8 and source.notes[0].startswith("Skipped 2 files")
