"""The schema: kinds and statistics from the training split only, the overrides, the vocabulary
with its out-of-vocabulary bucket, hashing, crosses (auto on census) and the fingerprint."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.tasks.tabular.columns import SchemaError
from {{ cookiecutter.package_name }}.tasks.tabular.schema import fingerprint, infer_schema, kinds
from {{ cookiecutter.package_name }}.tasks.tabular.sources import load_table


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": ["20", "30", None, "50"],
            "city": ["paris", "paris", "rome", None],
            "code": ["1", "2", "2", "1"],
        },
        index=[2, 3, 4, 5],
        dtype=object,
    )


def test_kinds_and_statistics_come_from_the_frame_given():
    schema, notes = infer_schema(frame(), crosses="none")
    assert kinds(schema) == {"age": "numeric", "code": "numeric", "city": "categorical"}
    age = schema["numeric"][0]
    assert (age["mean"], age["min"], age["max"], age["missing_share"]) == (
        pytest.approx(100 / 3), 20.0, 50.0, 0.25,
    )  # fmt: skip
    assert age["std"] == pytest.approx(np.std([20, 30, 50]))
    city = schema["categorical"][0]
    assert (city["distinct"], city["vocabulary_size"], city["missing_share"]) == (2, 1, 0.25)
    assert city["vocabulary"] == ["paris"] and city["top"] == ["paris", "rome"]
    assert any(
        "'city'" in note and "'rome'" in note and "out-of-vocabulary" in note for note in notes
    )


def test_overrides_declare_a_kind_and_a_bad_one_is_one_sentence():
    schema, _ = infer_schema(frame(), categorical=["code"], crosses="none")
    assert kinds(schema)["code"] == "categorical"
    assert schema["categorical"][1]["vocabulary"] == ["1", "2"]
    with pytest.raises(SchemaError) as caught:
        infer_schema(frame(), numeric=["city"], place=lambda row: f"f.csv, line {row}")
    assert "f.csv, line 2, column 'city'" in str(caught.value)
    assert_one_sentence(str(caught.value))
    with pytest.raises(SchemaError) as caught:
        infer_schema(frame(), numeric=["nope"])
    assert "'nope'" in str(caught.value)


def test_many_distinct_values_are_hashed_and_min_count_sets_the_vocabulary():
    data = pd.DataFrame({"id": [f"u{i}" for i in range(50)] + ["u1"] * 5}, dtype=object)
    schema, notes = infer_schema(data, hash_above=20, crosses="none")
    entry = schema["categorical"][0]
    assert entry["hashed"] and entry["bins"] == 64 and entry["vocabulary"] == []
    schema, _ = infer_schema(data, hash_above=100, min_count=1, crosses="none")
    assert schema["categorical"][0]["vocabulary_size"] == 50


def test_census_schema_is_from_train_only_with_auto_crosses():
    table = load_table("census", seed=0)
    schema, _ = infer_schema(table.frames["train"])
    assert [e["name"] for e in schema["numeric"]] == [
        "age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week",
    ]  # fmt: skip
    assert len(schema["categorical"]) == 8
    pairs = {frozenset(pair) for pair in schema["crosses"]}
    assert {
        frozenset({"education", "occupation"}),
        frozenset({"native_country", "occupation"}),
    } <= pairs
    assert len(pairs) == 6 and schema["crossing_dim"] == 256
    ages = pd.to_numeric(table.frames["train"]["age"])
    assert schema["numeric"][0]["mean"] == pytest.approx(ages.mean())
    everything = pd.to_numeric(pd.concat(table.frames.values())["age"])
    assert schema["numeric"][0]["mean"] != pytest.approx(everything.mean(), abs=1e-9)
    other, _ = infer_schema(table.frames["train"].iloc[:1000])
    assert fingerprint(other) != fingerprint(schema) == fingerprint(dict(schema))


@pytest.mark.parametrize("crosses", ["a*b*c", "a*a", "a,b", "*b"])
def test_a_malformed_cross_is_one_sentence(crosses):
    with pytest.raises(SchemaError) as caught:
        infer_schema(frame(), crosses=crosses)
    assert_one_sentence(str(caught.value))


def test_named_crosses_must_be_categorical_columns():
    schema, _ = infer_schema(frame(), categorical=["code"], crosses="City*code")
    assert schema["crosses"] == [["city", "code"]]
    with pytest.raises(SchemaError, match="'age', which is not a categorical column"):
        infer_schema(frame(), crosses="city*age")
