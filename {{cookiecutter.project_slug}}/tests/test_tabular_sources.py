"""Step 1 for tables: census income as vendored, a user's CSV and Parquet file, and every bad
input answered in one sentence that names the file, the row and the column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.tasks.tabular.sources import TableError, load_table

HEADER = "Age,Work Class,hours-per-week,label\n"


def rows(count: int = 40) -> str:
    """`count` good rows, two classes alternating, a few cells missing ('?' and empty)."""
    lines = []
    for i in range(count):
        work = "?" if i % 9 == 0 else ("private", "state", "self")[i % 3]
        hours = "" if i % 11 == 0 else str(30 + i % 20)
        lines.append(f"{20 + i},{work},{hours},{('no', 'yes')[i % 2]}\n")
    return "".join(lines)


def write(tmp_path: Path, body: str, name: str = "people.csv") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def refusal(path: Path, dataset: str = "csv", **kwargs) -> str:
    with pytest.raises(TableError) as caught:
        load_table(dataset, path, label_column=kwargs.pop("label_column", "label"), **kwargs)
    assert isinstance(caught.value, DataError)  # the CLI prints a DataError as its sentence
    message = str(caught.value)
    assert_one_sentence(message)
    return message


def test_census_loads_its_own_test_file_and_strips_the_label_dot():
    table = load_table("census", val_fraction=0.1, seed=3)
    assert table.classes == ["<=50K", ">50K"]
    train = len(table.frames["train"]) + len(table.frames["validation"])
    assert (train, len(table.frames["test"])) == (32561, 16281)
    positives = int(table.labels["train"].sum() + table.labels["validation"].sum())
    assert positives == 7841 and int(table.labels["test"].sum()) == 3846
    assert table.label_column == "income" and "income" not in table.frames["train"].columns
    assert "education_num" in table.frames["train"].columns
    assert table.renamed["native-country"] == "native_country"
    assert any("identifiers" in note for note in table.notes)
    # "?" is missing; line numbers point back into the file (line 28 of adult.data: "?" workclass)
    frames = pd.concat([table.frames["train"], table.frames["validation"]])
    assert pd.isna(frames.loc[28, "workclass"]) and frames.loc[1, "workclass"] == "State-gov"
    assert table.place("test", 5) == "census/adult.test, line 5"


def test_a_csv_is_split_stratified_with_names_made_identifiers(tmp_path):
    table = load_table("csv", write(tmp_path, HEADER + rows(60)), label_column="label", seed=1)
    assert list(table.frames["train"].columns) == ["age", "work_class", "hours_per_week"]
    assert table.renamed["Work Class"] == "work_class" and "label" not in table.renamed
    assert table.classes == ["no", "yes"]
    assert sum(len(f) for f in table.frames.values()) == 60
    for split in ("train", "validation", "test"):
        assert set(table.labels[split].tolist()) == {0, 1}
    assert table.frames["train"]["work_class"].isna().any()  # "?" read as missing


def test_a_parquet_file_keeps_its_typed_columns(tmp_path):
    frame = pd.DataFrame(
        {
            "Amount": np.arange(40, dtype=float),
            "kind": ["a", "b", "b"] * 13 + ["a"],
            "y": [0, 1] * 20,
        }
    )
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, index=False)
    table = load_table("parquet", path, label_column="y")
    assert table.classes == ["0", "1"] and table.unit == "row"
    assert table.frames["train"]["amount"].dtype == np.float64


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("", ("people.csv", "empty")),
        (HEADER, ("people.csv", "no rows")),
        ("20,private,40,no\n" + rows(), ("people.csv", "line 1", "no header")),
        ("a,A,label\n" + "1,2,no\n" * 4, ("people.csv", "line 1", "'a' and 'A'", "rename")),
        ("age,label\n" + "1,no\n" * 4, ("people.csv", "every row has the label 'no'")),
        (HEADER + rows(), ("people.csv", "line 1", "no column 'target'")),
    ],
    ids=["empty", "header-only", "no-header", "duplicates", "one-class", "no-label-column"],
)
def test_bad_files_are_refused_in_one_sentence(tmp_path, body, words):
    label = "target" if "'target'" in words[-1] else "label"
    message = refusal(write(tmp_path, body), label_column=label)
    for word in words:
        assert word in message, message


def test_a_word_among_numbers_is_refused_at_its_row_and_column(tmp_path):
    body = HEADER + rows(10) + "31,private,forty,yes\n" + rows(10)
    message = refusal(write(tmp_path, body))
    assert "people.csv, line 12, column 'hours_per_week'" in message
    assert "'forty'" in message and "categorical_columns=hours_per_week" in message
    # declared categorical, the same column is text: accepted
    table = load_table("csv", tmp_path / "people.csv", label_column="label",
                       categorical=["hours-per-week"])  # fmt: skip
    assert "forty" in set(pd.concat(table.frames.values())["hours_per_week"].dropna())


def test_a_missing_label_and_a_single_row_class_name_their_line(tmp_path):
    message = refusal(write(tmp_path, HEADER + rows(6) + "50,state,40,\n" + rows(6)))
    assert "line 8, column 'label'" in message and "missing" in message
    message = refusal(write(tmp_path, HEADER + rows(6) + "50,state,40,maybe\n"))
    assert "line 8, column 'label'" in message and "'maybe' has this single row" in message


def test_a_column_missing_in_every_row_is_dropped_with_a_note(tmp_path):
    body = "a,empty,label\n" + "".join(f"{i},?,{('x', 'y')[i % 2]}\n" for i in range(30))
    table = load_table("csv", write(tmp_path, body), label_column="label")
    assert "empty" not in table.frames["train"].columns
    assert any("column(s) empty hold no value" in n and "dropped" in n for n in table.notes)


def test_words_with_a_few_numbers_are_read_as_categories_with_a_note(tmp_path):
    body = "code,label\n" + "".join(f"{'z' if i != 7 else 12}{i % 3},{i % 2}\n" for i in range(30))
    table = load_table("csv", write(tmp_path, body), label_column="label")
    assert any("column 'code'" in note and "line 9" in note for note in table.notes)


def test_a_file_that_is_not_a_csv_or_parquet_is_one_sentence(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"not parquet at all")
    assert "bad.parquet cannot be read as Parquet" in refusal(path, "parquet")
    path = tmp_path / "latin.csv"
    path.write_bytes(HEADER.encode() + "20,caf\xe9,40,no\n".encode("latin-1"))
    assert "latin.csv cannot be read as a UTF-8 CSV" in refusal(path)
