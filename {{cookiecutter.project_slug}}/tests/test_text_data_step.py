"""Step 1 for text: data/ as the other steps read it, its vocabulary, reuse, whole-or-nothing
writes, the batches make_dataset gives, and every bad parameter refused before any work."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf
from helpers import Ticks, assert_one_sentence

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.find import probes
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.text import data_step, records
from {{ cookiecutter.package_name }}.tasks.text.benchmark import benchmark_text_pipeline
from {{ cookiecutter.package_name }}.tasks.text.dataset import (
    make_dataset,
    model_examples,
    raw_examples,
)
from {{ cookiecutter.package_name }}.tasks.text.pipeline import FEATURES
from {{ cookiecutter.package_name }}.tasks.text.vocab import count_long, load_vocabulary, read_tokens

CLASSES = ("card", "fee", "pin", "transfer")
WORDS = ["my", "card", "fee", "pin", "transfer", "please", "why", "was", "charged", "help"]
PER_CLASS = 60
META_KEYS = {
    "task", "dataset", "classes", "num_classes", "splits", "max_tokens", "vocab_size",
    "vocabulary", "bucket_boundaries", "truncated", "request", "notes",
}  # fmt: skip


def write_corpus(path: Path, seed: int = 0) -> Path:
    """240 rows, 4 classes; each text holds its own word uniq<row> and 1 to 12 common words, every
    7th 20 to 40, so every bucket is used and max_tokens=32 cuts some."""
    rng = np.random.default_rng(seed)
    lines = ["text,label"]
    for row in range(PER_CLASS * len(CLASSES)):
        size = rng.integers(20, 41) if row % 7 == 0 else rng.integers(1, 13)
        words = " ".join(rng.choice(WORDS, size=int(size)))
        lines.append(f"uniq{row} {words},{CLASSES[row % len(CLASSES)]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def params(csv: Path, **changes) -> data_step.Params:
    base = data_step.Params(
        dataset="csv", data_dir=str(csv), max_tokens=32, vocab_size=1024, val_fraction=0.2,
        test_fraction=0.2, shards=4, batch_size=16, benchmark_seconds=1.0,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict, Path]:
    """One run of the step on the CSV: (run folder, its metrics, the CSV)."""
    folder = tmp_path_factory.mktemp("text-data")
    csv = write_corpus(folder / "intents.csv")
    metrics = entry.run(folder / "run", params(csv), verbose=False)
    return folder / "run", metrics, csv


def test_a_text_benchmark_too_short_to_compare_writes_no_ratio(run) -> None:
    """Issue 42 §1.6: half a second a batch in a 1 s budget times fewer than 5 batches, and the
    verdict says too short: no ratio is written (null), a sibling key says why, rates stay."""
    run_dir, _, _ = run
    result = benchmark_text_pipeline(run_dir, 16, seconds=1, rounds=1, clock=Ticks(0.5))
    written = json.loads(json.dumps(result))
    assert written["too_short"] is True and written["verdict"].startswith("Too short")
    assert written["speedup_vs_naive"] is None and written["first_epoch_speedup_vs_naive"] is None
    assert [row["speedup_vs_naive"] for row in written["steps"]] == [None, None]
    assert written["speedup_vs_naive_reason"].startswith("Too short to compare")
    assert written["examples_per_sec"] > 0 and written["naive_examples_per_sec"] > 0


def meta_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "data" / "meta.json").read_text(encoding="utf-8"))


def test_the_run_writes_meta_json_with_the_text_contract(run):
    """meta.json holds the keys other steps read (no image_shape), and each says the truth."""
    run_dir, metrics, _ = run
    meta = meta_of(run_dir)
    assert set(meta) >= META_KEYS and "image_shape" not in meta
    assert meta["task"] == "text_classification" and meta["classes"] == list(CLASSES)
    assert set(meta["splits"]) == {"train", "validation", "test"}
    assert sum(s["count"] for s in meta["splits"].values()) == PER_CLASS * len(CLASSES)
    for name, split in meta["splits"].items():
        assert sum(split["per_class"].values()) == split["count"]
        assert len(split["shards"]) == 4
        assert all((run_dir / "data" / shard).is_file() for shard in split["shards"])
        texts, _ = raw_examples(run_dir, name, split["count"])
        assert meta["truncated"][name] == count_long(list(texts), 32)
    tokens = read_tokens(run_dir / "data" / meta["vocabulary"])
    assert meta["vocab_size"] == len(tokens) + 2 and meta["vocab_size"] % 8 == 0
    assert meta["bucket_boundaries"] == [9, 17, 33]
    assert sum(meta["truncated"].values()) > 0 and "truncated" in " ".join(meta["notes"])
    assert meta["request"]["max_tokens"] == 32 and meta["request"]["dataset"] == "csv"
    assert metrics["train_count"] == meta["splits"]["train"]["count"]
    assert metrics["padded_share_bucketed"] < metrics["padded_share_unbucketed"]
    assert metrics["padded_shapes_unbucketed"] == 1 < metrics["padded_shapes_bucketed"]
    assert metrics["lineage"]["writes"]["data"]
    assert json.loads((run_dir / "metrics" / "data.json").read_text())["dataset"] == "csv"
    assert {f"figures/data_{n}.png" for n in ("samples", "lengths", "classes", "throughput")} <= {
        *metrics["figures"]
    }
    assert all((run_dir / figure).is_file() for figure in metrics["figures"])


def test_the_vocabulary_is_fitted_on_the_training_split_only(run):
    """Each text's own word is in the vocabulary exactly when the text is a training one."""
    run_dir, _, _ = run
    tokens = set(read_tokens(run_dir / "data" / "vocabulary.txt"))
    for split in ("train", "validation", "test"):
        texts, _ = raw_examples(run_dir, split, 1000)
        own = {text.split()[0] for text in texts}
        assert own <= tokens if split == "train" else not own & tokens, split


