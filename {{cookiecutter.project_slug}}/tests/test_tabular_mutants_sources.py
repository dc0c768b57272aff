"""What `load_table` hands on, word for word and field by field (the tables group of
`make mutate`): a small stand-in for the census files (same format, 30 lines instead of 48,842, so
a mutant of the census branch is caught in milliseconds), the file names, units, seeds and
fingerprints of a table, and every refusal and note in full."""

from __future__ import annotations

import gzip
import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.tasks.tabular import scores, sources
from {{ cookiecutter.package_name }}.tasks.tabular.schema import fingerprint
from {{ cookiecutter.package_name }}.tasks.tabular.screens import date_columns, drop_unlabelled
from {{ cookiecutter.package_name }}.tasks.tabular.sources import load_table

WORK = ("Private", "State-gov", "Self-emp-not-inc")
CLASSES = ["<=50K", ">50K"]


def census_line(i: int, label: str) -> str:
    cells = [
        str(20 + i), WORK[i % 3], str(77516 + 37 * i), ("Bachelors", "HS-grad")[i % 2],
        str(9 + i % 5), "Never-married", "Adm-clerical", "Not-in-family", "White",
        ("Male", "Female")[i % 2 == i % 3], str(100 * (i % 4)), "0", str(30 + i % 7),
        "United-States", label,
    ]  # fmt: skip
    return ", ".join(cells) + "\n"


