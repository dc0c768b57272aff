"""Text bugs that every other test let through (issue 45's survivors), each pinned by what a user
relies on: a folder split the same on every machine, training batches shuffled over the whole
split and grouped by length, evaluation padded with 0, macro F1 over predicted classes too, the
baseline scored on test, a Transformer block that never attends to padding, and data/ kept when
its replacement cannot be renamed into place. The in-process, fast ones guard `make mutate text`."""

from __future__ import annotations

import pathlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import f1_score

from {{ cookiecutter.package_name }}.tasks.text import records, task
from {{ cookiecutter.package_name }}.tasks.text.dataset import make_dataset, raw_examples
from {{ cookiecutter.package_name }}.tasks.text.models import EncoderBlock
from {{ cookiecutter.package_name }}.tasks.text.scores import macro_f1, text_scores
from {{ cookiecutter.package_name }}.tasks.text.sources import load_text_source
from {{ cookiecutter.package_name }}.tasks.text.vocab import load_vocabulary, token_ids

CLASSES = ("card", "fee", "pin")
WORDS = ["my", "card", "fee", "pin", "please", "why", "was", "charged", "help", "again"]
PER_CLASS = 50


def write_csv(path: Path) -> Path:
    """150 rows, 3 classes; each text starts with its own word uniq<row> (one id per training
    text), then 1 to 12 common words, every 5th 20 to 30, so each bucket of max_tokens=32 fills."""
    rng = np.random.default_rng(1)
    lines = ["text,label"]
    for row in range(PER_CLASS * len(CLASSES)):
        size = rng.integers(20, 31) if row % 5 == 0 else rng.integers(1, 13)
        lines.append(f"uniq{row} {' '.join(rng.choice(WORDS, size=int(size)))},{CLASSES[row % 3]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("text-mutants")
    csv = write_csv(folder / "intents.csv")
    records.prepare(folder / "run", "csv", data_dir=csv, max_tokens=32, vocab_size=1024, shards=2)
    return folder / "run"


def ids_of(run: Path, split: str) -> list[list[int]]:
    """Each text of a split, in shard order, as its token ids (no padding)."""
    texts, _ = raw_examples(run, split, 10_000)
    layer = load_vocabulary(run / "data" / "vocabulary.txt")
    return token_ids(layer, tf.constant(texts.tolist()), 32).to_list()


# ----------------------------------------------------------------------------- sources


def class_folders(root: Path) -> Path:
    for label in CLASSES:
        (root / label).mkdir(parents=True)
        for index in range(12):
            (root / label / f"{index:02d}.txt").write_text(f"{label} text number {index}")
    return root


def test_a_folders_split_does_not_depend_on_the_order_the_file_system_lists(tmp_path, monkeypatch):
    """os.listdir/scandir order differs between machines and file systems: the same folder must
    give the same splits (and fingerprint) whatever order its entries are listed in."""
    root = class_folders(tmp_path / "texts")
    first = load_text_source("folder", root, seed=3)
    iterdir, rglob = pathlib.Path.iterdir, pathlib.Path.rglob
    monkeypatch.setattr(pathlib.Path, "iterdir", lambda self: reversed(list(iterdir(self))))
    monkeypatch.setattr(
        pathlib.Path, "rglob", lambda self, pattern: reversed(list(rglob(self, pattern)))
    )
    second = load_text_source("folder", root, seed=3)
    for name, split in first.splits.items():
        assert second.splits[name].texts == split.texts, name
        assert second.splits[name].labels.tolist() == split.labels.tolist(), name
    assert second.fingerprint == first.fingerprint


# ----------------------------------------------------------------------------- batches


def test_training_batches_are_shuffled_and_grouped_by_length_by_default(run):
    """make_dataset(run, "train") without `training=` shuffles every epoch and batches texts of
    one length bucket together (8, 16 or 32 tokens): not the split's order, not mixed lengths."""
    position = {row[0]: index for index, row in enumerate(ids_of(run, "train"))}
    epochs, data = [], make_dataset(run, "train", 8, seed=1).map(lambda i, y: i)
    for _ in range(2):
        order = []
        for ids in data:
            ids = ids.numpy()
            lengths = (ids != 0).sum(axis=1)
            width = ids.shape[1]
            assert ((lengths > width // 2) | (width == 8)).all(), (width, lengths)
            order += [position[row[0]] for row in ids]
        epochs.append(order)
    assert sorted(epochs[0]) == list(range(len(position)))
    assert epochs[0] != sorted(epochs[0]) and epochs[0] != epochs[1]


def test_the_training_shuffle_mixes_the_whole_split_not_a_batch(run):
    """A shuffle buffer of one batch only mixes neighbours: the first batches would all come from
    the start of the split. Drawn from the whole split, they hold texts from its last quarter."""
    position = {row[0]: index for index, row in enumerate(ids_of(run, "train"))}
    first = []
    for ids, _ in make_dataset(run, "train", 8, seed=1).take(2):
        first += [position[row[0]] for row in ids.numpy()]
    assert max(first) >= 0.75 * len(position), sorted(first)


def test_evaluation_batches_pad_with_0_never_the_unknown_id(run):
    """Evaluation batches are each text's ids then 0s (padding, masked); 1 is the unknown word,
    which the model reads as a word."""
    expected = ids_of(run, "test")
    rows = [row for ids, _ in make_dataset(run, "test", 4) for row in ids.numpy().tolist()]
    assert len(rows) == len(expected)
    for row, ids in zip(rows, expected, strict=True):
        assert row[: len(ids)] == ids and set(row[len(ids) :]) <= {0}, (row, ids)


# ----------------------------------------------------------------------------- scores


def test_macro_f1_counts_a_class_that_is_only_predicted():
    """A class the model predicts but the test split never holds scores F1 0 and counts in the
    mean, as in scikit-learn: leaving it out flatters a model that invents a class."""
    labels = np.array([0, 0, 1, 1, 0, 1])
    predictions = np.array([0, 0, 1, 1, 2, 2])
    expected = f1_score(labels, predictions, average="macro")
    assert macro_f1(labels, predictions, 3) == pytest.approx(expected)
    probabilities = np.eye(3)[predictions]
    scores = text_scores(labels, probabilities, ["a", "b", "c"], ["t"] * 6)
    assert scores["test_macro_f1"] == pytest.approx(expected) and expected < 0.6


def test_the_baseline_is_fit_on_train_and_scored_on_test(run, monkeypatch):
    """The report headlines the baseline's test score beside the model's: it must be fit on the
    training split and scored on the test split, not on validation."""
    from {{ cookiecutter.package_name }}.tasks.text import baseline

    seen = {}

    def spy(train_texts, train_labels, test_texts, test_labels, **kwargs):
        seen.update(train=list(train_texts), test=list(test_texts), labels=list(test_labels))
        return {"baseline": "spy", "test_accuracy": 0.5}

    monkeypatch.setattr(baseline, "run_baseline", spy)
    result = task.baseline(run)
    assert result["test_accuracy"] == 0.5
    test_texts, test_labels = raw_examples(run, "test", 10_000)
    assert seen["test"] == test_texts.tolist() and seen["labels"] == test_labels.tolist()
    assert seen["train"] == raw_examples(run, "train", 10_000)[0].tolist()


# ----------------------------------------------------------------------------- models


def test_an_encoder_block_given_a_mask_never_attends_to_padding():
    """Called with a padding mask on plain tensors (no Keras mask riding on them), the block's
    outputs at the text's positions do not change with what the padded positions hold."""
    rng = np.random.default_rng(0)
    block = EncoderBlock(2, 32, 0.0)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], dtype=bool)
    other = np.where(mask[..., None], x, rng.normal(size=x.shape).astype("float32"))
    a = np.asarray(block(tf.constant(x), mask=tf.constant(mask)))
    b = np.asarray(block(tf.constant(other), mask=tf.constant(mask)))
    np.testing.assert_allclose(a[mask], b[mask], atol=1e-5)


# ----------------------------------------------------------------------------- data/


def test_data_is_kept_when_its_replacement_cannot_be_renamed_into_place(run, tmp_path, monkeypatch):
    """The new data/ is renamed into place only after the old one is set aside: if that rename
    fails, the old data/ is back, whole (deleting it first would leave no data at all)."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    before = {p.name: p.read_bytes() for p in (copy / "data").iterdir()}
    rename = pathlib.Path.rename

    def failing(self, target):
        if self.name.startswith(".data.tmp-"):
            raise OSError("rename refused")
        return rename(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", failing)
    with pytest.raises(OSError, match="rename refused"):
        records.prepare(copy, "csv", data_dir=run.parent / "intents.csv", max_tokens=32,
                        vocab_size=1024, shards=2, seed=5)  # fmt: skip
    assert {p.name: p.read_bytes() for p in (copy / "data").iterdir()} == before
    assert sorted(p.name for p in copy.iterdir() if p.name.startswith(".")) == []


def test_replacing_data_sets_the_old_folder_aside_until_the_new_one_is_in_place(
    tmp_path, monkeypatch
):
    """replace_folder on its own: a refused rename of the new folder leaves the old data/ whole
    and the new one where it was; a rename that works leaves only the new one."""
    out, staging = tmp_path / "data", tmp_path / ".data.tmp-1"
    for folder, text in ((out, "old"), (staging, "new")):
        folder.mkdir()
        (folder / "meta.json").write_text(text)
    rename = pathlib.Path.rename

    def failing(self, target):
        if self == staging:
            raise OSError("rename refused")
        return rename(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", failing)
    with pytest.raises(OSError, match="rename refused"):
        records.replace_folder(staging, out)
    assert (out / "meta.json").read_text() == "old" and staging.is_dir()
    monkeypatch.setattr(pathlib.Path, "rename", rename)
    records.replace_folder(staging, out)
    assert (out / "meta.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