def test_the_same_request_is_reused_and_another_is_written(run, tmp_path):
    """Same parameters and source bytes: nothing rewritten; another seed: a new split."""
    run_dir, _, csv = run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    before = {p.name: p.stat().st_mtime_ns for p in (copy / "data").iterdir()}
    again = records.prepare(copy, "csv", data_dir=csv, max_tokens=32, vocab_size=1024,
                            val_fraction=0.2, test_fraction=0.2, shards=4, seed=42)  # fmt: skip
    assert again["reused"] is True
    assert {p.name: p.stat().st_mtime_ns for p in (copy / "data").iterdir()} == before
    other = records.prepare(copy, "csv", data_dir=csv, max_tokens=32, vocab_size=1024,
                            val_fraction=0.2, test_fraction=0.2, shards=4, seed=7)  # fmt: skip
    assert other["reused"] is False and other["request"]["seed"] == 7
    assert meta_of(copy)["request"]["seed"] == 7


def test_a_failure_mid_write_leaves_no_data_and_keeps_an_earlier_one(run, tmp_path, monkeypatch):
    """A writer that fails after one shard: no data/ in a new run, the old data/ in an old one."""
    run_dir, _, csv = run
    real, calls = records.write_records, []

    def failing(*args):
        calls.append(args[0])
        if len(calls) > 1:
            raise OSError("disk went away")
        return real(*args)

    monkeypatch.setattr(records, "write_records", failing)
    fresh = tmp_path / "fresh"
    with pytest.raises(OSError, match="disk went away"):
        records.prepare(fresh, "csv", data_dir=csv, max_tokens=32, vocab_size=1024)
    assert calls and sorted(p.name for p in fresh.iterdir() if p.name != "lineage.json") == []
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    meta_before = (old / "data" / "meta.json").read_bytes()
    calls.clear()
    with pytest.raises(OSError):
        records.prepare(old, "csv", data_dir=csv, max_tokens=32, vocab_size=1024, seed=3)
    assert (old / "data" / "meta.json").read_bytes() == meta_before
    assert sorted(p.name for p in old.iterdir()) == sorted(p.name for p in run_dir.iterdir())