@pytest.fixture
def census(tmp_path, monkeypatch):
    """The census loader pointed at two small files of the vendored format: 24 train lines (12
    per class), 6 test lines whose labels end in a dot as adult.test's do."""
    folder = tmp_path / "census"
    folder.mkdir()
    train = "".join(census_line(i, CLASSES[(i // 2) % 2]) for i in range(24))
    test = "".join(census_line(i, CLASSES[i % 2] + ".") for i in range(6))
    (folder / "adult.data.gz").write_bytes(gzip.compress(train.encode()))
    (folder / "adult.test.gz").write_bytes(gzip.compress(test.encode()))
    monkeypatch.setattr(sources, "CENSUS", folder)
    return folder


def people(count: int = 40, extra: str = "") -> str:
    header = "Age,Work Class,hours-per-week,label\n"
    lines = [header]
    for i in range(count):
        work = ("private", "state", "self")[i % 3]
        lines.append(f"{20 + i},{work},{30 + i % 20},{('no', 'yes')[i % 2]}\n")
    return "".join(lines) + extra


def write(tmp_path: Path, body: str, name: str = "people.csv") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def refusal(*args, **kwargs) -> str:
    with pytest.raises(DataError) as caught:
        load_table(*args, **kwargs)
    return str(caught.value)


def test_the_default_source_is_census_with_its_own_test_file(census):
    table = load_table()
    assert (table.dataset, table.label_column, table.unit) == ("census", "income", "line")
    assert table.classes == CLASSES
    assert sorted(table.frames) == ["test", "train", "validation"]
    assert table.files == {
        "train": "census/adult.data",
        "validation": "census/adult.data",
        "test": "census/adult.test",
    }
    test = table.frames["test"]
    assert list(test.index) == [1, 2, 3, 4, 5, 6]
    assert test.loc[1, "age"] == "20" and test.loc[6, "fnlwgt"] == str(77516 + 37 * 5)
    assert test["age"].dtype == object  # cells as text, as written
    assert table.labels["test"].dtype == np.int32
    assert table.labels["test"].tolist() == [0, 1, 0, 1, 0, 1]
    rows = len(table.frames["train"]) + len(table.frames["validation"])
    assert rows == 24 and table.place("test", 3) == "census/adult.test, line 3"
    data = b"".join(
        gzip.decompress((census / f).read_bytes()) for f in ("adult.data.gz", "adult.test.gz")
    )
    assert table.fingerprint == hashlib.sha256(data).hexdigest()
    assert table.notes[0].startswith(
        "Column names were made identifiers (the export's input names): "
    )


def test_census_ignores_test_fraction_since_it_keeps_its_own_test_file(census):
    table = load_table("census", test_fraction=0.95, val_fraction=0.25)
    assert len(table.frames["validation"]) == 6 and len(table.frames["test"]) == 6
    assert len(table.frames["train"]) == 18


def test_a_census_test_label_unseen_in_training_is_refused_word_for_word(census):
    line = census_line(1, "unknown.")
    (census / "adult.test.gz").write_bytes(
        gzip.compress((census_line(0, "<=50K.") + line).encode())
    )
    assert refusal() == (
        "census/adult.test, line 2, column 'income': the label 'unknown' is not one of the "
        "training classes ['<=50K', '>50K']."
    )


def test_a_test_fraction_beyond_what_validation_leaves_is_refused_word_for_word(tmp_path):
    path = write(tmp_path, people())
    said = refusal("csv", path, label_column="label", test_fraction=0.95, val_fraction=0.1)
    assert said == (
        "test_fraction=0.95 is not allowed: use 0 (no test split) or a share below 0.9 (what "
        "val_fraction=0.1 leaves), e.g. 0.1."
    )


def test_a_csv_table_names_its_file_fingerprint_and_seeded_split(tmp_path):
    path = write(tmp_path, people())
    table = load_table("csv", path, label_column="label")
    assert (table.dataset, table.label_column, table.unit) == ("csv", "label", "line")
    assert table.files == dict.fromkeys(("train", "validation", "test"), str(path))
    assert table.fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()
    again = load_table("csv", path, label_column="label", seed=42)
    other = load_table("csv", path, label_column="label", seed=43)
    for split in ("train", "validation", "test"):
        assert list(table.frames[split].index) == list(again.frames[split].index)
    assert list(table.frames["test"].index) != list(other.frames["test"].index)


def test_no_label_column_is_refused_naming_the_empty_name(tmp_path):
    path = write(tmp_path, people())
    assert refusal("csv", path) == (
        f"{path}, line 1: no column 'c_' among ['age', 'work_class', 'hours_per_week', "
        "'label'], so name the label with label_column=."
    )


def test_label_refusals_name_the_file_line_and_column_word_for_word(tmp_path):
    path = write(tmp_path, people(extra="61,state,40,\n"), "gap.csv")
    assert refusal("csv", path, label_column="label") == (
        f"{path}, line 42, column 'label': the label is missing (1 rows lack one), so give it, "
        "remove the row or pass missing_label=drop."
    )
    path = write(tmp_path, people(extra="61,state,40,maybe\n"), "single.csv")
    assert refusal("csv", path, label_column="label") == (
        f"{path}, line 42, column 'label': the label 'maybe' has this single row, so it cannot "
        "be split stratified; add rows of it or remove the row."
    )
    path = write(tmp_path, people(extra="61,state,40,Yes\n62,self,41,Yes\n"), "case.csv")
    assert refusal("csv", path, label_column="label") == (
        f"{path}, column 'label': the labels 'Yes' and 'yes' differ only in case or a final "
        "dot, so they would be separate classes: write each class one way."
    )


def test_every_note_is_kept_and_the_renaming_comes_first(tmp_path):
    lines = ["Kind,Day,n,label\n"]
    for i in range(40):
        kind = "7" if i == 5 else ("red", "blue")[i % 2]
        lines.append(f"{kind},2024-01-{1 + i % 28:02d},{i % 3},{('no', 'yes')[i % 2]}\n")
    path = write(tmp_path, "".join(lines))
    table = load_table("csv", path, label_column="label")
    assert table.notes == [
        "Column names were made identifiers (the export's input names): 'Kind' → 'kind', "
        "'Day' → 'day'.",
        f"{path}, column 'kind': 1 numbers among 39 words (the first at line 7) are read as "
        "categories, like the words.",
        f"{path}, column 'day' holds dates (e.g. '2024-01-01' at line 2) and was dropped: as a "
        "category each new date is unseen; add its parts (year, month, day of week) as numeric "
        "columns to use it, or declare categorical_columns=day to keep it as categories.",
    ]
    assert table.renamed == {"Kind": "kind", "Day": "day"}


def test_a_date_note_quotes_the_first_date_and_its_row():
    frame = pd.DataFrame(
        {"when": [None, "2024-03-01", "2025-12-31"]}, index=[4, 5, 6], dtype=object
    )
    assert date_columns(frame, set(), "f.csv", "row") == (
        ["when"],
        [
            "f.csv, column 'when' holds dates (e.g. '2024-03-01' at row 5) and was dropped: as a "
            "category each new date is unseen; add its parts (year, month, day of week) as "
            "numeric columns to use it, or declare categorical_columns=when to keep it as "
            "categories."
        ],
    )


def test_header_refusals_count_columns_from_one_and_show_four_numbers(tmp_path):
    path = write(tmp_path, "1,2,3,4,5\n6,7,8,9,10\n", "numbers.csv")
    assert refusal("csv", path, label_column="5") == (
        f"{path}, line 1: the column names ['1', '2', '3', '4'] are numbers, so the file seems "
        "to have no header; add a first line naming the columns."
    )
    path = write(tmp_path, "A b,x,a-b,label\n1,2,3,no\n", "twice.csv")
    assert refusal("csv", path, label_column="label") == (
        f"{path}, line 1: the columns 'A b' and 'a-b' (columns 1 and 3) both name 'a_b'; "
        "rename one."
    )
    parquet = tmp_path / "twice.parquet"
    pd.DataFrame({"x y": [1, 2], "x_y": [3, 4], "label": ["a", "b"]}).to_parquet(parquet)
    assert refusal("parquet", parquet, label_column="label") == (
        f"{parquet}: the columns 'x y' and 'x_y' (columns 1 and 2) both name 'x_y'; rename one."
    )


def test_a_header_with_one_number_in_three_names_is_a_header(tmp_path):
    body = "2024,kind,label\n" + "".join(
        f"{i},{'ab'[i % 2]}{i % 3},{'ny'[i % 2]}\n" for i in range(20)
    )
    table = load_table("csv", write(tmp_path, body), label_column="label")
    assert "c_2024" in table.frames["train"].columns


def test_parquet_booleans_and_empty_texts_are_read_as_text_or_missing(tmp_path):
    path = tmp_path / "typed.parquet"
    count = 20
    pd.DataFrame(
        {
            "flag": [i % 3 == 0 for i in range(count)],
            "word": [None if i == 4 else ("a", "b", "c")[i % 3] for i in range(count)],
            "label": [("no", "yes")[i % 2] for i in range(count)],
        }
    ).to_parquet(path)
    table = load_table("parquet", path, label_column="label")
    frame = pd.concat(table.frames.values()).sort_index()
    assert frame["flag"].dtype == object and frame.loc[1, "flag"] == "True"
    assert frame.loc[2, "flag"] == "False"
    assert pd.isna(frame.loc[5, "word"]) and set(frame["word"].dropna()) == {"a", "b", "c"}


def test_the_best_threshold_divides_into_zeros_not_uninitialized_memory():
    # where precision + recall is 0 F1 is 0; without a zeroed `out`, NumPy leaves those cells
    # as whatever memory held and says so in a UserWarning
    labels = np.array([0, 1, 0, 0, 0, 0, 1])
    positive = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scores.best_threshold(labels, positive) == pytest.approx(0.8)


def test_census_notes_of_dropped_labels_are_kept_for_both_files(census):
    train = "".join(census_line(i, CLASSES[(i // 2) % 2]) for i in range(24))
    (census / "adult.data.gz").write_bytes(gzip.compress((train + census_line(3, "?")).encode()))
    test = census_line(0, "<=50K.") + census_line(1, "?") + census_line(2, ">50K.")
    (census / "adult.test.gz").write_bytes(gzip.compress(test.encode()))
    notes = load_table(missing_label="drop").notes
    assert notes[1:] == [
        "census/adult.data: 1 of 25 rows have no 'income' (the first at line 25) and were "
        "dropped (missing_label=drop).",
        "census/adult.test: 1 of 3 rows have no 'income' (the first at line 2) and were "
        "dropped (missing_label=drop).",
    ]


def test_an_empty_census_file_is_refused_by_its_name(census):
    (census / "adult.test.gz").write_bytes(gzip.compress(b""))
    assert refusal() == "census/adult.test is empty: give a CSV with a header line and rows."


def test_dropping_unlabelled_rows_of_a_frame_without_the_label_drops_nothing():
    frame = pd.DataFrame({"x": ["a", None]}, index=[2, 3])
    kept, notes = drop_unlabelled(frame, "y", "f.csv", "line")
    assert kept is frame and notes == []


def test_the_schema_fingerprint_is_the_sha256_of_its_canonical_json():
    schema = {"b": ["é", 1.5], "a": {"z": None, "y": True}}
    canonical = '{"a":{"y":true,"z":null},"b":["é",1.5]}'
    assert fingerprint(schema) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
