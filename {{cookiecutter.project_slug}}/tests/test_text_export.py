"""The text export: strings in, names out, the vocabulary inside, and an ids signature for ONNX."""

from __future__ import annotations

import shutil
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.artifacts import StaleInputError
from {{ cookiecutter.package_name }}.tasks.text.export import (
    IDS_SIGNATURE,
    SIGNATURE,
    export_text_model,
    ids_spec,
    parity_ids,
    predict_texts,
    rest_payload,
)
from {{ cookiecutter.package_name }}.tasks.text.models import build_model
from {{ cookiecutter.package_name }}.tasks.text.vocab import (
    build_vocabulary,
    save_vocabulary,
    token_ids,
)

CLASSES = ["card", "transfer", "pin"]
TRAIN = {
    0: ["my card has not arrived", "card delivery is late", "where is my new card"],
    1: ["send money to a friend", "transfer to my bank account", "the transfer failed"],
    2: ["my pin is blocked", "unblock my pin please", "forgot the pin code"],
}
PROBES = ["where is my card", "transfer money please", "PIN blocked!!", "", "zebra"]


@pytest.fixture(scope="module", params=["bag_of_ngrams", "transformer"])
def exported(request, tmp_path_factory):
    """A small model fitted on the toy intents, its vocabulary file and its export."""
    folder = tmp_path_factory.mktemp(request.param)
    texts = [t for y in sorted(TRAIN) for t in TRAIN[y]]
    labels = np.repeat(sorted(TRAIN), 3)
    layer = build_vocabulary(texts, vocab_size=64)
    vocabulary = folder / "vocabulary.txt"
    fingerprint = save_vocabulary(layer, vocabulary)
    keras.utils.set_random_seed(0)
    knobs = {"width": 16, "heads": 2} if request.param == "transformer" else {"width": 16}
    model = build_model(request.param, 64, 3, 16, **knobs)
    model.compile(keras.optimizers.Adam(2e-2), "sparse_categorical_crossentropy")
    ids = token_ids(layer, tf.constant(texts), 16).to_tensor(shape=[None, 16])
    model.fit(ids, labels, epochs=30, verbose=0)
    export_dir = export_text_model(
        model, vocabulary, CLASSES, 16, folder / "export" / "1", fingerprint
    )
    return model, layer, vocabulary, export_dir


def test_strings_in_names_and_probabilities_out(exported):
    """serving_default takes a batch of raw strings (even empty ones) and names their intents."""
    _, _, _, export_dir = exported
    result = predict_texts(export_dir, PROBES)
    assert result["probabilities"].shape == (5, 3)
    np.testing.assert_allclose(result["probabilities"].sum(axis=1), 1, rtol=1e-5)
    assert result["class_names"][:3] == CLASSES
    assert [CLASSES[i] for i in result["class_ids"]] == result["class_names"]


def test_reloaded_export_gives_the_models_top_class(exported):
    """After a reload, the same top class (and probabilities) as the model on the pipeline's ids."""
    model, layer, _, export_dir = exported
    direct = model(token_ids(layer, tf.constant(PROBES), 16).to_tensor(), training=False)
    result = predict_texts(export_dir, PROBES)
    assert result["class_ids"].tolist() == np.argmax(direct, axis=1).tolist()
    np.testing.assert_allclose(result["probabilities"], np.asarray(direct), atol=1e-5)


def test_signatures_are_strings_and_int64_ids(exported):
    """What saved_model_cli shows: tf.string [None] for serving_default, int64 [None, None]."""
    loaded = tf.saved_model.load(str(exported[3]))
    text_spec = loaded.signatures[SIGNATURE].structured_input_signature[1]
    ids_spec = loaded.signatures[IDS_SIGNATURE].structured_input_signature[1]
    assert {k: (v.dtype, v.shape.as_list()) for k, v in text_spec.items()} == {
        "text": (tf.string, [None])
    }
    assert {k: (v.dtype, v.shape.as_list()) for k, v in ids_spec.items()} == {
        "token_ids": (tf.int64, [None, None])
    }
    outputs = set(loaded.signatures[SIGNATURE].structured_outputs)
    assert outputs == {"probabilities", "class_ids", "class_names", "oov_share"}
    # the ids signature (ONNX and the compiled backends) keeps the three: no string op enters a
    # converted graph
    ids_outputs = set(loaded.signatures[IDS_SIGNATURE].structured_outputs)
    assert ids_outputs == {"probabilities", "class_ids", "class_names"}


