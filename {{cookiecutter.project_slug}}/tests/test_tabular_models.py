"""The table models: Wide & Deep and DCN-v2 over the encoded matrix, float32 out, saved whole."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
from tables import make_table_run

from {{ cookiecutter.package_name }}.tasks.tabular import dataset, models, task

BOTH = ["wide_deep", "dcn_v2", "tabm"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_table_run(tmp_path_factory.mktemp("table"))


@pytest.mark.parametrize("name", BOTH)
def test_each_model_learns_the_table_well_above_chance(run, name):
    keras.utils.set_random_seed(0)
    meta = dataset.read_tabular_meta(run)
    model = task.build_model(name, meta)
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    model.fit(dataset.make_dataset(run, "train", 64), epochs=8, verbose=0)
    inputs, labels = dataset.model_examples(run, "test", 200)
    accuracy = float(np.mean(model.predict(inputs, verbose=0).argmax(-1) == labels))
    majority = max(np.mean(labels), 1 - np.mean(labels))
    assert accuracy > majority + 0.1, (accuracy, majority)


@pytest.mark.parametrize("name", BOTH)
def test_mixed_precision_keeps_float32_probabilities_and_widths_of_eight(run, name):
    meta = dataset.read_tabular_meta(run)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = task.build_model(name, meta)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert keras.backend.standardize_dtype(model.outputs[0].dtype) == "float32"
    assert model.get_layer("embeddings").output_dim % 8 == 0
    inputs, _ = dataset.model_examples(run, "test", 4)
    probabilities = model.predict(inputs, verbose=0)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-3)


@pytest.mark.parametrize("name", BOTH)
def test_a_saved_model_file_loads_and_predicts_the_same(run, name, tmp_path):
    meta = dataset.read_tabular_meta(run)
    model = task.build_model(name, meta)
    inputs, _ = dataset.model_examples(run, "test", 16)
    model.save(tmp_path / "model.keras")
    again = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(again.predict(inputs, verbose=0), model.predict(inputs, verbose=0))


@pytest.mark.parametrize("name", ["dcn_v2", "tabm"])
def test_a_new_head_keeps_the_layout(run, name):
    meta = dataset.read_tabular_meta(run)
    model = task.build_model(name, meta)
    again = task.rebuilt(model, 5)
    assert again.name == name and again.outputs[0].shape[-1] == 5
    assert again.get_layer("columns").sizes == model.get_layer("columns").sizes
    body = [w.shape for w in model.weights if "logits" not in w.path]
    assert [w.shape for w in again.weights if "logits" not in w.path] == body


def test_a_table_of_numbers_only_builds_without_embeddings():
    slots = [{"name": f"x{i}", "kind": "numeric", "size": None} for i in range(3)]
    for name in BOTH:
        model = models.build_model(name, slots, 2)
        assert model.predict(np.zeros((2, 3), np.float32), verbose=0).shape == (2, 2)


@pytest.mark.parametrize("name", BOTH)
def test_a_table_of_categories_only_trains_with_no_layer_over_zero_numbers(name):
    slots = [{"name": c, "kind": "categorical", "size": 6} for c in "ab"]
    model = models.build_model(name, slots, 3)
    # A Dense over the zero numeric columns aborts the process in oneDNN (CPU) at the first call.
    dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    widths = {layer.name: layer.kernel.shape[0] for layer in dense}
    assert all(widths.values()), widths
    model.compile("adam", "sparse_categorical_crossentropy")
    rows = np.array([[1, 2], [3, 0], [5, 4], [0, 1]], np.float32)
    model.fit(rows, np.array([0, 1, 2, 1]), epochs=1, verbose=0)
    assert model.predict(rows, verbose=0).shape == (4, 3)


@pytest.mark.parametrize(
    ("knobs", "sentence"),
    [
        ({"width": 100}, "width=100 is not allowed for wide_deep: use a multiple of 8"),
        ({"dropout": 1.0}, "dropout=1.0 is not allowed: use 0 to below 1"),
        ({"weights": "imagenet"}, "weights='imagenet' is not allowed for tables"),
    ],
)
def test_a_bad_knob_is_one_sentence(run, knobs, sentence):
    meta = dataset.read_tabular_meta(run)
    with pytest.raises(models.ModelError, match=sentence):
        task.build_model("wide_deep", meta, **knobs)


def test_an_unknown_model_names_the_three():
    with pytest.raises(models.ModelError, match="use tabm .*, wide_deep .* or dcn_v2"):
        task.check_model("xgboost", {})


def test_weights_of_a_run_with_another_schema_are_refused(run, tmp_path):
    from helpers import assert_one_sentence

    from {{ cookiecutter.package_name }}.train.errors import TrainError
    from {{ cookiecutter.package_name }}.train.finetune import check_source

    meta = dataset.read_tabular_meta(run)
    earlier = tmp_path / "earlier"
    (earlier / "data").mkdir(parents=True)
    weights = str(earlier / "model.keras")
    (earlier / "data" / "meta.json").write_text(json.dumps({**meta, "fingerprint": "other"}))
    with pytest.raises(TrainError, match="fingerprint in .* is not this run's") as refused:
        check_source(weights, meta)
    assert_one_sentence(str(refused.value))
    (earlier / "data" / "meta.json").write_text(json.dumps(meta))
    check_source(weights, meta)  # the same data: taken


@pytest.mark.parametrize("name", BOTH)
def test_the_head_is_a_dense_logits_layer_that_a_frozen_phase_trains(run, name):
    from {{ cookiecutter.package_name }}.train import finetune

    model = task.build_model(name, dataset.read_tabular_meta(run))
    assert isinstance(model.get_layer("logits"), keras.layers.Dense)
    finetune.set_phase(model, finetune.FROZEN, "all")
    trainable = {w.path.split("/")[0] for w in model.trainable_weights}
    assert trainable == {"logits"}, trainable


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_category_indices_stay_exact_under_mixed_precision(policy):
    # bfloat16 holds whole numbers exactly up to 256, float16 up to 2,048: 3001 would come out
    # 3008 / 3000 had Keras autocast the matrix before the int cast.
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = models.Columns(1, [4000, 8])
        _, ids = layer(np.array([[0.5, 3001.0, 7.0]], np.float32))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert np.asarray(ids).tolist() == [[3001, 4007]]


def test_heavy_tailed_columns_give_finite_probabilities_under_float16():
    # z = 300 (a standardized outlier of a heavy-tailed column): squared by the cross layers,
    # past float16's 65,504 unless they compute in float32.
    keras.utils.set_random_seed(0)
    slots = [{"name": f"x{i}", "kind": "numeric", "size": None} for i in range(8)]
    slots.append({"name": "c", "kind": "categorical", "size": 5})
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = models.build_model("dcn_v2", slots, 2)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    rows = np.zeros((4, 9), np.float32)
    rows[:, :8] = [[300.0], [-300.0], [150.0], [1.0]]
    probabilities = model.predict(rows, verbose=0)
    assert np.isfinite(probabilities).all(), probabilities
