"""The table pipeline: the FeatureSpace fitted on train, raw columns in, one float32 matrix out."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf
from tables import SCHEMA, make_table_run

from {{ cookiecutter.package_name }}.data.base import DataError
from {{ cookiecutter.package_name }}.tasks.tabular import dataset, features


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_table_run(tmp_path_factory.mktemp("table"))


def test_the_layout_is_numbers_then_buckets_then_indices(run):
    meta = dataset.read_tabular_meta(run)
    kinds = [slot["kind"] for slot in meta["layout"]]
    assert kinds == [
        "numeric",
        "numeric",
        "bucket",
        "bucket",
        "categorical",
        "categorical",
        "cross",
    ]
    sizes = {slot["name"]: slot["size"] for slot in meta["layout"]}
    # city keeps its 5 values seen twice or more, plus index 0 for the rest ("rare", unseen)
    assert sizes["city"] == 6 and sizes["city_X_device"] == 32


def test_an_unseen_category_and_a_missing_number_are_encoded_not_refused(run):
    meta = dataset.read_tabular_meta(run)
    space = dataset.feature_space(run, meta)
    columns = {
        "amount": np.array([0.0, 0.0], np.float32),
        "age": np.array([np.nan, 40.0], np.float32),
        "city": np.array(["atlantis", "north"]),
        "device": np.array(["web", ""]),
    }
    encoded = features.encode(space, columns, SCHEMA).numpy()
    names = [slot["name"] for slot in meta["layout"]]
    age, city = names.index("age"), names.index("city")
    assert encoded[0, age] == pytest.approx(0.0)  # NaN → the training mean → 0 once normalized
    assert encoded[0, age] == pytest.approx(encoded[1, age])  # 40 is the mean
    assert encoded[0, city] == 0  # the out-of-vocabulary bucket
    assert encoded[1, city] > 0
    assert np.isfinite(encoded).all()


def test_batches_are_the_matrix_and_int32_labels_of_every_row(run):
    meta = dataset.read_tabular_meta(run)
    data = dataset.make_dataset(run, "validation", 64, training=False)
    shapes, labels = set(), []
    for inputs, batch_labels in data:
        assert inputs.dtype == tf.float32 and batch_labels.dtype == tf.int32
        shapes.add(inputs.shape[1])
        labels.append(batch_labels.numpy())
    assert shapes == {len(meta["layout"])}
    assert len(np.concatenate(labels)) == meta["splits"]["validation"]["count"]


def test_evaluation_keeps_the_order_model_examples_give(run):
    inputs, labels = dataset.model_examples(run, "test", 200)
    batched = dataset.make_dataset(run, "test", 32, training=False)
    seen = np.concatenate([x.numpy() for x, _ in batched])
    np.testing.assert_allclose(seen, inputs, rtol=1e-6)
    assert np.array_equal(np.concatenate([y.numpy() for _, y in batched]), labels)


def test_each_input_pipeline_reads_its_own_rows(run):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    data = dataset.make_dataset(run, "test", 32, training=False, input_context=context)
    rows = sum(int(x.shape[0]) for x, _ in data)
    assert rows == 100  # every second row of 200


def test_raw_examples_are_named_columns_that_slice_and_save(run, tmp_path):
    rows, labels = dataset.raw_examples(run, "test", 10)
    assert rows.dtype.names == ("amount", "age", "city", "device")
    assert rows[2:5].shape == (3,) and labels.dtype == np.int32
    np.save(tmp_path / "rows.npy", rows)
    again = np.load(tmp_path / "rows.npy")
    assert again.dtype == rows.dtype and (again["city"] == rows["city"]).all()


def test_a_feature_space_that_is_not_the_one_meta_names_is_refused(run, tmp_path):
    meta = json.loads((run / "data" / "meta.json").read_text())
    meta["feature_space_sha256"] = "0" * 64
    with pytest.raises(DataError, match="not the FeatureSpace meta.json names"):
        dataset.feature_space(run, meta)


def test_another_tasks_meta_is_refused_in_one_sentence(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_text(json.dumps({"task": "text_classification"}))
    with pytest.raises(DataError, match="not the table meta.json 01_data writes"):
        dataset.read_tabular_meta(tmp_path)