def test_each_answer_says_the_share_of_its_words_outside_the_vocabulary(exported):
    """Issue 42 §3.7: an empty text, emoji or Cyrillic got a class at p = 0.02 with no sign that
    the model knew none of it. oov_share: 0 for known words, 1 for none known, and between."""
    _, _, _, export_dir = exported
    texts = ["where is my card", "", "🙂🙂", "Где моя карта?", "where is my zebra", "PIN!!"]
    shares = predict_texts(export_dir, texts)["oov_share"]
    assert shares.dtype == np.float32
    assert shares.tolist() == [0.0, 1.0, 1.0, 1.0, 0.25, 0.0]


def test_ids_signature_matches_serving_default_on_parity_ids(exported):
    """ONNX's input (fixed-width ids) gives serving_default's probabilities."""
    _, _, vocabulary, export_dir = exported
    loaded = tf.saved_model.load(str(export_dir))
    ids = parity_ids(vocabulary, PROBES, 16)
    assert ids.shape == (5, 16) and ids.dtype == np.int64
    by_ids = loaded.signatures[IDS_SIGNATURE](token_ids=tf.constant(ids))["probabilities"]
    np.testing.assert_allclose(
        by_ids.numpy(), predict_texts(export_dir, PROBES)["probabilities"], atol=1e-5
    )


def test_vocabulary_travels_as_an_asset(exported, tmp_path):
    """The export holds the vocabulary file, and a copy works with the original file gone."""
    _, _, vocabulary, export_dir = exported
    assets = list((Path(export_dir) / "assets").glob("*"))
    assert any(path.read_bytes() == vocabulary.read_bytes() for path in assets), assets
    before = predict_texts(export_dir, PROBES)["probabilities"]
    copy = tmp_path / "copy"
    shutil.copytree(export_dir, copy)
    saved = vocabulary.read_bytes()
    vocabulary.unlink()
    try:
        np.testing.assert_allclose(predict_texts(copy, PROBES)["probabilities"], before)
    finally:
        vocabulary.write_bytes(saved)


def test_a_vocabulary_that_is_not_the_fingerprinted_one_is_refused(exported, tmp_path):
    """Exporting with another vocabulary than the model's names the data step."""
    model, layer, vocabulary, _ = exported
    other = tmp_path / "vocabulary.txt"
    other.write_text(vocabulary.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    with pytest.raises(StaleInputError, match="01_data"):
        export_text_model(model, other, CLASSES, 16, tmp_path / "e", fingerprint="0" * 64)


@pytest.mark.slow
def test_the_ids_model_converts_to_onnx_with_the_same_top_class(exported, tmp_path):
    """tf2onnx takes the model as the ids signature gives it (no string op), and ONNX Runtime
    agrees with the SavedModel on every probe."""
    ort = pytest.importorskip("onnxruntime")
    model, _, vocabulary, export_dir = exported
    path = tmp_path / "model.onnx"
    model.export(str(path), format="onnx", input_signature=[ids_spec()], verbose=False)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = parity_ids(vocabulary, PROBES, 16)
    (probabilities,) = session.run(None, {session.get_inputs()[0].name: ids})
    expected = predict_texts(export_dir, PROBES)
    assert probabilities.argmax(axis=1).tolist() == expected["class_ids"].tolist()
    np.testing.assert_allclose(probabilities, expected["probabilities"], atol=1e-4)


def test_rest_payload_sends_plain_strings():
    """TF Serving's REST body: strings as instances, for serving_default."""
    assert rest_payload(["hi", "é"]) == {
        "signature_name": "serving_default",
        "instances": ["hi", "é"],
    }
{%- if cookiecutter.include_tensorrt %}


def test_a_text_engine_is_built_per_length_bucket_and_not_in_int8() -> None:
    """The engine runs the token ids with a profile per length bucket (the pipeline's buckets);
    int8 is refused in one sentence before packages or a GPU are looked for, fp32 goes on to
    them; TF-TRT, which would convert the string signature, says so."""
    from {{ cookiecutter.package_name }}.optimize.tensorrt_engine import tensorrt_available
    from {{ cookiecutter.package_name }}.optimize.tf_trt import tf_trt_available
    from {{ cookiecutter.package_name }}.tasks.text.task import length_ranges

    assert length_ranges({"max_tokens": 64}) == ((1, 8), (9, 16), (17, 32), (33, 64))
    assert length_ranges({"max_tokens": 8}) == ((1, 8),)
    available, reason = tensorrt_available("int8")
    assert not available and reason.startswith("int8 of a token-ids engine is not built")
    available, reason = tensorrt_available("fp32")
    assert not available and reason.startswith(("the ", "no GPU"))  # a package, or the GPU
    available, reason = tf_trt_available("fp32")
    assert not available and "serving_default, which takes strings" in reason
{%- endif %}
