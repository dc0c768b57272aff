"""The pipelines the image benchmark compares: naive, then one optimization added at a time.

The naive pipeline does the same per-record work as the configured one, one record at a time, with
tf.data's own rewrites (parallel map, injected prefetch) switched off so it is what it says. The
configured one is reached by adding one optimization at a time (`STEPS`), each a row of the table.
How each is timed is shared by every task (data/timing.py); its names are importable from here too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import tensorflow as tf

from ...data.timing import NAIVE, WARMUP_BATCHES, Variant, measure, warm_page_cache
from .decode import batch_decoder, decode_record, record_decoder
from .stages import AUTOTUNE, PARSE_BATCH, READ_BUFFER, Stages

__all__ = ["NAIVE", "STEPS", "WARMUP_BATCHES", "Variant", "measure", "steps_table"]
__all__ += ["warm_page_cache"]

UNUSED = "(batch before parse instead)"
LIMIT = "parse + decode only"
ALTERNATIVE = "the small-image regime, not used here: one call parses and decodes 256 records"
LIMIT_SAMPLE = 4096  # encoded images the decode-only pipeline holds in memory
# The optimizations added one at a time in the steps table: Stages field, row name, what it adds.
STEPS = (
    ("parallel", "+ parallel map", "parallel interleave over shards, parallel per-record map"),
    ("batch_parse", "+ batch before parse", "batches of serialized records, one parse_example"),
    ("cache", "+ cache", "decoded images kept in memory after the first epoch"),
    ("shuffle", "+ shuffle", "seeded shuffle after the cache, a new order every epoch"),
    ("prefetch", "+ prefetch", "the next batches prepared while this one is consumed"),
)


def pipeline_variants(cache: bool, batched: bool = True) -> list[Variant]:
    """naive, then one optimization added at a time; the last is what make_dataset builds.

    Photos (batched False, decode.read_regime) do not add "batch before parse": their pipeline
    decodes one record per parallel call. The batched regime is still measured for them, as a row
    of its own that the later rows do not build on, so the table shows both regimes' numbers.
    """
    variants = [
        Variant("naive", "one record at a time: no parallel calls, cache or prefetch", None)
    ]
    stages = Stages(parallel=False, batch_parse=False, cache=False, shuffle=False, prefetch=False)
    for field, name, adds in STEPS:
        if field == "cache" and not cache:
            continue
        if field == "batch_parse" and not batched:
            alternative = replace(stages, batch_parse=True)
            variants.append(Variant(UNUSED, ALTERNATIVE, alternative))
            continue
        stages = replace(stages, **{field: True})
        variants.append(Variant(name, adds, stages))
    return variants


def naive_pipeline(
    files: list[str], shape: list[int], batch_size: int, encoding: str = "png"
) -> tf.data.Dataset:
    """No parallel calls, no cache, no prefetch: one record at a time, batched at the end.

    tf.data would by default parallelize this stateless map and add a final prefetch by itself;
    both rewrites are switched off, so the naive pipeline is what it says.
    """
    dataset = (
        tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER)
        .map(lambda serialized: decode_record(serialized, shape, encoding))
        .batch(batch_size)
    )
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    return dataset.with_options(options)


def decode_only_variant(
    files: list[str], shape: list[int], encoding: str, batched: bool, batch_size: int
) -> Variant:
    """The configured regime's parse and decode with all cores, fed from serialized records
    already in memory (no file reading, shuffling or caching): a reference, not a bound. tf.data
    schedules this pipeline differently from one that reads shards, so a pipeline can beat it; a
    cold epoch near or above it means reading the shards costs little next to decoding.

    At most LIMIT_SAMPLE records are held. Timed in the same round-robin as the pipelines, so a
    slow moment of the machine does not decide the ratio.
    """
    records = tf.data.TFRecordDataset(files, buffer_size=READ_BUFFER)
    held = tf.constant(
        np.concatenate(list(records.take(LIMIT_SAMPLE).batch(1024).as_numpy_iterator()))
    )

    def factory() -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_tensor_slices(held)
        if batched:  # one call parses and decodes PARSE_BATCH records, as the pipeline does
            decoder = batch_decoder(shape, encoding)
            dataset = dataset.batch(PARSE_BATCH).map(decoder, num_parallel_calls=AUTOTUNE)
            dataset = dataset.unbatch()
        else:
            dataset = dataset.map(record_decoder(shape, encoding), num_parallel_calls=AUTOTUNE)
        return dataset.batch(batch_size).prefetch(AUTOTUNE)

    regime = "batched" if batched else "per-record"
    adds = f"parse + decode only, all cores: {encoding} records from memory, {regime} regime"
    return Variant(LIMIT, adds, None, factory)


def steps_table(result: dict[str, Any]) -> str:
    """The `steps` rows of a benchmark result as a markdown table, naive first."""
    lines = [
        "| pipeline | what it adds | first epoch (ex/s) | steady state (ex/s) | × naive |",
        "|---|---|---:|---:|---:|",
    ]
    for row in result.get("steps", []):
        steady = (
            f"{row['examples_per_sec']:,.0f}" if row.get("steady_state", True) else "not reached"
        )
        ratio = (
            "too short"
            if row.get("too_short") or row.get("speedup_vs_naive") is None
            else f"{row['speedup_vs_naive']:.2f}"
        )
        lines.append(
            f"| {row['name']} | {row['adds']} | {row['first_epoch_examples_per_sec']:,.0f} | "
            f"{steady} | {ratio} |"
        )
    return "\n".join(lines)
