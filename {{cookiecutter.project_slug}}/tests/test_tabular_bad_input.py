"""Step 1 for tables under bad input (issue 45): values the model cannot take, a copy of the
label, labels written two ways, nested and date columns, padded cells: each refused in one
sentence naming the file, the row or the column, or handled with a note."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.tabular import data_step
from {{ cookiecutter.package_name }}.tasks.tabular.sources import TableError, load_table


def csv(tmp_path: Path, body: str) -> data_step.Params:
    path = tmp_path / "rows.csv"
    path.write_text(body, encoding="utf-8")
    return data_step.Params(dataset="csv", data_dir=str(path), label_column="y")


def refused(tmp_path: Path, params: data_step.Params) -> str:
    with pytest.raises(DataError) as caught:
        entry.run(tmp_path, params, verbose=False)
    message = str(caught.value)
    assert_one_sentence(message)
    assert not (tmp_path / "data").exists()
    return message


def numbers(cells: list[str]) -> str:
    return "x,y\n" + "".join(f"{cell},{i % 2}\n" for i, cell in enumerate(cells))


@pytest.mark.parametrize("value", ["inf", "-inf", "1e39", "-1e300"])
@pytest.mark.parametrize("split", ["train", "validation"])
def test_a_number_beyond_float32_is_refused_at_its_row(tmp_path, value, split):
    cells = [str(i) for i in range(60)]
    params = csv(tmp_path, numbers(cells))
    table = load_table("csv", params.data_dir, label_column="y", seed=params.seed)
    line = int(table.frames[split].index[0])  # the schema's check (train) or the write's
    cells[line - 2] = value
    message = refused(tmp_path, csv(tmp_path, numbers(cells)))
    assert f"rows.csv, line {line}, column 'x': '{value}' is not allowed" in message
    assert "float32's range (±3.4e38)" in message


def loaded_refusal(path: Path, dataset: str = "csv") -> str:
    with pytest.raises(TableError) as caught:
        load_table(dataset, path, label_column="y")
    assert isinstance(caught.value, DataError)
    assert_one_sentence(str(caught.value))
    return str(caught.value)


def parquet(tmp_path: Path, columns: dict) -> Path:
    path = tmp_path / "rows.parquet"
    pd.DataFrame(columns).to_parquet(path, index=False)
    return path


def test_a_copy_of_the_label_is_refused_by_name(tmp_path):
    rows = "".join(f"{i},{'ab'[i % 3 == 0]},{i % 2},{'ny'[i % 2]}\n" for i in range(60))
    path = tmp_path / "rows.csv"
    path.write_text("x,kind,Answer Code,y\n" + rows)
    message = loaded_refusal(path)
    assert "rows.csv, column 'answer_code'" in message and "copy of the label" in message
    assert "'0' → 'n', '1' → 'y'" in message
    path.write_text("x,kind,code,y\n" + rows.replace(",1,", ",2,", 1))  # one row breaks it
    assert load_table("csv", path, label_column="y").classes == ["n", "y"]


def test_labels_differing_only_in_case_or_a_final_dot_are_refused_naming_the_groups(tmp_path):
    labels = [">50K", ">50k", "<=50K", "<=50K."] * 10
    path = tmp_path / "rows.csv"
    path.write_text("x,y\n" + "".join(f"{i}, {v} \n" for i, v in enumerate(labels)))
    message = loaded_refusal(path)
    assert "the labels '<=50K' and '<=50K.'; '>50K' and '>50k' differ only in case" in message


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([["a", "b"], ["c"], ["c"], ["a", "b"]] * 10, "list<"),
        ([{"a": 1, "b": "x"}] * 40, "struct<"),
    ],
    ids=["list", "struct"],
)
def test_a_nested_parquet_column_is_refused_with_its_type(tmp_path, values, kind):
    path = parquet(tmp_path, {"x": np.arange(40.0), "Tags": values, "y": [0, 1] * 20})
    message = loaded_refusal(path, "parquet")
    assert f"rows.parquet, column 'Tags': its type {kind}" in message


def test_date_columns_are_dropped_with_a_note_unless_declared_categorical(tmp_path):
    days = pd.date_range("2024-01-01", periods=40, freq="D")
    path = parquet(tmp_path, {
        "x": np.arange(40.0),
        "stamp": days,  # datetime64
        "day": [str(d.date()) for d in days],  # ISO text
        "when": [d.isoformat() + "Z" for d in days],
        "y": [0, 1] * 20,
    })  # fmt: skip
    table = load_table("parquet", path, label_column="y")
    assert list(table.frames["train"].columns) == ["x"]
    said = [note for note in table.notes if "holds dates" in note]
    assert len(said) == 3 and "column 'day' holds dates (e.g. '2024-01-" in said[1]
    kept = load_table("parquet", path, label_column="y", categorical=["day"])
    assert list(kept.frames["train"].columns) == ["x", "day"]


def test_padded_cells_are_stripped_to_one_category(tmp_path):
    path = parquet(tmp_path, {
        "work": [" Private", "Private ", "\tState-gov", "State-gov"] * 10,
        "y": [0, 1] * 20,
    })  # fmt: skip
    table = load_table("parquet", path, label_column="y")
    seen = set(pd.concat(table.frames.values())["work"])
    assert seen == {"Private", "State-gov"}


def test_rows_without_a_label_are_refused_unless_missing_label_drop(tmp_path):
    """missing_label=refuse (the default) names the first unlabelled row; drop leaves the rows
    out and says how many (issue 42 §3.9)."""
    rows = "x,y\n" + "".join(f"{i},{'' if i in (7, 20, 33) else i % 2}\n" for i in range(60))
    message = refused(tmp_path, csv(tmp_path, rows))
    assert "rows.csv, line 9, column 'y': the label is missing (3 rows lack one)" in message
    assert "missing_label=drop" in message
    params = data_step.Params(**{**csv(tmp_path, rows).__dict__, "missing_label": "drop"})
    metrics = entry.run(tmp_path, params, verbose=False)
    said = "rows.csv: 3 of 60 rows have no 'y' (the first at line 9) and were dropped"
    assert any(said in note for note in metrics["notes"])
    assert sum(metrics[f"{s}_count"] for s in ("train", "validation", "test")) == 57


def test_missing_label_takes_refuse_or_drop(tmp_path):
    params = data_step.Params(
        **{**csv(tmp_path, numbers(["1"] * 9)).__dict__, "missing_label": "skip"}
    )
    message = refused(tmp_path, params)
    assert message == "missing_label='skip' is not allowed: use one of ('refuse', 'drop')."


def test_a_parquet_file_given_as_csv_is_named_before_any_work(tmp_path):
    """A Parquet file passed with dataset=csv was told to 'fix the file' (issue 42 §3.9)."""
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"x": np.arange(40.0), "y": ["a", "b"] * 20}).to_parquet(path)
    params = data_step.Params(dataset="csv", data_dir=str(path), label_column="y")
    with pytest.raises(DataError) as caught:
        entry.check(tmp_path, params)
    assert_one_sentence(str(caught.value))
    assert str(caught.value) == (
        f"data_dir={str(path)!r} is a Parquet file (it starts with PAR1), not CSV text: pass "
        "dataset=parquet."
    )
