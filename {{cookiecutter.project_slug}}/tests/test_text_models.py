"""The text models: token ids in, float32 probabilities out, padding ignored, saved whole."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.tasks.text.models import (
    ModelError,
    build_bag_of_ngrams,
    build_model,
    build_transformer,
)
from {{ cookiecutter.package_name }}.tasks.text.pipeline import from_examples, text_dataset
from {{ cookiecutter.package_name }}.tasks.text.vocab import build_vocabulary

VOCAB, CLASSES, MAX_TOKENS = 64, 5, 16
SMALL = {
    "bag_of_ngrams": {"width": 16, "bigram_buckets": 64},
    "transformer": {"width": 16, "heads": 2, "blocks": 2},
}


def ids(rows: list[list[int]], length: int) -> np.ndarray:
    return np.array([row + [0] * (length - len(row)) for row in rows], dtype="int64")


ROWS = [[5, 9, 2, 7], [3], [12, 12, 40, 8, 9, 10, 11, 2]]


@pytest.fixture(params=sorted(SMALL))
def model(request):
    keras.utils.set_random_seed(0)
    return build_model(request.param, VOCAB, CLASSES, MAX_TOKENS, **SMALL[request.param])


def test_probabilities_for_every_row(model):
    """[batch, length] ids give [batch, classes] probabilities that sum to 1."""
    probs = np.asarray(model(ids(ROWS, 8), training=False))
    assert probs.shape == (3, CLASSES)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)


def test_padding_changes_nothing(model):
    """A text padded to 8 or to 16 gets the same probabilities: padding is masked everywhere."""
    short = np.asarray(model(ids(ROWS, 8), training=False))
    long = np.asarray(model(ids(ROWS, 16), training=False))
    np.testing.assert_allclose(short, long, atol=1e-5)


def test_word_order_or_content_changes_the_output(model):
    """The ids reach the output (a model ignoring its input would pass the padding test)."""
    a = np.asarray(model(ids([[5, 9, 2, 7]], 8), training=False))
    b = np.asarray(model(ids([[40, 41, 42, 43]], 8), training=False))
    assert not np.allclose(a, b, atol=1e-4)


def test_mixed_precision_keeps_a_float32_softmax():
    """Under mixed_bfloat16 the layers compute in bfloat16, the probabilities stay float32."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        for name, knobs in SMALL.items():
            built = build_model(name, VOCAB, CLASSES, MAX_TOKENS, **knobs)
            assert built.get_layer("words").compute_dtype == "bfloat16"
            out = built(ids(ROWS, 8), training=False)
            assert keras.backend.standardize_dtype(out.dtype) == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_saved_and_loaded_model_gives_the_same_probabilities(model, tmp_path):
    """The custom layers are registered: a .keras file loads without custom_objects."""
    path = tmp_path / "model.keras"
    model.save(path)
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(
        np.asarray(again(ids(ROWS, 8), training=False)),
        np.asarray(model(ids(ROWS, 8), training=False)),
        atol=1e-6,
    )


