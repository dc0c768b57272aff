"""The tabular data folder written once: one Parquet file per split, the schema, meta.json.

Each split is one Parquet file (pyarrow) with a column per feature under its sanitized name:
numeric columns as float64 with NaN for missing, categorical ones as text with "" for missing (an
integer-coded categorical as its digits), and the int32 class index `__label__`. The schema is
inferred from the training split alone and lives in meta.json with its fingerprint; the features
module then adapts the model's preprocessing on train.parquet and saves it beside the splits.

The folder is written whole or not at all, as the text task's: everything goes into a hidden
sibling folder, renamed to data/ only when meta.json is in it; a failure removes the sibling and
keeps whatever data/ held. The same request as the one in data/meta.json (same parameters, same
source bytes) is reused as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import lineage
from ...artifacts import DATA_DIR, META_FILE, require, resolve_run_dir
from ...writes import write_json, writing
from .columns import SchemaError
from .schema import check_range, fingerprint, infer_schema, stringify
from .sources import Table, load_table

TASK = "tabular_classification"
FORMAT = 1  # bump when the files or meta.json change, so an older folder is not reused
LABEL = "__label__"
SPLIT_ORDER = ("train", "validation", "test")
META_NAME = Path(META_FILE).name
AGAIN = "run 01_data again (data/ is only replaced once the new one is complete)"


def prepare(run_dir: str | os.PathLike[str], dataset: str = "census", **options: Any) -> dict:
    """Load, split and describe the source, then write run_dir/data/ (or reuse it): its meta.

    `options` are the data step's: data_dir, label_column, numeric_columns, categorical_columns
    (lists of names), min_count, hash_above, crosses, crossing_dim, val_fraction, test_fraction,
    seed, missing_label, train_rows. The meta comes back with "reused": True when data/ already
    held this request."""
    folder = resolve_run_dir(run_dir, create=True)
    out = folder / DATA_DIR
    data_dir = options.get("data_dir") or None
    table = load_table(
        dataset,
        data_dir,
        label_column=options.get("label_column", ""),
        categorical=options.get("categorical_columns", ()),
        val_fraction=options.get("val_fraction", 0.1),
        test_fraction=options.get("test_fraction", 0.1),
        seed=options.get("seed", 42),
        missing_label=options.get("missing_label", "refuse"),
    )
    rows, whole = options.pop("train_rows", 0) or 0, len(table.labels["train"])
    table = keep_train_rows(table, rows, options.get("seed", 42))
    if len(table.labels["train"]) < whole:
        options["train_rows"] = rows  # in the request: a folder of all rows is not reused
    request = {
        "format": FORMAT,
        "task": TASK,
        "dataset": dataset,
        "data_dir": None if data_dir is None else str(Path(data_dir).resolve()),
        **{key: value for key, value in sorted(options.items()) if key != "data_dir"},
        "source_sha256": table.fingerprint,
    }
    if dataset == "census":
        request.pop("test_fraction", None)  # census keeps its own test file
    request = json.loads(json.dumps(request))
    meta = reusable(out, request) or write_data(folder, table, request)
    lineage.record(folder, "data", "data", {})
    return meta


def keep_train_rows(table: Table, rows: int, seed: int) -> Table:
    """The table with `rows` of its training rows (0 or more than it holds: all), each class
    in proportion (at least one row of each), drawn with seed; validation and test stay whole,
    so every score is on the same rows as a run on all of them. A note says what was kept."""
    labels = table.labels["train"]
    if not rows or rows >= len(labels):
        return table
    rng = np.random.default_rng(seed)
    kept = []
    for label in np.unique(labels):
        places = np.flatnonzero(labels == label)
        take = max(1, round(len(places) * rows / len(labels)))
        kept.append(rng.choice(places, size=min(take, len(places)), replace=False))
    kept = np.sort(np.concatenate(kept))
    note = (
        f"train: kept {len(kept):,} of {len(labels):,} rows (train_rows={rows}), each class in "
        "proportion; validation and test are whole."
    )
    frames = {**table.frames, "train": table.frames["train"].iloc[kept]}
    return replace(
        table,
        frames=frames,
        labels={**table.labels, "train": labels[kept]},
        notes=[*table.notes, note],
    )


def write_data(folder: Path, table: Table, request: dict[str, Any]) -> dict[str, Any]:
    """The splits, the schema and meta.json into a hidden sibling, renamed to data/ whole."""
    started = time.perf_counter()
    schema, notes = infer_schema(
        table.frames["train"],
        numeric=request.get("numeric_columns", []),
        categorical=request.get("categorical_columns", []),
        min_count=request.get("min_count", 2),
        hash_above=request.get("hash_above", 1000),
        crosses=request.get("crosses", "auto"),
        crossing_dim=request.get("crossing_dim", 256),
        place=lambda row: table.place("train", row),
    )
    out = folder / DATA_DIR
    staging = Path(tempfile.mkdtemp(prefix=f".{DATA_DIR}.tmp-", dir=folder))
    os.chmod(staging, 0o755)  # mkdtemp's 0700 would hide data/ from other readers (a container)
    try:
        with writing(out, AGAIN):
            splits = {}
            for name in SPLIT_ORDER:
                frame = to_columns(table, name, schema)
                frame.to_parquet(staging / f"{name}.parquet", index=False, engine="pyarrow")
                counts = np.bincount(table.labels[name], minlength=len(table.classes))
                splits[name] = {
                    "count": len(frame),
                    "per_class": [int(n) for n in counts],
                    "file": f"{name}.parquet",
                }
            binary = len(table.classes) == 2
            meta = {
                "task": TASK,
                "format": FORMAT,
                "dataset": table.dataset,
                "source": ", ".join(dict.fromkeys(table.files.values())),
                "label_column": table.label_column,
                "classes": list(table.classes),
                "num_classes": len(table.classes),
                "positive_class": table.classes[1] if binary else None,
                "splits": splits,
                "columns": list(table.frames["train"].columns),  # the feature columns, file order
                "schema": schema,
                "fingerprint": fingerprint(schema),
                "renamed": dict(table.renamed),
                "notes": [*table.notes, *notes],
                "request": request,
                "reused": False,  # as written; prepare() returns True when it reuses the folder
            }
            meta["write"] = {
                "seconds": round(time.perf_counter() - started, 3),
                "bytes": sum(p.stat().st_size for p in staging.glob("*.parquet")),
            }
            from .features import prepare_features  # Keras loads here: the splits are written

            meta = prepare_features(staging, meta)
            write_json(staging / META_NAME, meta, then=AGAIN)
            replace_folder(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {**meta, "reused": False}


def to_columns(table: Table, split: str, schema: dict[str, Any]) -> pd.DataFrame:
    """One split as written: float64 numbers (NaN missing), text categories ("" missing), the
    int32 label last; a word in a numeric column of any split is refused with its row."""
    frame = table.frames[split]
    numeric = {entry["name"] for entry in schema["numeric"]}
    columns = {}
    for name in frame.columns:
        values = frame[name]
        if name in numeric:
            numbers = pd.to_numeric(values, errors="coerce").astype("float64")
            odd = values.notna() & numbers.isna()
            if odd.any():
                row = odd.index[odd.argmax()]
                raise SchemaError(
                    f"{table.place(split, row)}, column {name!r}: {values[row]!r} is not a "
                    f"number, but the column is numeric in train; fix the value or declare "
                    f"categorical_columns={name}."
                )
            check_range(values, numbers, lambda row: table.place(split, row))
            columns[name] = numbers.to_numpy()
        else:
            columns[name] = stringify(values).to_numpy(dtype=object)
    columns[LABEL] = np.asarray(table.labels[split], dtype=np.int32)
    return pd.DataFrame(columns)


def read_split(run_dir: str | os.PathLike[str], split: str) -> pd.DataFrame:
    """data/<split>.parquet as written (the label in LABEL)."""
    folder = resolve_run_dir(run_dir, create=False)
    return pd.read_parquet(folder / DATA_DIR / f"{split}.parquet", engine="pyarrow")


def read_table_meta(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """data/meta.json as 01_data wrote it; a missing one names the notebook that writes it."""
    path = require(run_dir, META_FILE, "01_data")
    return json.loads(path.read_text(encoding="utf-8"))


def reusable(out: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The meta of an earlier, complete write of the same request, or None."""
    try:
        meta = json.loads((out / META_NAME).read_text(encoding="utf-8"))
        if meta.get("request") != request:
            return None
        names = [split["file"] for split in meta["splits"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    space = meta.get("feature_space")
    names += [space] if isinstance(space, str) else []
    if not all((out / name).is_file() for name in names):
        return None
    return {**meta, "reused": True}


def replace_folder(staging: Path, out: Path) -> None:
    """Rename the complete staging folder to data/; an older data/ is set aside, then removed
    (as the text task's records.py does)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{DATA_DIR}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
    try:
        staging.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)  # the earlier complete data stays
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
