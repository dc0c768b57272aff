"""Step 1's text half (tasks.base.Data): the Params of the text notebook 01, their checks (before
anything heavy is imported, read or written: this module imports no TensorFlow until prepare needs
it), data/ written (TFRecords of raw text, the vocabulary fitted on train, meta.json), the pipeline
benchmark and the figures; prepare/entry.py, every task's step 1, calls them in order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...artifacts import META_FILE
from ...data.base import DataError
from ...steps import param
from ..base import Data

DATASETS = ("banking77", "csv", "folder", "tfrecord")
MAX_TOKENS = 4096  # longer is a typo, not a plan: no model here has a position table that long
MAX_SHARDS = 1024
MEASURED = ("batch_size", "benchmark_seconds")  # the benchmark's values, not prepare's


@dataclass(frozen=True)
class Params:
    """The parameters of the text notebook 01 (all but run_dir), with its defaults."""

    dataset: str = param("banking77", "banking77 (embedded), csv, folder or tfrecord")
    data_dir: str = param("", "the CSV file, the folder (one sub-folder per class) or a data/")
    text_column: str = param("text", "the CSV column that holds the text")
    label_column: str = param("label", "the CSV column that holds the class name")
    max_tokens: int = param(64, "tokens kept of each text; longer ones are cut, and counted")
    vocab_size: int = param(8192, "most vocabulary ids (a multiple of 8), fitted on train only")
    val_fraction: float = param(0.1, "share of each class of train held out for validation")
    test_fraction: float = param(
        0.1, "share of each class held out as test (a CSV or folder; BANKING77 has its own)"
    )
    shards: int = param(4, "TFRecord files per split")
    batch_size: int = param(64, "examples per batch")
    seed: int = param(42, "split and shuffle seed")
    benchmark_seconds: float = param(
        60.0, "seconds the pipeline benchmark takes, shared by both pipelines it times (1-3600)"
    )
    skip_unreadable: bool = param(
        False, "a folder: leave out .txt files that cannot be read as text, counted in a note"
    )


def check(params: Params) -> None:
    """Refuse a text value in one sentence (DataError) before anything is read or written."""
    if params.dataset not in DATASETS:
        raise DataError(f"dataset={params.dataset!r} is not a text source: use one of {DATASETS}.")
    _check_data_dir(params.dataset, params.data_dir)
    for name in ("text_column", "label_column"):
        value = getattr(params, name)
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"{name}={value!r} is not allowed: name a column of the CSV.")
    if not isinstance(params.skip_unreadable, bool):
        raise DataError(
            f"skip_unreadable={params.skip_unreadable!r} is not allowed: use true or false."
        )
    if params.skip_unreadable and params.dataset != "folder":
        raise DataError(
            f"skip_unreadable=True is for dataset='folder', not {params.dataset!r}: a CSV is one "
            "file, refused or read whole, so leave skip_unreadable false."
        )
    if params.dataset == "csv" and params.text_column == params.label_column:
        raise DataError(
            f"text_column and label_column are both {params.text_column!r}: name two columns."
        )
    _whole("max_tokens", params.max_tokens, 1, MAX_TOKENS)
    _whole("shards", params.shards, 1, MAX_SHARDS)
    vocab = params.vocab_size
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 16 or vocab % 8:
        raise DataError(
            f"vocab_size={vocab!r} is not allowed: use a multiple of 8 from 16 up, e.g. 8192."
        )


def prepare_split(folder: Path, params: Params) -> dict[str, Any]:
    """data/: the texts read, split per class, the vocabulary fitted on train, shards written."""
    from .records import prepare  # TensorFlow loads here, after the checks

    options = {k: v for k, v in asdict(params).items() if k not in MEASURED}
    return prepare(folder, **{**options, "data_dir": params.data_dir or None})


def measure(folder: Path, params: Params, meta: dict[str, Any]) -> dict[str, Any]:
    """The configured pipeline (length buckets) against a naive one, in benchmark_seconds."""
    from .benchmark import benchmark_text_pipeline

    return benchmark_text_pipeline(
        folder, params.batch_size, seconds=params.benchmark_seconds, seed=params.seed
    )


def data_metrics(meta: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """metrics/data.json: the image step's keys where they mean the same, the text's own, and
    the benchmark's numbers, one flat record."""
    splits, write = meta["splits"], meta.get("write") or {}
    return {
        "task": meta["task"],
        "dataset": meta["dataset"],
        "classes": meta["classes"],
        "num_classes": meta["num_classes"],
        "train_count": splits["train"]["count"],
        "validation_count": splits["validation"]["count"],
        "test_count": splits.get("test", {}).get("count", 0),
        "per_class": {split: splits[split]["per_class"] for split in splits},
        "shards": {split: len(splits[split]["shards"]) for split in splits},
        "max_tokens": meta["max_tokens"],
        "vocab_size": meta["vocab_size"],
        "bucket_boundaries": meta["bucket_boundaries"],
        "truncated": meta["truncated"],
        "notes": meta.get("notes", []),
        "repeated_in_train": meta.get("repeated_in_train", {}),
        "write_examples_per_sec": write.get("examples_per_sec"),
        "write_seconds": write.get("seconds"),
        "shard_bytes": write.get("shard_bytes"),
        "data_reused": bool(meta.get("reused")),
        **result,
    }


