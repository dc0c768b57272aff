"""How fast the training split reads back: the Parquet file the data step wrote against the same
rows as CSV text, the naive way a table is kept.

A table this size fits in memory, so the input pipeline's cost is mostly reading and typing the
columns once; the comparison says what the columnar, typed file saves over parsing text on every
read. Both are timed in memory-cached form (the Parquet file in the page cache, the CSV as bytes
in memory), the median of a few rounds, in this run on this machine: a ratio, not a promise.
"""

from __future__ import annotations

import io
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pandas as pd

from ...artifacts import DATA_DIR

ROUNDS = 3
NAIVE = "CSV text in memory → pandas.read_csv (types inferred on every read)"
CONFIGURED = "train.parquet → pandas.read_parquet (pyarrow, typed columns)"


def time_reading(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """rows/s of reading train.parquet against the same rows as CSV, and a verdict sentence:
    the reading half of metrics/data.json, with the keys the data_throughput figure reads."""
    path = folder / DATA_DIR / meta["splits"]["train"]["file"]
    rows = int(meta["splits"]["train"]["count"])
    started = time.perf_counter()
    frame = pd.read_parquet(path, engine="pyarrow")
    first = time.perf_counter() - started
    text = frame.to_csv(index=False).encode("utf-8")
    parquet = _median(lambda: pd.read_parquet(path, engine="pyarrow"))
    csv = _median(lambda: pd.read_csv(io.BytesIO(text), keep_default_na=True))
    naive = _row("naive", "CSV text, parsed on each read", rows / csv, rows / csv, 1.0)
    configured = _row(
        "configured", CONFIGURED, rows / parquet, rows / max(first, 1e-9), csv / parquet
    )
    naive["label"], configured["label"] = "CSV text", "Parquet"
    speedup = csv / parquet
    # Small files read faster as text: Parquet's footer and column set-up cost more than they save.
    faster = (
        f"Parquet {speedup:.1f}× faster"
        if speedup >= 1
        else f"CSV {1 / speedup:.1f}× faster at this size"
    )
    verdict = (
        f"Reading the {rows:,} training rows takes {parquet * 1e3:.0f} ms from Parquet against "
        f"{csv * 1e3:.0f} ms as CSV text ({faster}, median of {ROUNDS}); the "
        f"data folder was written in {(meta.get('write') or {}).get('seconds', 0):.1f} s."
    )
    return {
        "examples_per_sec": configured["examples_per_sec"],
        "first_epoch_examples_per_sec": configured["first_epoch_examples_per_sec"],
        "naive_examples_per_sec": naive["examples_per_sec"],
        "naive_first_epoch_examples_per_sec": naive["first_epoch_examples_per_sec"],
        "speedup_vs_naive": speedup,
        "read_seconds": round(parquet, 4),
        "csv_read_seconds": round(csv, 4),
        "csv_bytes": len(text),
        "parquet_bytes": path.stat().st_size,
        "pipeline": CONFIGURED,
        "naive_pipeline": NAIVE,
        "train_records": rows,
        "rounds": ROUNDS,
        "batch_size": rows,  # the whole split is one read
        "cpu_count": os.cpu_count(),
        "too_short": False,
        "steps": [naive, configured],
        "figure_title": (
            f"Reading the training split: Parquet {speedup:.1f}× CSV text "
            f"({rows:,} rows, median of {ROUNDS}, {os.cpu_count()} CPU cores)"
        ),
        "verdict": verdict,
        # What the report's headline says: a file format against another, not a tf.data pipeline.
        "speed_summary": (
            f"reading train.parquet takes {parquet * 1e3:.0f} ms against {csv * 1e3:.0f} ms for "
            f"the same rows as CSV text ({faster}, {rows / parquet:,.0f} rows/s)"
        ),
    }


def _median(read: Any) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return max(statistics.median(times), 1e-9)


def _row(name: str, what: str, rate: float, first: float, speedup: float) -> dict[str, Any]:
    return {
        "name": name,
        "description": what,
        "examples_per_sec": rate,
        "first_epoch_examples_per_sec": first,
        "speedup_vs_naive": speedup,
    }
