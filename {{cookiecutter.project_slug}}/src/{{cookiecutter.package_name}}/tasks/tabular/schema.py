"""The schema: which columns are numbers and which categories, and their statistics, from the
training split alone.

A column is numeric when every value it holds in train reads as a number (overridable with
`numeric_columns` / `categorical_columns`); a numeric column gets its mean, std (population),
min, max and missing share, which the model's normalization uses, a categorical one its distinct
count, its vocabulary (values seen at least `min_count` times; rarer ones, and values first seen
after training, go to the out-of-vocabulary bucket), and is hashed into `bins` instead when it has
more than `hash_above` distinct values. Crosses pair categorical columns for the wide side of a
model. The schema's `fingerprint` (sha256 of its canonical JSON) changes with any of it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .columns import SchemaError, parse_crosses

FLOAT32_MAX = 3.4028234663852886e38  # the model and the export take numbers as float32
AUTO_CROSS_COLUMNS = 4  # auto crosses pair the most varied of the non-hashed categoricals
TOP = 5  # most frequent values listed per categorical column


def infer_schema(
    train: pd.DataFrame,
    *,
    numeric: Sequence[str] = (),
    categorical: Sequence[str] = (),
    min_count: int = 2,
    hash_above: int = 1000,
    crosses: str = "auto",
    crossing_dim: int = 256,
    place: Callable[[Any], str] = str,
) -> tuple[dict[str, Any], list[str]]:
    """(schema, notes) of the training frame; `place(index)` names a row in a refusal."""
    columns = list(train.columns)
    for name in (*numeric, *categorical):
        if name not in columns:
            raise SchemaError(
                f"{name!r} is declared in numeric_columns or categorical_columns but is no "
                f"column of the data: use names among {columns}."
            )
    schema: dict[str, Any] = {"numeric": [], "categorical": []}
    notes: list[str] = []
    for name in columns:
        values = train[name]
        if name in numeric or (name not in categorical and _all_numbers(values)):
            schema["numeric"].append(_numeric(values, place))
        else:
            entry, note = _categorical(values, min_count, hash_above, place)
            schema["categorical"].append(entry)
            notes += note
    schema["crosses"] = _crosses(crosses, schema["categorical"])
    schema["crossing_dim"] = int(crossing_dim)
    return schema, notes


def fingerprint(schema: dict[str, Any]) -> str:
    """sha256 of the schema's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def kinds(schema: dict[str, Any]) -> dict[str, str]:
    """{column: "numeric" | "categorical"} in the schema's order."""
    return {e["name"]: kind for kind in ("numeric", "categorical") for e in schema[kind]}


def _all_numbers(values: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_numeric_dtype(values):
        return True
    present = values.dropna()
    return bool(len(present)) and bool(pd.to_numeric(present, errors="coerce").notna().all())


def _numeric(values: pd.Series, place: Callable[[Any], str]) -> dict[str, Any]:
    numbers = pd.to_numeric(values, errors="coerce")
    odd = values.notna() & numbers.isna()
    if odd.any():
        row = odd.index[odd.argmax()]
        raise SchemaError(
            f"{place(row)}, column {values.name!r}: {values[row]!r} is not a number, but the "
            "column is declared in numeric_columns; fix the value or declare it categorical."
        )
    check_range(values, numbers, place)  # before its mean and std turn inf and NaN
    present = numbers.dropna()
    return {
        "name": values.name,
        "mean": float(present.mean()),
        "std": float(present.std(ddof=0)),
        "min": float(present.min()),
        "max": float(present.max()),
        "missing_share": float(1 - len(present) / max(len(values), 1)),
    }


def check_range(values: pd.Series, numbers: pd.Series, place: Callable[[Any], str]) -> None:
    """inf, -inf or a number beyond float32's range is refused at its row: the model's float32
    would make it inf, its column's mean inf and std NaN, and the training loss nan."""
    beyond = numbers.abs() > FLOAT32_MAX  # inf included, NaN (missing) not
    if beyond.any():
        row = beyond.index[beyond.argmax()]
        raise SchemaError(
            f"{place(row)}, column {values.name!r}: {values[row]!r} is not allowed: a numeric "
            "column holds finite numbers within float32's range (±3.4e38); fix the value or "
            "leave the cell empty (missing)."
        )


def _categorical(
    values: pd.Series, min_count: int, hash_above: int, place: Callable[[Any], str]
) -> tuple[dict[str, Any], list[str]]:
    text = stringify(values)
    counts = text[text != ""].value_counts()
    counts = counts.sort_index(kind="stable").sort_values(ascending=False, kind="stable")
    distinct = len(counts)
    hashed = distinct > hash_above
    vocabulary = [] if hashed else [str(v) for v, n in counts.items() if n >= min_count]
    entry = {
        "name": values.name,
        "distinct": distinct,
        "vocabulary_size": len(vocabulary),
        "missing_share": float((text == "").mean()),
        "hashed": hashed,
        "bins": 2 ** math.ceil(math.log2(distinct)) if hashed else None,
        "top": [str(v) for v in counts.index[:TOP]],
        "vocabulary": vocabulary,
    }
    rare = [str(v) for v, n in counts.items() if n < min_count]
    notes = []
    if rare and not hashed:
        first = text.index[text == rare[0]][0]
        notes.append(
            f"Column {values.name!r}: {len(rare)} value(s) seen fewer than min_count={min_count} "
            f"times in train (e.g. {rare[0]!r} at {place(first)}) go to the out-of-vocabulary "
            "bucket, as unseen values do."
        )
    if hashed:
        notes.append(
            f"Column {values.name!r} has {distinct:,} distinct values in train (more than "
            f"hash_above={hash_above:,}): hashed into {entry['bins']:,} bins, no vocabulary."
        )
    return entry, notes


def stringify(values: pd.Series) -> pd.Series:
    """A categorical column as text, "" for missing; an integer-coded one as its digits."""
    if pd.api.types.is_float_dtype(values) and (values.dropna() % 1 == 0).all():
        values = values.astype("Int64")
    text = values.astype(object).where(values.notna(), "")
    return text.map(str).astype(object)


def _crosses(request: str, categorical: list[dict[str, Any]]) -> list[list[str]]:
    parsed = parse_crosses(request)
    order = [entry["name"] for entry in categorical]
    if parsed == "none":
        return []
    if parsed == "auto":
        plain = [e for e in categorical if not e["hashed"]]
        most = sorted(plain, key=lambda e: -e["distinct"])[:AUTO_CROSS_COLUMNS]
        picked = sorted((e["name"] for e in most), key=order.index)
        return [list(pair) for pair in itertools.combinations(picked, 2)]
    for pair in parsed:
        for name in pair:
            if name not in order:
                raise SchemaError(
                    f"crosses={request!r} names {name!r}, which is not a categorical column: "
                    f"cross two of {order}."
                )
    return [sorted(pair, key=order.index) for pair in parsed]