def describe_meta(meta: dict[str, Any]) -> str:
    """What prepare() wrote (or found and reused), in a few lines."""
    how = "reused, same request as before" if meta.get("reused") else "written"
    lines = [
        f"{meta['dataset']}: {meta['num_classes']} classes, vocabulary of {meta['vocab_size']:,} "
        f"ids fitted on train, texts cut to {meta['max_tokens']} tokens; {how}"
    ]
    for split, info in meta["splits"].items():
        cut = meta["truncated"].get(split, 0)
        lines.append(
            f"{split}: {info['count']:,} texts in {len(info['shards'])} shard(s), {cut} truncated"
        )
    return "\n".join([*lines, *meta.get("notes", [])])


def draw_samples(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/data_samples.png: training texts read back from the shards."""
    from .dataset import raw_examples
    from .plots import plot_samples

    texts, labels = raw_examples(folder, "train", int(metrics["train_count"]))
    return plot_samples(list(texts), labels, metrics["classes"], path)


def draw_lengths(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/data_lengths.png: tokens per training text, read back from the shards."""
    import numpy as np

    from .dataset import raw_examples
    from .plots import plot_lengths
    from .vocab import count_tokens

    texts, _ = raw_examples(folder, "train", int(metrics["train_count"]))
    lengths = np.array([count_tokens(text) for text in texts])
    shares = [metrics.get(f"padded_share_{way}") for way in ("bucketed", "unbucketed")]
    padding = (shares[0], shares[1]) if None not in shares else None
    return plot_lengths(lengths, metrics["max_tokens"], metrics["bucket_boundaries"], path, padding)


def draw_classes(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/data_classes.png: one bar per class, sorted (77 side by side in 3 splits would
    not read)."""
    from .plots import plot_class_balance

    return plot_class_balance(metrics, path)


# The figures that read the data back; data_throughput is the shared one, from the metrics.
DRAWERS = {"data_samples": draw_samples, "data_classes": draw_classes, "data_lengths": draw_lengths}


def _check_data_dir(dataset: str, data_dir: Any) -> None:
    """banking77 is embedded (no data_dir); the others need theirs, of the right kind."""
    if not isinstance(data_dir, str):
        raise DataError(f"data_dir={data_dir!r} is not allowed: give a path as text, or ''.")
    if dataset == "banking77":
        if data_dir:
            raise DataError(
                f"data_dir={data_dir!r} is not used by dataset='banking77' (it is embedded): "
                "leave data_dir empty, or use dataset='csv' or 'folder' for your own texts."
            )
        return
    path = Path(data_dir).expanduser()
    wanted = {
        "csv": ("a CSV file", path.is_file()),
        "folder": ("a folder with one sub-folder per class", path.is_dir()),
        "tfrecord": ("another text run's data/ folder", (path / Path(META_FILE).name).is_file()),
    }[dataset]
    if not data_dir or not wanted[1]:
        raise DataError(f"data_dir={data_dir!r} is not {wanted[0]}: dataset={dataset!r} needs one.")


def _whole(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DataError(
            f"{name}={value!r} is not allowed: use a whole number from {low} to {high}."
        )


PREPARING = "loading TensorFlow, reading the texts, fitting the vocabulary, writing TFRecord shards"
MEASURING = "Benchmarking the input pipeline against a naive one: about {seconds:g} s"
MEASURING += " (benchmark_seconds) ..."
DATA = Data(Params, check, (PREPARING, "5-30 s; minutes for a large corpus"), prepare_split,
            describe_meta, measure, data_metrics, DRAWERS, measuring=MEASURING)  # fmt: skip
