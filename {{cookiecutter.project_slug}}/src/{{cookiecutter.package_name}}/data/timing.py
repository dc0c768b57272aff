"""How each pipeline a data benchmark compares is timed fairly on a shared machine (the pipelines
themselves are the task's, in tasks/<folder>/).

Every pipeline is warmed up first, then timed round-robin for its share of the benchmark's time,
so a slow moment of the machine is spread over all of them rather than deciding one, and large
data makes the benchmark no longer, only its epochs fewer (or cut short, which a row then says).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import tensorflow as tf

from ..progress import track
from .pipeline import READ_BUFFER
from .report import MIN_BATCHES

NAIVE = "TFRecordDataset → map(per record) → batch"
WARMUP_BATCHES = 20


# One timed pipeline: examples, seconds and batches of each pass, and whether the last was cut.
Passes = tuple[list[int], list[float], list[int], bool]


@dataclass(frozen=True)
class Variant:
    """One pipeline of the comparison; stages (the task's settings of it) None is the naive one."""

    name: str
    adds: str
    stages: Any
    factory: Callable[[], tf.data.Dataset] | None = None  # a pipeline of its own (decode only)


def measure(
    variants: list[Variant],
    make: Callable[[Any], tf.data.Dataset],
    seconds: float,
    rounds: int,
    label: Callable[[Any], str] = str,
    clock: Callable[[], float] = time.perf_counter,
) -> list[dict[str, Any]]:
    """Time each pipeline for its share of `seconds`, `rounds` times, round-robin.

    Each pipeline gets a warm-up (at most WARMUP_BATCHES batches or half a share, on a throwaway
    copy without cache: a cache read only in part is discarded with a warning) and one share per
    round, in which it runs epoch after epoch over the training split until the share is used:
    however large the data, the benchmark takes about `seconds`. Round-robin spreads a slow
    moment of the machine over all pipelines, and the median over rounds keeps one such moment
    from deciding a row. A row timed over fewer than MIN_BATCHES batches a round is `too_short`.
    """
    share = seconds / (len(variants) * (rounds + 0.5))

    def fresh(variant: Variant, stages: Any) -> tf.data.Dataset:
        return variant.factory() if variant.factory else make(stages)

    for variant in variants:
        warm = None if variant.stages is None else replace(variant.stages, cache=False)
        _time_epochs(fresh(variant, warm), share / 2, clock, WARMUP_BATCHES)
    timed: list[list[Passes]] = [[] for _ in variants]
    pairs = [(index, variant) for _ in range(rounds) for index, variant in enumerate(variants)]
    for index, variant in track(pairs, len(pairs), "Pipeline benchmark", "timed pipeline"):
        timed[index].append(_time_epochs(fresh(variant, variant.stages), share, clock))
    return [_row(variant, passes, label) for variant, passes in zip(variants, timed, strict=True)]


def _row(
    variant: Variant,
    passes: list[Passes],
    label: Callable[[Any], str],
) -> dict[str, Any]:
    """One pipeline's rates: the first epoch, and the later ones (steady) where a round got there.

    Where no round finished its first epoch, the steady state was not measured and its rate is
    the first epoch's (`steady_state` False), so the basis of every ratio can say so. A later
    pass cut short after fewer than MIN_BATCHES batches is left out of it: its time is mostly
    the start of a new pass.
    """
    steady = [pair for pair in map(_later, passes) if pair[0]]
    firsts = [counts[0] / max(spent[0], 1e-9) for counts, spent, *_ in passes]
    rounds = [sum(counts) / max(sum(spent), 1e-9) for counts, spent in steady] if steady else firsts
    first = statistics.median(firsts)
    return {
        "name": variant.name,
        "adds": variant.adds,
        "pipeline": variant.adds
        if variant.factory
        else (NAIVE if variant.stages is None else label(variant.stages)),
        "first_epoch_examples_per_sec": first,
        "examples_per_sec": statistics.median(rounds),
        "round_rates": [round(rate, 2) for rate in rounds],  # report.within_noise reads them
        "steady_state": bool(steady),
        "steady_rounds": len(steady),
        "timed_examples": sum(sum(counts) for counts, *_ in passes),
        "timed_seconds": round(sum(sum(spent) for _, spent, *_ in passes), 4),
        "too_short": min(sum(batches) for _, _, batches, _ in passes) < MIN_BATCHES,
        "epoch_seconds": [[round(value, 4) for value in spent] for _, spent, *_ in passes],
    }


def _later(passes: Passes) -> tuple[list[int], list[float]]:
    """Examples and seconds of the passes after the first, less a last one cut short early."""
    counts, spent, batches, cut = passes
    end = len(counts) - 1 if cut and batches[-1] < MIN_BATCHES else len(counts)
    return counts[1:end], spent[1:end]


def _time_epochs(
    dataset: tf.data.Dataset,
    share: float,
    clock: Callable[[], float] = time.perf_counter,
    max_batches: int | None = None,
) -> Passes:
    """Examples, seconds and batches of each pass, passes back to back until `share` seconds are
    used (or `max_batches`), and whether the last pass was cut short. The clock is read after
    each batch."""
    counts: list[int] = []
    spent: list[float] = []
    batches: list[int] = []
    start = clock()
    while True:
        count, number, began, over = 0, 0, clock(), False
        for _, labels in dataset:
            count, number = count + int(labels.shape[0]), number + 1
            now = clock()
            over = now - start >= share or (
                max_batches is not None and sum(batches) + number >= max_batches
            )
            if over:
                break
        else:
            now = clock()
        counts.append(count)
        spent.append(now - began)
        batches.append(number)
        if over or number == 0 or now - start >= share:
            return counts, spent, batches, over


def warm_page_cache(files: list[str]) -> None:
    """Read the shards once, so no pipeline pays for the first read from disk."""
    for _ in tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER).batch(1024):
        pass
