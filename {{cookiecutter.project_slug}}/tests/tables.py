"""A small table run folder for the model side's tests: data/ as 01_data writes it (Parquet
splits, meta.json with a fixed schema, the fitted FeatureSpace), written in a second, without the
data step, so a test of the pipeline, models or export does not depend on schema inference.

The label depends on a number and a category (and a missing number says something too), so a
model that learns anything beats chance by far.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = {
    "numeric": [
        {"name": "amount", "mean": 0.0, "std": 1.0, "min": -4.0, "max": 4.0, "missing_share": 0.0},
        {"name": "age", "mean": 40.0, "std": 12.0, "min": 18.0, "max": 90.0, "missing_share": 0.1},
    ],
    "categorical": [
        {
            "name": "city",
            "distinct": 6,
            "vocabulary_size": 5,
            "missing_share": 0.05,
            "hashed": False,
            "bins": None,
            "top": ["north", "south"],
        },
        {
            "name": "device",
            "distinct": 3,
            "vocabulary_size": 3,
            "missing_share": 0.0,
            "hashed": False,
            "bins": None,
            "top": ["web", "app"],
        },
    ],
    "crosses": [["city", "device"]],
    "crossing_dim": 32,
}
CITIES = ["north", "south", "east", "west", ""]  # "" is missing; "rare" below is seen once


def frame(count: int, seed: int) -> Any:
    """`count` rows of the schema's columns and the int32 label column."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    amount = rng.standard_normal(count)
    age = rng.normal(40, 12, count).round()
    age[rng.random(count) < 0.1] = np.nan
    city = rng.choice(CITIES, count, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    city[0] = "rare"
    device = rng.choice(["web", "app", "kiosk"], count)
    score = 1.5 * amount + (city == "north") - (city == "south") + np.isnan(age)
    label = (score + 0.3 * rng.standard_normal(count) > 0.5).astype("int32")
    return pd.DataFrame(
        {"amount": amount, "age": age, "city": city, "device": device, "__label__": label}
    )


def make_table_run(run_dir: Path, counts: tuple[int, int, int] = (600, 150, 200)) -> Path:
    """run_dir/data/: train, validation and test Parquet files, meta.json and the FeatureSpace."""
    from {{ cookiecutter.package_name }}.tasks.tabular.features import prepare_features

    data = run_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    splits = {}
    for seed, (split, count) in enumerate(
        zip(("train", "validation", "test"), counts, strict=True)
    ):
        table = frame(count, seed)
        table.to_parquet(data / f"{split}.parquet")
        per_class = np.bincount(table["__label__"], minlength=2).tolist()
        name = f"{split}.parquet"
        splits[split] = {"count": count, "per_class": per_class, "file": name, "shards": [name]}
    meta = {
        "task": "tabular_classification",
        "dataset": "synthetic",
        "label_column": "label",
        "classes": ["no", "yes"],
        "num_classes": 2,
        "positive_class": "yes",
        "splits": splits,
        "schema": SCHEMA,
        "fingerprint": "test",
    }
    meta = prepare_features(data, meta)
    (data / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return run_dir
