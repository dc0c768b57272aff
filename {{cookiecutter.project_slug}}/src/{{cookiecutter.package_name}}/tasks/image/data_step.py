"""Step 1 as one entry: `run(run_dir, Params)` prepares the data, measures the pipeline, and writes
metrics/data.json.

`check(inputs=False)` is what the runner asks before any notebook starts: every value of notebook
01's parameters cell, refused in one sentence, with nothing read (a data_dir's existence aside)
and nothing written. The step has no input in the run folder, so `inputs` changes nothing here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import figures, lineage, progress
from ...artifacts import run_folder
from ...data.split import check_test_fraction
from ...steps import param
from ...writes import check_writable, write_metrics
from . import benchmark, sources
from .benchmark import benchmark_pipeline
from .cache import check_cache
from .pipeline import examples_per_class, first_images, make_dataset
from .plots import SAMPLES_PER_CLASS, plot_samples
from .records import prepare
from .sources import SOURCES

# What data.<name> gives in an image project (data/__init__.py looks step 1's names up here).
__all__ = ["SOURCES", "Params", "benchmark_pipeline", "check", "first_images", "make_dataset"]
__all__ += ["prepare", "run"]


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


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse a bad value in one sentence (DataError) before anything is read or written."""
    sources.check_parameters(params.dataset, **_source_options(params))
    check_test_fraction(params.test_fraction, params.val_fraction)
    benchmark.check_parameters(
        params.batch_size, params.benchmark_seconds, names={"seconds": "benchmark_seconds"}
    )
    check_cache(params.cache)
    if not isinstance(params.augment, bool):
        raise sources.DataError(f"augment={params.augment!r} is not allowed: use True or False.")


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Prepare data/ (or reuse it), benchmark the pipeline over it → metrics/data.json."""
    check(run_dir, params)
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check_writable(folder)
    if verbose:
        progress.starting(
            f"Preparing {params.dataset}: reading the images, splitting them, writing TFRecord "
            "shards",
            "2-20 s; minutes for a large folder",
        )
    meta = prepare(
        folder, params.dataset, **_source_options(params), test_fraction=params.test_fraction
    )
    if verbose:
        print(describe_meta(meta))
        print(
            f"Benchmarking the input pipeline against a naive one: about "
            f"{params.benchmark_seconds:g} s, whatever the data (benchmark_seconds; in a run, "
            "-p 01_data.benchmark_seconds=N) ...",
            flush=True,
        )
    result = benchmark.benchmark_pipeline(
        folder,
        params.batch_size,
        seconds=params.benchmark_seconds,
        cache=params.cache,
        steps=True,
        seed=params.seed,
    )
    metrics = benchmark.data_metrics(meta, result)
    metrics["test_count"] = int(meta["splits"].get("test", {}).get("count", 0))
    metrics["lineage"] = lineage.summary(folder, reads=[], writes=["data"])
    metrics["figures"] = figures.save(folder, "data", metrics, drawers=DRAWERS)
    write_metrics(folder, "data", metrics)
    if verbose:
        print(result["cache_reason"])
        print(result["verdict"])
    return metrics


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
    return {
        "data_dir": params.data_dir or None,
        "image_size": params.image_size or None,
        "val_fraction": params.val_fraction,
        "shards": params.shards,
        "seed": params.seed,
        "encoding": params.encoding,
        "jpeg_quality": params.jpeg_quality,
        "workers": params.workers,
    }