def test_a_few_epochs_learn_a_separable_toy_task():
    """Each builder fits: class = which of two word groups a text uses."""
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(2 + 30 * c, 32 + 30 * c, 6)) for c in (0, 1) for _ in range(64)]
    x, y = ids(rows, 8), np.repeat([0, 1], 64)
    for name, knobs in SMALL.items():
        keras.utils.set_random_seed(1)
        built = build_model(name, VOCAB, 2, MAX_TOKENS, **knobs)
        built.compile(
            keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy", metrics=["accuracy"]
        )
        built.fit(x, y, epochs=15, batch_size=16, verbose=0)
        assert built.evaluate(x, y, verbose=0)[1] > 0.95, name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_trains_under_mixed_bfloat16_with_xla_on_bucketed_batches(name):
    """The point of ids in, strings out: XLA compiles the model on the pipeline's few shapes,
    and a mixed-precision fit keeps a finite loss."""
    texts = [
        ("card " * (i % 20 + 1)) if i % 2 else ("transfer money " * (i % 7 + 1)) for i in range(96)
    ]
    labels = [i % 2 for i in range(96)]
    layer = build_vocabulary(texts, vocab_size=16)
    data = text_dataset(
        from_examples(texts, labels), layer, max_tokens=MAX_TOKENS, batch_size=16, shuffle_seed=0
    )
    assert len({int(ids.shape[1]) for ids, _ in data}) > 1  # several shapes reach the model
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        keras.utils.set_random_seed(0)
        model = build_model(name, 16, 2, MAX_TOKENS, **SMALL[name])
        model.compile(
            keras.optimizers.AdamW(1e-2),
            keras.losses.SparseCategoricalCrossentropy(),
            metrics=["accuracy"],
            jit_compile=True,
        )
        history = model.fit(data, epochs=4, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["accuracy"][-1] > 0.9


def test_the_transformer_in_fp16_onnx_answers_as_in_keras(tmp_path):
    """Exported and converted as optimize does (tf2onnx, then ONNX Runtime's float16 converter):
    every probability finite and near Keras's, on rows of several lengths. A slice bounded by
    tf2onnx's +-1e9 clamp became +-inf in float16, and the position table came out empty."""
    ort = pytest.importorskip("onnxruntime")
    from {{ cookiecutter.package_name }}.optimize.onnx_backend import float16_onnx
    from {{ cookiecutter.package_name }}.tasks.text.export import ids_spec

    keras.utils.set_random_seed(0)
    model = build_model("transformer", VOCAB, CLASSES, MAX_TOKENS, **SMALL["transformer"])
    source = tmp_path / "model_fp32.onnx"
    model.export(str(source), format="onnx", input_signature=[ids_spec()], verbose=False)
    target = float16_onnx(source, tmp_path / "model_fp16.onnx")
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    for length in (8, MAX_TOKENS):
        batch = ids(ROWS, length)
        (probabilities,) = session.run(None, {session.get_inputs()[0].name: batch})
        assert np.isfinite(probabilities).all(), probabilities
        np.testing.assert_allclose(probabilities, model.predict(batch, verbose=0), atol=1e-2)


def test_the_bag_reads_its_classes_through_a_hidden_relu_layer():
    """The bag's default head (issue 44): 512 ReLU units between the mean and the softmax, which
    lifted BANKING77 test accuracy above the TF-IDF baseline; hidden=0 is the old linear head."""
    hidden = build_bag_of_ngrams(VOCAB, CLASSES).get_layer("hidden")
    assert (hidden.units, hidden.activation.__name__) == (512, "relu")
    linear = build_bag_of_ngrams(VOCAB, CLASSES, hidden=0)
    assert "hidden" not in [layer.name for layer in linear.layers]


@pytest.mark.parametrize(
    "build",
    [
        lambda: build_bag_of_ngrams(60, 3),
        lambda: build_bag_of_ngrams(64, 3, width=50),
        lambda: build_bag_of_ngrams(64, 3, hidden=50),
        lambda: build_transformer(64, 3, 16, width=48, heads=5),
        lambda: build_transformer(64, 3, 16, blocks=6),
        lambda: build_model("lstm", 64, 3, 16),
    ],
    ids=["vocab-60", "width-50", "hidden-50", "heads-5", "blocks-6", "unknown"],
)
def test_bad_sizes_are_refused_in_one_sentence(build):
    """Sizes off the multiples of 8, heads that do not divide, and unknown names."""
    with pytest.raises(ModelError) as caught:
        build()
    assert_one_sentence(str(caught.value))


def test_weights_of_a_run_with_another_vocabulary_are_refused(tmp_path):
    """An earlier text run's model.keras with another vocabulary: its embedding rows would mean
    other words, so training refuses it in one sentence; the same vocabulary is taken."""
    from {{ cookiecutter.package_name }}.train.errors import TrainError
    from {{ cookiecutter.package_name }}.train.finetune import check_source

    meta = {"vocabulary_sha256": "a" * 64, "task": "text_classification"}
    earlier = tmp_path / "earlier"
    (earlier / "data").mkdir(parents=True)
    weights = str(earlier / "model.keras")
    (earlier / "data" / "meta.json").write_text(json.dumps({**meta, "vocabulary_sha256": "b"}))
    with pytest.raises(TrainError, match="vocabulary_sha256 in .* is not this run's") as refused:
        check_source(weights, meta)
    assert_one_sentence(str(refused.value))
    (earlier / "data" / "meta.json").write_text(json.dumps(meta))
    check_source(weights, meta)
    check_source(str(tmp_path / "loose.keras"), meta)  # outside a run folder: nothing to compare
