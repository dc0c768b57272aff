"""Step 1's table half (tasks.base.Data): the Params of the tabular notebook 01, their checks
(before anything heavy is imported, read or written: pandas and Keras load in prepare), data/
written (one Parquet file per split, the schema inferred on train, the fitted preprocessing,
meta.json), reading it back timed, and the figures; prepare/entry.py, every task's step 1, calls
them in order.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...data.base import DataError
from ...steps import param
from ..base import Data
from .columns import parse_crosses, sanitize

DATASETS = ("census", "csv", "parquet")
MISSING_LABEL = ("refuse", "drop")
PARQUET_MAGIC = b"PAR1"  # a Parquet file's first (and last) four bytes
NAME = re.compile(r"^[^,*]+$")
MAX_DIM = 1 << 20
COLUMNS = ("numeric_columns", "categorical_columns")  # lists of names, read by names()


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


def check(params: Params) -> None:
    """Refuse a table value in one sentence (DataError) before anything is read or written."""
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
    _whole("train_rows", params.train_rows, 0, 10**12)


def prepare_split(folder: Path, params: Params) -> dict[str, Any]:
    """data/: the table read, split per class, its schema fitted on train, Parquet written."""
    from .tables import prepare  # pandas loads here, after the checks

    columns = {k: names(k, getattr(params, k)) for k in COLUMNS}
    return prepare(folder, **{**asdict(params), **columns})


def measure(folder: Path, params: Params, meta: dict[str, Any]) -> dict[str, Any]:
    """rows/s of reading train.parquet back, against the same rows as CSV, and a verdict."""
    from .reading import time_reading

    return time_reading(folder, meta)


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


PREPARING = "loading pandas, reading the table, fitting the schema, writing Parquet"
DATA = Data(Params, check, (PREPARING, "5-30 s; minutes for a large table"), prepare_split,
            describe_meta, measure, data_metrics, DRAWERS)  # fmt: skip