def test_batches_come_in_a_few_lengths_each_a_bucket_boundary(run):
    """Every batch is padded to 8, 16 or 32 tokens; every example comes once an epoch."""
    run_dir, _, _ = run
    meta = meta_of(run_dir)
    lengths, seen = Counter(), 0
    for ids, labels in make_dataset(run_dir, "train", 16):
        assert ids.dtype == tf.int32 and labels.dtype == tf.int32
        assert ids.shape[0] == labels.shape[0] <= 16
        lengths[int(ids.shape[1])] += 1
        seen += int(labels.shape[0])
    assert set(lengths) <= {8, 16, 32} and len(lengths) >= 2
    assert seen == meta["splits"]["train"]["count"]


def test_the_batch_finders_memory_probes_train_at_the_longest_bucket(run, monkeypatch):
    """On a GPU (stood in for here: the probe asks device_kind) every batch a batch-size probe
    trains on is padded to max_tokens, the shape that needs the most memory; the pipeline's
    first batches are the short buckets most texts fall in (8 and 16 tokens here)."""
    run_dir, _, _ = run
    seen: list[int] = []

    def run_steps(trainer: probes.Trainer, steps: int) -> np.ndarray:
        for _ in range(steps):
            ids, labels = next(trainer.iterator)
            seen.append(int(ids.shape[1]))
        return np.array([1.0, 0.0, float(labels.shape[0] * steps)])

    monkeypatch.setattr(probes, "device_kind", lambda: "gpu")
    monkeypatch.setattr(probes.Trainer, "run", run_steps)
    knobs = SimpleNamespace(model="bag_of_ngrams", width=16, dropout=0.1, seed=42)
    strategy = tf.distribute.get_strategy()
    probe = probes.batch_probe(
        run_dir, meta_of(run_dir), knobs, strategy, loss_scaling=False, jit=False
    )
    assert probe(16).ok
    assert seen == [32] * (1 + probes.PROBE_STEPS)


def test_evaluation_batches_keep_the_splits_order_in_bucket_lengths(run):
    """Scores are matched to texts by position: the test split comes batch after batch in shard
    order (raw_examples' order), each batch padded to a bucket length, not reordered by length."""
    run_dir, _, _ = run
    count = meta_of(run_dir)["splits"]["train"]["count"]
    labels, widths = [], set()
    for ids, batch_labels in make_dataset(run_dir, "train", 4, training=False):
        labels.extend(batch_labels.numpy().tolist())
        widths.add(int(ids.shape[1]))
    assert labels == raw_examples(run_dir, "train", count)[1].tolist()
    assert widths <= {8, 16, 32} and len(widths) >= 2


@pytest.mark.parametrize("pipelines", [2, 8])  # 2: shards per pipeline; 8: every 8th record
def test_input_pipelines_read_disjoint_parts_that_cover_the_split(run, pipelines):
    """Under a strategy each input pipeline gets its own examples, and together all of them."""
    run_dir, _, _ = run
    parts = []
    for index in range(pipelines):
        context = tf.distribute.InputContext(pipelines, index, 1)
        dataset = make_dataset(run_dir, "train", 16, input_context=context, training=False)
        parts.append({int(ids[0]) for batch, _ in dataset for ids in batch.numpy()})
    everything = set().union(*parts)
    assert sum(len(part) for part in parts) == len(everything)
    assert len(everything) == meta_of(run_dir)["splits"]["train"]["count"]


def test_raw_and_model_examples_are_the_same_texts_in_shard_order(run):
    """raw_examples are the shards' first texts; model_examples are their ids, one length."""
    run_dir, _, _ = run
    meta = meta_of(run_dir)
    files = [str(run_dir / "data" / name) for name in meta["splits"]["test"]["shards"]]
    plain = [tf.io.parse_single_example(r, FEATURES) for r in tf.data.TFRecordDataset(files)]
    texts, labels = raw_examples(run_dir, "test", 30)
    assert list(texts) == [e["text"].numpy().decode() for e in plain[:30]]
    assert list(labels) == [int(e["label"]) for e in plain[:30]]
    layer = load_vocabulary(run_dir / "data" / "vocabulary.txt")
    widths = set()
    for count in (1, 2, 3, 5, 30):  # a few texts fit a shorter bucket than many do
        ids, same_labels = model_examples(run_dir, "test", count)
        assert ids.dtype == np.int64 and list(same_labels) == list(labels[:count])
        rows = layer(tf.constant(list(texts[:count]))).to_list()
        expected = [list(row[:32]) for row in rows]
        assert [[i for i in row if i] for row in ids.tolist()] == expected
        longest = max(len(row) for row in expected)
        assert ids.shape[1] == min(n for n in (8, 16, 32) if n >= longest)
        widths.add(ids.shape[1])
    assert len(widths) > 1


