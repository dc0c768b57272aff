"""Step 1 for tables as one entry: `run(run_dir, Params)` writes data/ (one Parquet file per
split, the schema inferred on train, the fitted preprocessing, meta.json), times reading it back,
and writes metrics/data.json.

The same contract as every task's step 1 (steps.py): `check` refuses every bad value in one sentence
before anything heavy is imported, read or written (pandas and Keras load in `run`), so the
runner's pre-flight costs nothing. The step has no input in the run folder, so `inputs` changes
nothing here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import figures, limits, lineage, progress
from ...artifacts import run_folder
from ...data.base import DataError
from ...data.split import check_test_fraction
from ...steps import param
from ...writes import check_writable, write_metrics
from .columns import parse_crosses, sanitize

DATASETS = ("census", "csv", "parquet")
MISSING_LABEL = ("refuse", "drop")
PARQUET_MAGIC = b"PAR1"  # a Parquet file's first (and last) four bytes
NAME = re.compile(r"^[^,*]+$")
MAX_DIM = 1 << 20


@dataclass(frozen=True)
class Params:
    """The parameters of the tabular notebook 01 (all but run_dir), with its defaults."""

    dataset: str = param("census", "census (embedded census income), csv or parquet")
    data_dir: str = param("", "the CSV or Parquet file (census is embedded: leave empty)")
    label_column: str = param("", "the column that holds the class (census: income, its own)")
    numeric_columns: str = param("", "columns read as numbers, comma-separated (else inferred)")
    categorical_columns: str = param("", "columns read as categories, comma-separated")
    min_count: int = param(2, "times a value must appear in train to get its own id (else OOV)")
    hash_above: int = param(1000, "distinct values above which a categorical column is hashed")
    crosses: str = param("auto", "crossed columns: auto, none, or pairs such as 'a*b,c*d'")
    crossing_dim: int = param(256, "hash bins of each crossed pair")
    val_fraction: float = param(0.1, "share of each class of train held out for validation")
    test_fraction: float = param(0.1, "share of each class held out as test (census has its own)")
    seed: int = param(42, "split seed")
    train_rows: int = param(0, "keep this many training rows, classes in proportion (0: all)")
    missing_label: str = param(
        "refuse", "rows without a label: refuse (name one) or drop (counted)"
    )


def check(run_dir: str | os.PathLike[str], params: Params, *, inputs: bool = True) -> None:
    """Refuse a bad value in one sentence (DataError) before anything is read or written."""
    if params.dataset not in DATASETS:
        raise DataError(f"dataset={params.dataset!r} is not a table source: use one of {DATASETS}.")
    _check_file(params.dataset, params.data_dir)
    if params.missing_label not in MISSING_LABEL:
        raise DataError(
            f"missing_label={params.missing_label!r} is not allowed: use one of {MISSING_LABEL}."
        )
    label = params.label_column
    if not isinstance(label, str):
        raise DataError(f"label_column={label!r} is not allowed: name a column, as text.")
    if params.dataset == "census" and label not in ("", "income"):
        raise DataError(
            f"label_column={label!r} is not census's: its label is 'income' (leave it empty)."
        )
    if params.dataset != "census" and not label.strip():
        raise DataError(
            f"label_column='' is not allowed with dataset={params.dataset!r}: name the column "
            "that holds the class."
        )
    numeric = names("numeric_columns", params.numeric_columns)
    categorical = names("categorical_columns", params.categorical_columns)
    both = sorted(set(numeric) & set(categorical))
    if both:
        raise DataError(
            f"{both[0]!r} is in both numeric_columns and categorical_columns: name it in one."
        )
    if label and sanitize(label) in {*numeric, *categorical}:
        raise DataError(f"label_column={label!r} is also declared a feature column: remove it.")
    _whole("min_count", params.min_count, 1, 1_000_000)
    _whole("hash_above", params.hash_above, 1, MAX_DIM)
    _whole("crossing_dim", params.crossing_dim, 2, MAX_DIM)
    if not isinstance(params.crosses, str):
        raise DataError(f"crosses={params.crosses!r} is not allowed: use 'auto', 'none' or 'a*b'.")
    parse_crosses(params.crosses)
    val = params.val_fraction
    if isinstance(val, bool) or not isinstance(val, int | float) or not 0 < val < 1:
        raise DataError(f"val_fraction={val!r} is not allowed: use a share between 0 and 1.")
    check_test_fraction(params.test_fraction, val)
    limits.whole("seed", params.seed, DataError)
    _whole("train_rows", params.train_rows, 0, 10**12)


def run(run_dir: str | os.PathLike[str], params: Params, *, verbose: bool = True) -> dict[str, Any]:
    """Prepare data/ (or reuse it), time reading it back → metrics/data.json."""
    check(run_dir, params)
    folder = run_folder(run_dir)  # resolved once, here: every call below gets this value
    check_writable(folder)
    if verbose:
        progress.starting(
            f"Preparing {params.dataset}: loading pandas, reading the table, fitting the schema, "
            "writing Parquet",
            "5-30 s; minutes for a large table",
        )
    from .reading import time_reading  # pandas loads here, after the checks
    from .tables import prepare

    meta = prepare(
        folder,
        params.dataset,
        data_dir=params.data_dir,
        label_column=params.label_column,
        numeric_columns=names("numeric_columns", params.numeric_columns),
        categorical_columns=names("categorical_columns", params.categorical_columns),
        min_count=params.min_count,
        hash_above=params.hash_above,
        crosses=params.crosses,
        crossing_dim=params.crossing_dim,
        val_fraction=params.val_fraction,
        test_fraction=params.test_fraction,
        seed=params.seed,
        missing_label=params.missing_label,
        train_rows=params.train_rows,
    )
    if verbose:
        print(describe_meta(meta))
    metrics = data_metrics(meta, time_reading(folder, meta))
    metrics["lineage"] = lineage.summary(folder, reads=[], writes=["data"])
    metrics["figures"] = figures.save(folder, "data", metrics, drawers=DRAWERS)
    write_metrics(folder, "data", metrics)
    if verbose:
        print(metrics["verdict"])
    return metrics


def names(flag: str, text: Any) -> list[str]:
    """A comma-separated list of column names, sanitized as the columns are; "" is none."""
    if not isinstance(text, str):
        raise DataError(f"{flag}={text!r} is not allowed: give column names, comma-separated.")
    parts = [part.strip() for part in text.split(",")] if text.strip() else []
    if any(not NAME.match(part) for part in parts):
        raise DataError(
            f"{flag}={text!r} is not allowed: give column names separated by single commas, "
            "e.g. 'age,hours_per_week'."
        )
    return [sanitize(part) for part in parts]


def data_metrics(meta: dict[str, Any], reading: dict[str, Any]) -> dict[str, Any]:
    """metrics/data.json: the text step's keys where they mean the same, the schema as a table,
    the label balance and the missing shares, and the read timing, one flat record."""
    splits, classes, schema = meta["splits"], meta["classes"], meta["schema"]
    counts = {s: dict(zip(classes, info["per_class"], strict=True)) for s, info in splits.items()}
    table = [
        {"name": e["name"], "kind": kind, **{k: v for k, v in e.items() if k != "vocabulary"}}
        for kind in ("numeric", "categorical")
        for e in schema[kind]
    ]
    order = meta.get("columns") or [row["name"] for row in table]  # the file's order
    table.sort(key=lambda row: order.index(row["name"]))
    positive = meta.get("positive_class")
    return {
        "task": meta["task"],
        "dataset": meta["dataset"],
        "classes": classes,
        "num_classes": meta["num_classes"],
        "positive_class": positive,
        "train_count": splits["train"]["count"],
        "validation_count": splits["validation"]["count"],
        "test_count": splits.get("test", {}).get("count", 0),
        "per_class": counts,
        "label_balance": {
            s: (info["per_class"][1] / max(info["count"], 1) if positive else None)
            for s, info in splits.items()
        },
        "schema": table,
        "missing_share": {row["name"]: row["missing_share"] for row in table},
        "crosses": schema["crosses"],
        "schema_fingerprint": meta["fingerprint"],
        "notes": meta.get("notes", []),
        "write_seconds": (meta.get("write") or {}).get("seconds"),
        "data_bytes": (meta.get("write") or {}).get("bytes"),
        "data_reused": bool(meta.get("reused")),
        **reading,
    }


def describe_meta(meta: dict[str, Any]) -> str:
    """What prepare() wrote (or found and reused), in a few lines."""
    how = "reused, same request as before" if meta.get("reused") else "written"
    schema = meta["schema"]
    lines = [
        f"{meta['dataset']}: {meta['num_classes']} classes of {meta['label_column']!r}, "
        f"{len(schema['numeric'])} numeric and {len(schema['categorical'])} categorical columns "
        f"(schema from train only), {len(schema['crosses'])} crosses; {how}"
    ]
    for split, info in meta["splits"].items():
        shares = ", ".join(
            f"{c}: {n:,}" for c, n in zip(meta["classes"], info["per_class"], strict=True)
        )
        lines.append(f"{split}: {info['count']:,} rows ({shares})")
    return "\n".join([*lines, *meta.get("notes", [])])


def draw_classes(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    from .data_plots import plot_label_balance

    return plot_label_balance(metrics, path)


def draw_missing(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    from .data_plots import plot_missing

    return plot_missing(metrics, path)


def draw_columns(folder: Path, metrics: dict[str, Any], path: Path) -> Path | None:
    from .data_plots import plot_columns
    from .tables import read_split

    return plot_columns(read_split(folder, "train"), metrics, path)


# The figures of the tables; data_throughput is every task's, from the metrics.
DRAWERS = {"data_classes": draw_classes, "data_missing": draw_missing, "data_columns": draw_columns}


def _check_file(dataset: str, data_dir: Any) -> None:
    """census is embedded (no data_dir); a CSV or Parquet file must exist."""
    if not isinstance(data_dir, str):
        raise DataError(f"data_dir={data_dir!r} is not allowed: give a path as text, or ''.")
    if dataset == "census":
        if data_dir:
            raise DataError(
                f"data_dir={data_dir!r} is not used by dataset='census' (it is embedded): leave "
                "data_dir empty, or use dataset='csv' or 'parquet' for your own file."
            )
        return
    if not data_dir or not Path(data_dir).expanduser().is_file():
        raise DataError(f"data_dir={data_dir!r} is not a file: dataset={dataset!r} needs one.")
    with open(Path(data_dir).expanduser(), "rb") as file:
        parquet = file.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    if parquet and dataset == "csv":
        raise DataError(
            f"data_dir={data_dir!r} is a Parquet file (it starts with {PARQUET_MAGIC.decode()}), "
            "not CSV text: pass dataset=parquet."
        )


def _whole(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DataError(
            f"{name}={value!r} is not allowed: use a whole number from {low} to {high}."
        )
