"""Checks of a loaded table that look at a whole column (issue 45): labels written two ways, a
copy of the label among the features, nested Parquet columns and date columns. Each refuses in one
sentence naming the file and the column (`TableError`), or says what it did in a note."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ...data.base import DataError

DATE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
)


class TableError(DataError):
    """Bad tabular input: one sentence naming the file, row and column, and what to do."""


def drop_unlabelled(
    frame: pd.DataFrame, label: str, name: str, unit: str
) -> tuple[pd.DataFrame, list[str]]:
    """missing_label=drop: the rows whose label is missing left out, and a note of how many."""
    missing = frame.index[frame[label].isna()] if label in frame.columns else frame.index[:0]
    if not len(missing):
        return frame, []
    note = (
        f"{name}: {len(missing):,} of {len(frame):,} rows have no {label!r} (the first at {unit} "
        f"{missing[0]}) and were dropped (missing_label=drop)."
    )
    return frame.drop(index=missing), [note]


def refuse_nested(data: bytes, name: str) -> None:
    """A Parquet list, struct or map column holds several values per row: refused by name."""
    for field in pq.read_schema(io.BytesIO(data)):
        if pa.types.is_nested(field.type):
            raise TableError(
                f"{name}, column {field.name!r}: its type {field.type} holds several values per "
                "row, which a model input cannot take; a column holds one number or one text per "
                "row, so flatten it into columns or drop it."
            )


def refuse_label_variants(values: pd.Series, name: str, label: str) -> None:
    """Labels that differ only in case or a final dot (`>50K`, `>50k`, `>50K.`) would be
    separate classes: refused with every such group named (cells are stripped already)."""
    seen = pd.Series(values.dropna().unique(), dtype=object)
    keys = seen.map(lambda text: str(text).rstrip(".").casefold())
    groups = [sorted(group) for _, group in seen.groupby(keys) if len(group) > 1]
    if groups:
        said = "; ".join(" and ".join(repr(v) for v in group) for group in groups)
        raise TableError(
            f"{name}, column {label!r}: the labels {said} differ only in case or a final dot, "
            "so they would be separate classes: write each class one way."
        )


def refuse_leak(frame: pd.DataFrame, labels: np.ndarray, classes: list[str], name: str) -> None:
    """A feature whose values go one to one with the classes on the training rows is the label
    itself under another name (a target leak): refused by name."""
    for column in frame.columns:
        text = frame[column].astype(str).where(frame[column].notna(), "")
        if text.nunique() != len(classes):
            continue
        pairs = pd.DataFrame({"value": text.to_numpy(), "label": labels}).drop_duplicates()
        if len(pairs) == len(classes) and pairs["label"].nunique() == len(classes):
            shown = ", ".join(
                f"{v!r} → {classes[c]!r}" for v, c in pairs.sort_values("label").to_numpy()
            )
            raise TableError(
                f"{name}, column {column!r}: its values match the label one to one on all "
                f"{len(frame):,} training rows ({shown}), so it is a copy of the label (a target "
                "leak) that scores perfectly here and means nothing on new rows: remove the column."
            )


def date_columns(frame: pd.DataFrame, declared: set[str], name: str, unit: str) -> tuple:
    """(columns, notes): the text columns whose every value is an ISO date or date-time (a
    Parquet date or timestamp reads as such text), dropped: a date seen in training never comes
    again, so as a category every new row's is out of vocabulary."""
    dropped, notes = [], []
    for column in frame.columns:
        values = frame[column].dropna()
        if column in declared or values.dtype != object or not len(values):
            continue
        if values.map(lambda text: bool(DATE.match(str(text)))).all():
            dropped.append(column)
            notes.append(
                f"{name}, column {column!r} holds dates (e.g. {values.iloc[0]!r} at {unit} "
                f"{values.index[0]}) and was dropped: as a category each new date is unseen; add "
                "its parts (year, month, day of week) as numeric columns to use it, or declare "
                f"categorical_columns={column} to keep it as categories."
            )
    return dropped, notes