def test_augment_is_refused_for_text_in_one_sentence(run):
    with pytest.raises(DataError) as caught:
        make_dataset(run[0], "train", 16, augment=True)
    assert_one_sentence(str(caught.value))
    assert "augment" in str(caught.value) and "text has none" in str(caught.value)


BAD = [
    {"dataset": "parquet"},
    {"dataset": "banking77", "data_dir": "somewhere"},
    {"data_dir": "/no/such/file.csv"},
    {"dataset": "folder"},
    {"dataset": "tfrecord", "data_dir": "/no/such/run/data"},
    {"text_column": ""},
    {"label_column": "text"},
    {"max_tokens": 0},
    {"max_tokens": 64.0},
    {"vocab_size": 1020},
    {"vocab_size": 8},
    {"val_fraction": 0.0},
    {"val_fraction": True},
    {"test_fraction": 0.9},
    {"shards": 0},
    {"batch_size": 0},
    {"seed": -1},
    {"benchmark_seconds": 0.5},
    {"benchmark_seconds": "60"},
    {"skip_unreadable": "yes"},
    {"skip_unreadable": True},  # the params' CSV: one file, read whole or refused
]


@pytest.mark.parametrize("bad", BAD, ids=[",".join(f"{k}={v}" for k, v in b.items()) for b in BAD])
def test_every_bad_parameter_is_refused_before_any_work(run, tmp_path, monkeypatch, bad):
    """One sentence naming the value; nothing loaded, nothing written."""
    _, _, csv = run

    def no_work(*args, **kwargs):
        raise AssertionError("the step started work on a bad parameter")

    monkeypatch.setattr(records, "prepare", no_work)
    with pytest.raises(DataError) as caught:
        entry.run(tmp_path / "run", params(csv, **bad), verbose=False)
    message = str(caught.value)
    assert_one_sentence(message)
    assert next(iter(bad)) in message or "text_column" in message
    assert not (tmp_path / "run").exists()


def test_a_text_data_folder_is_a_tfrecord_source_with_its_splits(run, tmp_path):
    """dataset=tfrecord copies another run's texts split as they were, vocabulary refitted."""
    run_dir, _, _ = run
    meta = records.prepare(tmp_path / "copy", "tfrecord", data_dir=run_dir / "data",
                           max_tokens=32, vocab_size=1024)  # fmt: skip
    original = meta_of(run_dir)
    for name, split in original["splits"].items():
        assert meta["splits"][name]["per_class"] == split["per_class"]
        assert list(raw_examples(tmp_path / "copy", name, 999)[0]) == list(
            raw_examples(run_dir, name, 999)[0]
        )
    with pytest.raises(DataError, match="own data folder"):
        records.prepare(run_dir, "tfrecord", data_dir=run_dir / "data")


def test_the_data_step_says_what_it_prepares_before_it(tmp_path: Path, monkeypatch, capsys) -> None:
    """01's longest silent stretch (TensorFlow, reading, vocabulary, shards) is announced first."""
    seen: list[str] = []

    def prepare(*_args, **_kwargs):
        seen.append(capsys.readouterr().out)
        raise RuntimeError("reached")

    monkeypatch.setattr(records, "prepare", prepare)
    with pytest.raises(RuntimeError, match="reached"):
        entry.run(str(tmp_path / "run"), data_step.Params())
    assert "» Preparing banking77: loading TensorFlow" in seen[0]
