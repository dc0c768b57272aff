"""The text data folder written once: TFRecord shards of raw text, the vocabulary, meta.json.

The shards hold the raw UTF-8 text and the label id, not token ids: the vocabulary can then be
refitted (another vocab_size) without touching them, and any reader parses them with plain tf.io
(pipeline.FEATURES). The vocabulary is fitted on the training split alone and lives in data/ with
the shards; meta.json carries its sha256, so the data's one fingerprint in the lineage covers it.

The folder is written whole or not at all: everything goes into a hidden sibling folder first,
which replaces data/ by a rename only when meta.json is in it; a failure removes the sibling and
leaves whatever data/ was there before. The same request as the one in data/meta.json (same
parameters, same source bytes) is reused as it is, so re-running the notebook costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ... import lineage
from ...artifacts import DATA_DIR, META_FILE, resolve_run_dir
from ...writes import write_json, writing
from .audit import repeated_in_train
from .pipeline import bucket_boundaries, read_records, write_records
from .sources import Examples, TextSource, TextSourceError, load_text_source
from .vocab import VOCABULARY_FILE, build_vocabulary, count_long, save_vocabulary

TASK = "text_classification"
FORMAT = 2  # bump when the records or meta.json change, so an older folder is not reused
SPLIT_ORDER = ("train", "validation", "test")
META_NAME = Path(META_FILE).name
AGAIN = "run 01_data again (data/ is only replaced once the new one is complete)"


def prepare(
    run_dir: str | os.PathLike[str],
    dataset: str = "banking77",
    *,
    data_dir: str | os.PathLike[str] | None = None,
    text_column: str = "text",
    label_column: str = "label",
    max_tokens: int = 64,
    vocab_size: int = 8192,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    shards: int = 4,
    seed: int = 42,
    skip_unreadable: bool = False,
) -> dict[str, Any]:
    """Load and split the source, then write run_dir/data/ (or reuse it); return its meta.

    The meta comes back with "reused": True when data/ already held this request. Either way the
    data is recorded in lineage.json afterwards, so the fingerprint there is the current data's.
    """
    folder = resolve_run_dir(run_dir, create=True)
    out = folder / DATA_DIR
    request: dict[str, Any] = {
        "format": FORMAT,
        "task": TASK,
        "dataset": dataset,
        "data_dir": None if data_dir is None else str(Path(data_dir).resolve()),
        "max_tokens": int(max_tokens),
        "vocab_size": int(vocab_size),
        "shards": int(shards),
    }
    if dataset == "tfrecord":
        source = load_text_records(Path(data_dir or ""), out, max_tokens)
    else:
        source = load_text_source(
            dataset,
            data_dir,
            text_column=text_column,
            label_column=label_column,
            val_fraction=val_fraction,
            test_fraction=test_fraction,
            seed=seed,
            max_tokens=max_tokens,
            skip_unreadable=skip_unreadable,
        )
        request.update(val_fraction=float(val_fraction), seed=int(seed))
        if dataset == "csv":
            request.update(text_column=text_column, label_column=label_column)
        if dataset == "folder":
            request["skip_unreadable"] = bool(skip_unreadable)
        if dataset != "banking77":  # BANKING77 keeps its own test split
            request["test_fraction"] = float(test_fraction)
    request["fingerprint"] = source.fingerprint
    meta = reusable(out, request) or write_data(folder, source, request)
    lineage.record(folder, "data", "data", {})
    return meta


def write_data(folder: Path, source: TextSource, request: dict[str, Any]) -> dict[str, Any]:
    """Shards, vocabulary and meta.json into a hidden sibling, then renamed to data/ whole."""
    started = time.perf_counter()
    out = folder / DATA_DIR
    staging = Path(tempfile.mkdtemp(prefix=f".{DATA_DIR}.tmp-", dir=folder))
    os.chmod(staging, 0o755)  # mkdtemp's 0700 would hide data/ from other readers (a container)
    try:
        with writing(out, AGAIN):
            splits = {
                name: write_split(staging, name, source.splits[name], source.classes, request)
                for name in SPLIT_ORDER
                if name in source.splits
            }
            layer = build_vocabulary(source.splits["train"].texts, request["vocab_size"])
            digest = save_vocabulary(layer, staging / VOCABULARY_FILE)
            total = sum(split["count"] for split in splits.values())
            seconds = time.perf_counter() - started
            meta = {
                "task": TASK,
                "dataset": source.dataset,
                "classes": list(source.classes),
                "num_classes": len(source.classes),
                "splits": splits,
                "max_tokens": request["max_tokens"],
                "vocab_size": int(layer.vocabulary_size()),
                "vocabulary": VOCABULARY_FILE,
                "vocabulary_sha256": digest,
                "bucket_boundaries": bucket_boundaries(request["max_tokens"]),
                "truncated": {name: int(source.truncated.get(name, 0)) for name in splits},
                "request": request,
                "notes": list(source.notes),
                "repeated_in_train": dict(source.repeated),
                "write": {
                    "seconds": round(seconds, 3),
                    "examples_per_sec": total / max(seconds, 1e-9),
                    "shard_bytes": sum(p.stat().st_size for p in staging.glob("*.tfrecord")),
                },
            }
            write_json(staging / META_NAME, meta, then=AGAIN)
            replace_folder(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {**meta, "reused": False}


def write_split(
    staging: Path, name: str, examples: Examples, classes: list[str], request: dict[str, Any]
) -> dict[str, Any]:
    """One split as min(shards, count) TFRecord files of consecutive examples, and its counts."""
    count = len(examples.texts)
    parts = np.array_split(np.arange(count), max(1, min(request["shards"], count)))
    names = []
    for index, part in enumerate(parts):
        names.append(shard_name(name, index, len(parts)))
        write_records(staging / names[-1], [examples.texts[i] for i in part], examples.labels[part])
    labels = np.asarray(examples.labels)
    per_class = {cls: int(np.sum(labels == i)) for i, cls in enumerate(classes)}
    return {"count": count, "shards": names, "per_class": per_class}


def shard_name(split: str, index: int, count: int) -> str:
    """train-00000-of-00004.tfrecord, as the image shards are named: which part of how many."""
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


def replace_folder(staging: Path, out: Path) -> None:
    """Rename the complete staging folder to data/; an older data/ is set aside, then removed."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{DATA_DIR}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)  # the earlier complete data stays
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def reusable(out: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The meta of an earlier, complete write of the same request, or None."""
    try:
        meta = json.loads((out / META_NAME).read_text(encoding="utf-8"))
        if meta.get("request") != json.loads(json.dumps(request)):
            return None
        names = [n for split in meta["splits"].values() for n in split["shards"]]
        names.append(meta["vocabulary"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all((out / name).is_file() for name in names):
        return None
    return {**meta, "reused": True}


def load_text_records(folder: Path, out: Path, max_tokens: int) -> TextSource:
    """Another run's text data/ folder as a source: its splits as they were written."""
    if folder.resolve() == out.resolve():
        raise TextSourceError(
            f"data_dir {folder} is this run's own data folder: point dataset='tfrecord' at "
            "another run's data/ folder."
        )
    path = folder / META_NAME
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        classes, splits = list(meta["classes"]), meta["splits"]
        task = meta.get("task")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TextSourceError(
            f"{path} cannot be read as a data folder's meta.json ({type(error).__name__}): point "
            "data_dir at the data/ folder of a text run."
        ) from None
    if task != TASK:
        raise TextSourceError(
            f"{path} describes {task or 'image'} data, not text: point data_dir at the data/ "
            "folder of a text_classification run."
        )
    digest = hashlib.sha256(path.read_bytes())
    loaded = {}
    for name in SPLIT_ORDER:
        if name not in splits:
            continue
        files = [folder / shard for shard in splits[name]["shards"]]
        for file in files:
            if not file.is_file():
                raise TextSourceError(f"{file} is listed in {path} but missing: copy it back.")
            digest.update(file.read_bytes())
        pairs = list(read_records(files).batch(1024).as_numpy_iterator())
        texts = [t.decode("utf-8") for batch, _ in pairs for t in batch]
        labels = np.concatenate([y for _, y in pairs]) if pairs else np.zeros(0, np.int64)
        loaded[name] = Examples(texts, labels.astype(np.int64))
    truncated = {name: count_long(split.texts, max_tokens) for name, split in loaded.items()}
    notes = [f"Copied from {folder}: its splits as they were written."]
    if sum(truncated.values()):
        notes.append(
            f"{sum(truncated.values())} texts are longer than max_tokens={max_tokens} tokens "
            "and will be truncated to it."
        )
    repeated, said = repeated_in_train(loaded)
    return TextSource(
        "tfrecord", classes, loaded, digest.hexdigest(), truncated, notes + said, repeated
    )
