"""Step 1 for tables: data/ as the later steps read it (the contract of meta.json and the Parquet
splits), written whole or not at all, reused for the same request, its metrics and figures, and
every bad parameter refused before any work."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.tabular import data_step, tables

META_KEYS = {
    "task", "format", "dataset", "source", "label_column", "classes", "num_classes",
    "positive_class", "splits", "schema", "fingerprint", "renamed", "notes", "reused",
}  # fmt: skip


@pytest.fixture(scope="module")
def census_run(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("census-run")
    return folder, entry.run(folder, data_step.Params(), verbose=False)


def test_census_run_writes_the_contract(census_run):
    folder, metrics = census_run
    meta = json.loads((folder / "data" / "meta.json").read_text())
    assert set(meta) >= META_KEYS
    assert meta["classes"] == ["<=50K", ">50K"] and meta["positive_class"] == ">50K"
    assert meta["label_column"] == "income" and meta["renamed"]["education-num"] == "education_num"
    splits = meta["splits"]
    assert splits["train"]["count"] + splits["validation"]["count"] == 32561
    assert splits["test"]["count"] == 16281 and splits["test"]["per_class"] == [12435, 3846]
    assert splits["train"]["per_class"][1] + splits["validation"]["per_class"][1] == 7841
    train = pd.read_parquet(folder / "data" / splits["train"]["file"])
    names = [e["name"] for kind in ("numeric", "categorical") for e in meta["schema"][kind]]
    assert set(train.columns) == {*names, "__label__"}
    assert train["__label__"].dtype == np.int32 and train["age"].dtype == np.float64
    assert train["workclass"].map(type).eq(str).all() and (train["workclass"] == "").any()
    assert list(train["__label__"].value_counts().sort_index()) == splits["train"]["per_class"]
    assert metrics["train_count"] == splits["train"]["count"] and not metrics["data_reused"]
    assert metrics["label_balance"]["test"] == pytest.approx(3846 / 16281)
    assert metrics["missing_share"]["occupation"] > 0.05 and metrics["missing_share"]["age"] == 0
    assert [row["name"] for row in metrics["schema"]][:3] == ["age", "workclass", "fnlwgt"]
    for name in ("data_classes", "data_missing", "data_columns", "data_throughput"):
        assert f"figures/{name}.png" in metrics["figures"]
        assert (folder / "figures" / f"{name}.png").stat().st_size > 10_000


def test_the_same_request_is_reused_and_another_rewrites(census_run, tmp_path):
    folder, _ = census_run
    again = entry.run(folder, data_step.Params(), verbose=False)
    assert again["data_reused"]
    other = entry.run(folder, data_step.Params(crosses="none"), verbose=False)
    assert not other["data_reused"] and other["crosses"] == []
    meta = json.loads((folder / "data" / "meta.json").read_text())
    assert meta["schema"]["crosses"] == [] and meta["request"]["crosses"] == "none"


def test_a_failed_write_leaves_the_earlier_data_whole(tmp_path, monkeypatch):
    path = tmp_path / "rows.csv"
    body = "x,kind,y\n" + "".join(f"{i},{'ab'[i % 3 == 0]},{i % 2}\n" for i in range(40))
    path.write_text(body)
    params = data_step.Params(dataset="csv", data_dir=str(path), label_column="y")
    entry.run(tmp_path, params, verbose=False)
    before = (tmp_path / "data" / "meta.json").read_bytes()

    def broken(self, *args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError):
        entry.run(tmp_path, dataclasses.replace(params, seed=7), verbose=False)
    assert (tmp_path / "data" / "meta.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".data")] == []


def test_a_word_in_a_numeric_column_of_another_split_names_its_row(tmp_path):
    path = tmp_path / "rows.csv"
    body = "x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(60)) + "oops,1\n"
    path.write_text(body)
    params = data_step.Params(dataset="csv", data_dir=str(path), label_column="y",
                              numeric_columns="x")  # fmt: skip
    with pytest.raises(DataError) as caught:
        entry.run(tmp_path, params, verbose=False)
    assert f"{path}, line 62, column 'x'" in str(caught.value)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"dataset": "excel"}, "dataset='excel'"),
        ({"data_dir": "x.csv"}, "not used by dataset='census'"),
        ({"label_column": "age"}, "label_column='age'"),
        ({"dataset": "csv", "data_dir": "/nonexistent.csv"}, "is not a file"),
        ({"numeric_columns": "a,,b"}, "numeric_columns='a,,b'"),
        ({"numeric_columns": "age", "categorical_columns": "Age"}, "'age' is in both"),
        ({"crosses": "a*b*c"}, "crosses='a*b*c'"),
        ({"crossing_dim": 1}, "crossing_dim=1"),
        ({"min_count": 0}, "min_count=0"),
        ({"hash_above": True}, "hash_above=True"),
        ({"val_fraction": 1.0}, "val_fraction=1.0"),
        ({"test_fraction": 0.95}, "test_fraction=0.95"),
    ],
)
def test_bad_parameters_are_refused_before_any_work(tmp_path, change, words):
    params = dataclasses.replace(data_step.Params(), **change)
    with pytest.raises(DataError) as caught:
        entry.check(tmp_path, params)
    assert words in str(caught.value)
    assert_one_sentence(str(caught.value))
    assert list(tmp_path.iterdir()) == []


def test_a_user_csv_with_its_own_test_split(tmp_path):
    path = tmp_path / "rows.csv"
    body = "X Value,kind,y\n" + "".join(f"{i},{'abc'[i % 3]},{'ny'[i % 2]}\n" for i in range(100))
    path.write_text(body)
    params = data_step.Params(dataset="csv", data_dir=str(path), label_column="y",
                              categorical_columns="x value", test_fraction=0.2)  # fmt: skip
    metrics = entry.run(tmp_path, params, verbose=False)
    meta = json.loads((tmp_path / "data" / "meta.json").read_text())
    assert meta["schema"]["numeric"] == [] and meta["renamed"] == {"X Value": "x_value"}
    assert metrics["test_count"] == 20 and meta["positive_class"] == "y"
    test = tables.read_split(tmp_path, "test")
    assert test["x_value"].map(type).eq(str).all()  # declared categorical: its digits as text


def test_the_headline_names_the_file_formats_it_compared(census_run):
    """01 for tables times Parquet against CSV text, not a tf.data pipeline against a naive one,
    and the report's headline says that (issue 42 §3.4)."""
    from {{ cookiecutter.package_name }}.runner.numbers import key_numbers
    from {{ cookiecutter.package_name }}.runner.summary import _data

    line = _data(census_run[1])
    assert "tf.data pipeline" not in line and "naive" not in line
    assert "reading train.parquet takes" in line and "the same rows as CSV text" in line
    rows = dict(key_numbers("data", census_run[1]))
    assert "speed-up" not in rows and rows["read timing"].startswith("reading train.parquet")


def test_the_data_step_says_what_it_prepares_before_it(tmp_path, monkeypatch, capsys):
    """01's longest silent stretch (pandas, the table, the schema, Parquet) is announced first."""
    seen: list[str] = []

    def prepare(*_args, **_kwargs):
        seen.append(capsys.readouterr().out)
        raise RuntimeError("reached")

    monkeypatch.setattr(tables, "prepare", prepare)
    with pytest.raises(RuntimeError, match="reached"):
        entry.run(str(tmp_path / "run"), data_step.Params())
    assert "» Preparing census: loading pandas" in seen[0]
