"""Where the rows come from: the embedded census income, or a user's CSV or Parquet file.

Every source ends as one `Table`: per split a DataFrame of the feature columns as read (text, or
numbers where a Parquet column is typed so; missing is NaN) with the label ids beside it. Column
names become identifiers (`education-num` → `education_num`), because they become the
SavedModel's input names. Every check runs while reading, before anything is written, and refuses
bad input in one sentence that names the file, the row and the column (`TableError`, a
`DataError`); what can be handled is handled, with a note: a column missing in every row is
dropped, and a column that is mostly words with a few numbers is read as categories.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ...data.split import check_test_fraction, split_indices
from .columns import sanitize
from .screens import (
    TableError,
    date_columns,
    drop_unlabelled,
    refuse_label_variants,
    refuse_leak,
    refuse_nested,
)

SOURCES = ("census", "csv", "parquet")
CENSUS = resources.files(__package__) / "census"
CENSUS_COLUMNS = [  # adult.data's and adult.test's, as the data README names them (no header)
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]  # fmt: skip
CENSUS_LABEL = "income"
MISSING = ("", "?", "NA", "N/A", "NaN", "nan", "null", "NULL")  # read as a missing value


@dataclass
class Table:
    """A loaded source: feature frames and label ids per split (train, validation, test).

    A frame's index is the row's place in its file (`unit` N of `files[split]`), so any later
    check can name it."""

    dataset: str
    label_column: str
    classes: list[str]
    frames: dict[str, pd.DataFrame]
    labels: dict[str, np.ndarray]
    files: dict[str, str]
    unit: str  # "line" (CSV, census) or "row" (Parquet)
    fingerprint: str  # sha256 of the bytes read
    renamed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def place(self, split: str, index: int) -> str:
        return f"{self.files[split]}, {self.unit} {index}"


def load_table(
    dataset: str = "census",
    path: str | Path | None = None,
    *,
    label_column: str = "",
    categorical: Iterable[str] = (),
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 42,
    missing_label: str = "refuse",
) -> Table:
    """Read a source and split it, stratified by label and seeded. Census keeps its own test
    file as the test split; a user's file gives `test_fraction` of each class to test.
    `categorical` (sanitized or original names) are never refused as mixed: they are text.
    Rows without a label are refused, or with `missing_label="drop"` dropped with a note."""
    if dataset not in SOURCES:
        raise TableError(f"dataset={dataset!r} is not a table source: use one of {SOURCES}.")
    check_test_fraction(test_fraction if dataset != "census" else 0.0, val_fraction)
    declared = {sanitize(name) for name in categorical}
    if dataset == "census":
        parts, digest = _census()
        label, unit, test_fraction = CENSUS_LABEL, "line", 0.0
    else:
        if path is None or not Path(path).is_file():
            raise TableError(f"data_dir={str(path or '')!r} is not a file: {dataset} needs one.")
        data = Path(path).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        name, unit = str(path), "line" if dataset == "csv" else "row"
        reader = _read_csv if dataset == "csv" else _read_parquet
        parts = {"train": (name, reader(data, name))}
        label = label_column
    label, notes = sanitize(label), []
    frames: dict[str, pd.DataFrame] = {}
    for split, (name, frame) in parts.items():
        frame, renamed = _named(frame, name, unit)
        frames[split] = _cleaned(frame, label)
    train_name, train = parts["train"][0], frames["train"]
    if label not in train.columns:
        raise TableError(
            f"{train_name}, {unit} 1: no column {label!r} among {list(train.columns)}, so name "
            "the label with label_column=."
        )
    for split, name in ((s, parts[s][0]) for s in frames):
        if missing_label == "drop":
            frames[split], said = drop_unlabelled(frames[split], label, name, unit)
            notes += said
        frame = frames[split]
        _check_labels(frame[label], name, unit)
        for column in frame.columns.drop(label):
            if column not in declared:
                notes += _check_mixed(frame[column], name, unit)
    empty = [c for c in train.columns if c != label and train[c].isna().all()]
    if empty:
        notes.append(
            f"{train_name}: column(s) {', '.join(empty)} hold no value in any row (all missing) "
            "and were dropped."
        )
    names = {s: frame.pop(label) for s, frame in frames.items()}
    dates, said = date_columns(frames["train"].drop(columns=empty), declared, train_name, unit)
    notes += said
    frames = {s: frame.drop(columns=[*empty, *dates]) for s, frame in frames.items()}
    refuse_label_variants(pd.concat(names.values()), train_name, label)
    classes = sorted(set(names["train"]))
    if len(classes) < 2:
        raise TableError(
            f"{train_name}, column {label!r}: every row has the label {classes[0]!r}, so there "
            "is nothing to tell apart: a classifier needs at least two classes."
        )
    ids = {s: _ids(values, classes, parts[s][0], unit, label) for s, values in names.items()}
    _refuse_single_rows(names["train"], train_name, unit, label)
    index = split_indices(ids["train"], classes, val_fraction, seed, test_fraction)
    out = {s: frames["train"].iloc[rows] for s, rows in index.items()}
    labels = {s: ids["train"][rows].astype(np.int32) for s, rows in index.items()}
    refuse_leak(out["train"], labels["train"], classes, train_name)
    files = dict.fromkeys(out, train_name)
    if dataset == "census":
        out["test"], labels["test"] = frames["test"], ids["test"].astype(np.int32)
        files["test"] = parts["test"][0]
    if renamed:
        pairs = ", ".join(f"{old!r} → {new!r}" for old, new in renamed.items())
        notes.insert(0, f"Column names were made identifiers (the export's input names): {pairs}.")
    return Table(dataset, label, classes, out, labels, files, unit, digest, renamed, notes)


def _census() -> tuple[dict[str, tuple[str, pd.DataFrame]], str]:
    """The vendored files, named as the data README names their columns; the test labels' dot
    (`>50K.`) is dropped so both files share two classes."""
    digest, parts = hashlib.sha256(), {}
    for split, file in (("train", "adult.data"), ("test", "adult.test")):
        data = gzip.decompress((CENSUS / f"{file}.gz").read_bytes())
        digest.update(data)
        frame = _read_csv(data, f"census/{file}", header=False)
        frame[CENSUS_LABEL] = frame[CENSUS_LABEL].str.rstrip(".")
        parts[split] = (f"census/{file}", frame)
    return parts, digest.hexdigest()


def _read_csv(data: bytes, name: str, header: bool = True) -> pd.DataFrame:
    """Every cell as text; the first line kept as a row, so its names are checked as written."""
    if not data.strip():
        raise TableError(f"{name} is empty: give a CSV with a header line and rows.")
    try:
        frame = pd.read_csv(
            io.BytesIO(data), header=None, dtype=str, keep_default_na=False,
            skipinitialspace=True, encoding="utf-8-sig",
        )  # fmt: skip
    except (UnicodeDecodeError, pd.errors.ParserError) as error:
        reason = _first_clause(error)
        raise TableError(
            f"{name} cannot be read as a UTF-8 CSV ({reason}): fix the file."
        ) from None
    if not header:
        frame.columns = CENSUS_COLUMNS
        frame.index = np.arange(1, len(frame) + 1)
        return frame
    names = list(frame.iloc[0])
    frame = frame.iloc[1:].set_axis(names, axis=1)
    frame.index = np.arange(2, len(frame) + 2)
    return frame


def _read_parquet(data: bytes, name: str) -> pd.DataFrame:
    if not data:
        raise TableError(f"{name} is empty: give a Parquet file with named columns and rows.")
    try:
        frame = pd.read_parquet(io.BytesIO(data), engine="pyarrow")
    except Exception as error:  # pyarrow's errors have no common base worth naming
        reason = _first_clause(error)
        raise TableError(f"{name} cannot be read as Parquet ({reason}): fix the file.") from None
    refuse_nested(data, name)
    frame.index = np.arange(1, len(frame) + 1)
    return frame


def _named(frame: pd.DataFrame, name: str, unit: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """Refuse a header that is data or repeats a name; make the names identifiers."""
    where = f"{name}, {unit} 1" if unit == "line" else name
    names = [str(c) for c in frame.columns]
    numbers = [n for n in names if _is_number(n)]
    if names and len(numbers) * 2 >= len(names):
        raise TableError(
            f"{where}: the column names {numbers[:4]} are numbers, so the file seems to have no "
            "header; add a first line naming the columns."
        )
    new = [sanitize(n) for n in names]
    for i, column in enumerate(new):
        if new.index(column) != i:
            first = names[new.index(column)]
            raise TableError(
                f"{where}: the columns {first!r} and {names[i]!r} (columns {new.index(column) + 1} "
                f"and {i + 1}) both name {column!r}; rename one."
            )
    if frame.empty:
        raise TableError(f"{name} has a header but no rows: add rows of every class.")
    return frame.set_axis(new, axis=1), {o: n for o, n in zip(names, new, strict=True) if o != n}


def _cleaned(frame: pd.DataFrame, label: str) -> pd.DataFrame:
    """Text cells stripped, MISSING made NaN; typed numeric columns (Parquet's) kept as they are,
    but the label's, which is read as text like every other column."""
    out = {}
    for column in frame.columns:
        values = frame[column]
        typed = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if typed and column != label:
            out[column] = values
            continue
        text = values.astype(str).where(values.notna(), "").str.strip()
        out[column] = text.mask(text.isin(MISSING)).astype(object)
    return pd.DataFrame(out, index=frame.index)


def _check_mixed(values: pd.Series, name: str, unit: str) -> list[str]:
    """A text column that is mostly numbers with a word among them is refused at the first word;
    one of words with a few numbers is read as categories, with a note."""
    if values.dtype != object:
        return []
    present = values.notna()
    numbers = pd.to_numeric(values[present], errors="coerce").notna()
    count, total = int(numbers.sum()), int(present.sum())
    if count in (0, total):
        return []
    column = values.name
    if count * 2 >= total:
        odd = values[present][~numbers]
        verb = "is" if len(odd) == 1 else "are"
        raise TableError(
            f"{name}, {unit} {odd.index[0]}, column {column!r}: {odd.iloc[0]!r} is not a number, "
            f"though {count:,} of the column's {total:,} values are ({len(odd):,} {verb} not); fix "
            f"it, mark it missing with '?', or declare categorical_columns={column}."
        )
    first = values[present][numbers].index[0]
    return [
        f"{name}, column {column!r}: {count:,} numbers among {total - count:,} words (the first "
        f"at {unit} {first}) are read as categories, like the words."
    ]


def _check_labels(values: pd.Series, name: str, unit: str) -> None:
    missing = values.index[values.isna()]
    if len(missing):
        raise TableError(
            f"{name}, {unit} {missing[0]}, column {values.name!r}: the label is missing "
            f"({len(missing):,} rows lack one), so give it, remove the row or pass "
            "missing_label=drop."
        )


def _refuse_single_rows(values: pd.Series, name: str, unit: str, label: str) -> None:
    counts = values.value_counts()
    for value, count in counts.items():
        if count == 1:
            row = values.index[values == value][0]
            raise TableError(
                f"{name}, {unit} {row}, column {label!r}: the label {value!r} has this single "
                "row, so it cannot be split stratified; add rows of it or remove the row."
            )


def _ids(values: pd.Series, classes: list[str], name: str, unit: str, label: str) -> np.ndarray:
    index = {cls: i for i, cls in enumerate(classes)}
    unknown = values[~values.isin(classes)]
    if len(unknown):
        raise TableError(
            f"{name}, {unit} {unknown.index[0]}, column {label!r}: the label {unknown.iloc[0]!r} "
            f"is not one of the training classes {classes}."
        )
    return values.map(index).to_numpy(np.int64)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _first_clause(error: BaseException) -> str:
    """A library's error as a clause of our sentence: its first sentence, no final stop."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.split(r"[.!?]\s+(?=[A-Z])", text)[0].rstrip(".")
