"""Step 1's image half (tasks.base.Data): the Params of notebook 01, their checks, the source read
and written as TFRecord shards, the pipeline benchmark and the sample figure; prepare/entry.py,
every task's step 1, calls them in order and does the rest. Their refusals come before anything
is read (a data_dir's existence aside) or written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...steps import param
from ..base import Data
from . import benchmark, sources
from .benchmark import benchmark_pipeline
from .cache import check_cache
from .image_source import meta_problem
from .pipeline import examples_per_class, first_images, make_dataset
from .plots import SAMPLES_PER_CLASS, plot_samples
from .records import prepare
from .sources import SOURCES

# Step 1's image names the tests and notebook 01 use beside DATA.
__all__ = ["DATA", "SOURCES", "Params", "benchmark_pipeline", "first_images", "make_dataset"]
__all__ += ["prepare"]


@dataclass(frozen=True)
class Params:
    """The parameters of notebook 01 (all but run_dir), with its defaults."""

    dataset: str = param(
        "digits", "digits, image_folder, tfrecord, mnist, fashion_mnist, cifar10 or synthetic"
    )
    data_dir: str = param("", "folder for image_folder or tfrecord; empty for none")
    image_size: int = param(0, "side in pixels to resize images to; 0 keeps the source's size")
    val_fraction: float = param(0.2, "share of each class held out for validation")
    test_fraction: float = param(0.0, "share of each class held out as a test split; 0: none")
    shards: int = param(4, "TFRecord files per split")
    encoding: str = param("auto", "images in the shards: auto (JPEG for photos), jpeg or png")
    jpeg_quality: int = param(95, "quality of images encoded as JPEG (a kept JPEG keeps its own)")
    workers: int | str = param("auto", "processes reading an image folder; auto: the cores")
    batch_size: int = param(64, "examples per batch")
    cache: bool | str = param(
        "auto", "keep decoded images in memory: auto (when they fit a quarter of it), True, False"
    )
    augment: bool = param(
        False, "random translation of training images (shown in the pipeline, not benchmarked)"
    )
    seed: int = param(42, "split, shuffle and augmentation seed")
    benchmark_seconds: float = param(
        60.0, "seconds the pipeline benchmark takes, shared by every pipeline it times (1-3600)"
    )


def check(params: Params) -> None:
    """Refuse an image value in one sentence (DataError) before anything is read or written."""
    sources.check_parameters(params.dataset, **_source_options(params))
    check_cache(params.cache)
    if not isinstance(params.augment, bool):
        raise sources.DataError(f"augment={params.augment!r} is not allowed: use True or False.")


def prepare_split(folder: Path, params: Params) -> dict[str, Any]:
    """data/: the source read, split per class and written as TFRecord shards (or reused)."""
    options = _source_options(params)
    return prepare(folder, params.dataset, **options, test_fraction=params.test_fraction)


def measure(folder: Path, params: Params, meta: dict[str, Any]) -> dict[str, Any]:
    """The configured pipeline against a naive one over the train shards, in benchmark_seconds."""
    return benchmark.benchmark_pipeline(
        folder,
        params.batch_size,
        seconds=params.benchmark_seconds,
        cache=params.cache,
        steps=True,
        seed=params.seed,
    )


def data_metrics(meta: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """metrics/data.json: the counts from meta.json, how the shards were written (rate, workers,
    bytes against the source folder's; also when they were reused), the benchmark's numbers."""
    splits, write = meta["splits"], meta.get("write") or {}
    return {
        "dataset": meta["dataset"],
        "classes": meta["classes"],
        "num_classes": meta["num_classes"],
        "image_shape": meta["image_shape"],
        "train_count": splits["train"]["count"],
        "validation_count": splits["validation"]["count"],
        "per_class": {split: splits[split]["per_class"] for split in splits},
        "shards": {split: len(splits[split]["shards"]) for split in splits},
        "encoding": meta.get("encoding", "png"),
        "write_examples_per_sec": write.get("examples_per_sec"),
        "write_workers": write.get("workers"),
        "write_seconds": write.get("seconds"),
        "shard_bytes": write.get("shard_bytes"),
        "source_bytes": write.get("source_bytes"),
        "kept_original_files": write.get("kept_original_files"),
        "data_reused": bool(meta.get("reused")),
        **result,
        "test_count": int(splits.get("test", {}).get("count", 0)),
    }


def draw_samples(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    """figures/data_samples.png: training images read back from the shards, drawn by figures."""
    images, labels = examples_per_class(folder, "train", per_class=SAMPLES_PER_CLASS)
    return plot_samples(images, labels, metrics, path)


DRAWERS = {"data_samples": draw_samples}  # the figures that read the data back


def describe_meta(meta: dict[str, Any]) -> str:
    """What prepare() wrote (or found and reused), in two or three lines."""
    how = "reused, same request as before" if meta.get("reused") else "written"
    lines = [
        f"{meta['dataset']}: {meta['num_classes']} classes, images {meta['image_shape']} "
        f"(H, W, C) as {meta.get('encoding', 'png').upper()}, {how}"
    ]
    write = meta.get("write") or {}
    if write and not meta.get("reused"):
        line = (
            f"Written at {write['examples_per_sec']:,.0f} images/s by {write['workers']} "
            f"process(es), {write['shard_bytes'] / 1e6:,.1f} MB of shards"
        )
        if write.get("source_bytes"):
            line += f" for {write['source_bytes'] / 1e6:,.1f} MB of source files"
            line += f" ({write['kept_original_files']} JPEG(s) kept byte for byte)"
        lines.append(line + ".")
    for split, info in meta["splits"].items():
        lines.append(f"{split}: {info['count']} examples in {len(info['shards'])} shard(s)")
    return "\n".join([*lines, *meta.get("notes", [])])  # what was skipped, merged or resized


def _source_options(params: Params) -> dict[str, Any]:
    """The notebook's spellings as prepare() takes them: "" is no folder, 0 the source's size."""
    skip = ("dataset", "test_fraction", "batch_size", "cache", "augment", "benchmark_seconds")
    options = {k: v for k, v in asdict(params).items() if k not in skip}
    return {**options, "data_dir": params.data_dir or None, "image_size": params.image_size or None}


PREPARING = "reading the images, splitting them, writing TFRecord shards"
MEASURING = "Benchmarking the input pipeline against a naive one: about {seconds:g} s, whatever "
MEASURING += "the data (benchmark_seconds; in a run, -p 01_data.benchmark_seconds=N) ..."
DATA = Data(Params, check, (PREPARING, "2-20 s; minutes for a large folder"), prepare_split,
            describe_meta, measure, data_metrics, DRAWERS, measuring=MEASURING,
            closing=("cache_reason", "verdict"), meta_problem=meta_problem)  # fmt: skip
