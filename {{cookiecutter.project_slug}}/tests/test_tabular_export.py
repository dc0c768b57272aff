"""The table export: raw named columns in (missing and unseen allowed), the FeatureSpace inside,
a `features` signature for ONNX, TF Serving's JSON rows, and bad rows refused in one sentence."""

from __future__ import annotations

{% if cookiecutter.include_serving %}import json

{% endif %}import numpy as np
import pytest
import tensorflow as tf
from tables import make_table_run

from {{ cookiecutter.package_name }}.artifacts import StepError
{%- if cookiecutter.include_serving %}
from {{ cookiecutter.package_name }}.export.rest import answer_rest
{%- endif %}
from {{ cookiecutter.package_name }}.tasks.outputs import feed
from {{ cookiecutter.package_name }}.tasks.tabular import dataset, export, task


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    run = make_table_run(tmp_path_factory.mktemp("table"))
    meta = dataset.read_tabular_meta(run)
    model = task.build_model("wide_deep", meta)
    folder = run / "export"
    task.build_archive(model, meta, run).write_out(str(folder), verbose=False)
    return run, model, tf.saved_model.load(str(folder))


def test_serving_default_takes_one_named_input_per_raw_column(exported):
    _, _, loaded = exported
    specs = loaded.signatures["serving_default"].structured_input_signature[1]
    assert {name: spec.dtype for name, spec in specs.items()} == {
        "amount": tf.float32,
        "age": tf.float32,
        "city": tf.string,
        "device": tf.string,
    }


def test_raw_rows_give_what_the_model_gives_on_their_encoding(exported):
    run, model, loaded = exported
    rows, _ = dataset.raw_examples(run, "test", 200)
    signature = loaded.signatures["serving_default"]
    served = signature(**feed(signature, rows))
    inputs, _ = dataset.model_examples(run, "test", 200)
    np.testing.assert_allclose(
        served["probabilities"].numpy(), model.predict(inputs, verbose=0), atol=1e-5
    )
    names = np.array(["no", "yes"])[served["class_ids"].numpy()]
    assert (served["class_names"].numpy().astype(str) == names).all()
    features = loaded.signatures["features"](features=tf.constant(inputs))
    np.testing.assert_allclose(features["probabilities"], served["probabilities"], atol=1e-6)


def test_a_missing_value_and_an_unseen_category_get_probabilities(exported):
    _, _, loaded = exported
    signature = loaded.signatures["serving_default"]
    out = signature(
        amount=tf.constant([0.5, np.nan]),
        age=tf.constant([np.nan, 30.0]),
        city=tf.constant(["atlantis", ""]),
        device=tf.constant(["web", "toaster"]),
    )
    probabilities = out["probabilities"].numpy()
    assert probabilities.shape == (2, 2) and np.isfinite(probabilities).all()


def test_each_answer_names_the_columns_unlike_the_training_split(exported):
    """Issue 42 §3.7: capital_gain=1e9 gave p = 1.0 and an all-empty row a class, with no sign
    either was unlike the training rows. out_of_range names the columns beyond train's [min, max]
    or with a category the vocabulary lacks; missing_share is the share of columns missing."""
    _, _, loaded = exported
    answer = loaded.signatures["serving_default"](
        amount=tf.constant([0.5, 1e9, np.nan, 4.0]),
        age=tf.constant([30.0, 17.0, np.nan, np.nan]),
        city=tf.constant(["north", "atlantis", "", "north"]),
        device=tf.constant(["web", "web", "", "toaster"]),
    )
    assert [name.decode() for name in answer["out_of_range"].numpy()] == [
        "", "amount, age, city", "", "device",
    ]  # fmt: skip
    assert answer["missing_share"].numpy().tolist() == [0.0, 0.0, 1.0, 0.25]
    assert answer["probabilities"].shape == (4, 2)  # the model still answers every row


def test_a_client_sending_the_files_column_names_is_told_the_renamed_ones(exported):
    """Census's `education-num` is the export's `education_num`: the refusal says so."""
    run, _, _ = exported
    rows, _ = dataset.raw_examples(run, "train", 2)
    names = ["Amount", "age", "city", "device"]
    pairs = zip(names, rows.dtype.names, strict=True)
    sent = rows.astype([(new, rows.dtype[old]) for new, old in pairs])
    with pytest.raises(StepError) as caught:
        export.check_rows(sent, dataset.read_tabular_meta(run)["schema"])
    said = str(caught.value)
    assert "send exactly the columns amount, age, city, device" in said
    assert "renamed the file's columns to identifiers: send 'Amount' as 'amount'" in said
{%- if cookiecutter.include_serving %}


def test_the_rest_body_is_json_rows_with_named_columns_and_nan_for_a_missing_number(exported):
    run, _, loaded = exported
    rows, _ = dataset.raw_examples(run, "train", 30)
    text = json.dumps(task.rest_payload(rows))  # what is sent
    # TF Serving's JSON parser takes the bare token NaN for a float input and refuses null.
    assert '"age": NaN' in text and "null" not in text
    body = json.loads(text)
    assert set(body["instances"][0]) == {"amount", "age", "city", "device"}
    answer = answer_rest(loaded.signatures["serving_default"], body)
    assert len(answer["predictions"]) == 30
    assert {"probabilities", "class_ids", "class_names"} <= set(answer["predictions"][0])


@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        (lambda row: row.pop("city"), r"instances\[1\] lacks city"),
        (lambda row: row.update(colour="red"), r"instances\[1\] has unknown colour"),
        (  # a file's own column name: census's education-num is the export's education_num
            lambda row: row.update({"Device-": row.pop("device")}),
            r"instances\[1\] lacks device \(the data step made the file's column names "
            r"identifiers: send 'Device-' as 'device'\)",
        ),
        (
            lambda row: row.update(amount="lots"),
            r"instances\[1\]\['amount'\] is 'lots', not a number",
        ),
        (
            lambda row: row.update(amount=1e300),
            r"instances\[1\]\['amount'\] is 1e\+300, beyond float32's range",
        ),
        (lambda row: row.update(age=float("-inf")), r"instances\[1\]\['age'\] is -inf, beyond"),
        (  # as TF Serving does: a null for a float input fails the request
            lambda row: row.update(amount=None),
            r"instances\[1\]\['amount'\] is null, not a number \(NaN where missing",
        ),
    ],
)
def test_a_bad_row_is_refused_in_one_sentence_before_inference(exported, change, sentence):
    run, _, loaded = exported
    rows, _ = dataset.raw_examples(run, "train", 3)
    body = task.rest_payload(rows)
    change(body["instances"][1])
    answer = answer_rest(loaded.signatures["serving_default"], body)
    assert "predictions" not in answer
    assert len(answer["error"].split(". ")) == 1
    assert __import__("re").search(sentence, answer["error"]), answer["error"]
{%- endif %}


def test_rows_without_column_names_are_refused():
    with pytest.raises(StepError, match="rows without named columns are not allowed"):
        task.rest_payload(np.zeros((2, 4), np.float32))


def test_the_columns_check_names_a_missing_extra_or_wrong_typed_column(exported):
    run, _, _ = exported
    meta = dataset.read_tabular_meta(run)
    rows, _ = dataset.raw_examples(run, "train", 2)
    fewer = rows[["amount", "age", "city"]]
    with pytest.raises(StepError, match="missing device"):
        export.check_rows(fewer, meta["schema"])
    odd = rows.astype([(n, "U8") for n in rows.dtype.names])
    with pytest.raises(StepError, match="column 'amount' holds <U8 values: it is numeric"):
        export.check_rows(odd, meta["schema"])


def test_a_model_answering_nan_on_validation_rows_is_not_exported(tmp_path):
    run = make_table_run(tmp_path)
    meta = dataset.read_tabular_meta(run)
    model = task.build_model("wide_deep", meta)
    for weight in model.trainable_weights:  # a diverged training's weights
        weight.assign(np.full(weight.shape, np.nan, np.float32))
    with pytest.raises(StepError) as caught:
        task.build_archive(model, meta, run)
    assert "not finite (NaN or inf) on 150 of 150 validation rows" in str(caught.value)
    assert "re-run 03_train" in str(caught.value)
    assert len(str(caught.value).split(". ")) == 1
{% if cookiecutter.include_tensorrt %}

def test_tf_trt_says_it_does_not_convert_the_string_columns_signature(exported):
    """TF-TRT converts serving_default, which takes the category columns as strings (checked on
    the table's own signature): it is skipped with that reason, before any GPU is looked for."""
    from helpers import assert_one_sentence

    from {{ cookiecutter.package_name }}.optimize.tf_trt import tf_trt_available

    _, _, loaded = exported
    inputs = loaded.signatures["serving_default"].structured_input_signature[1]
    assert tf.string in {spec.dtype for spec in inputs.values()}
    available, reason = tf_trt_available("fp32")
    assert not available
    assert reason.startswith("TF-TRT would convert serving_default, which takes strings (the ")
    assert "'features' signature" in reason
    assert_one_sentence(reason)
{% endif %}

@pytest.mark.parametrize(
    "change, said",
    [
        (
            lambda c: c.pop("age"),
            "the input 'age' is missing: serving_default takes age, amount, city, device.",
        ),
        (
            lambda c: c.update(age=np.array(["thirty", "40"])),
            "the input 'age' holds text ('thirty'): serving_default takes float32 numbers for it,",
        ),
        (
            lambda c: c.update(age=[30.0, None]),
            "the input 'age' holds None, not a number: serving_default takes float32 numbers",
        ),
        (lambda c: c.update(colour=["red", "blue"]), "the input 'colour' is no input of serving"),
    ],
    ids=["a column missing", "text in a number", "a null number", "an unknown column"],
)
def test_a_bad_column_for_the_signature_is_one_sentence_naming_it(exported, change, said):
    """The serving signature called without a column or with a string in a numeric input
    answered with TensorFlow's own text (issue 45): export.call_signature names the input."""
    from {{ cookiecutter.package_name }}.export import call_signature

    signature = exported[2].signatures["serving_default"]
    columns = {"amount": [0.5, 1.0], "age": [30, 40.0], "city": ["a", "b"], "device": ["x", ""]}
    assert call_signature(signature, columns)["probabilities"].shape == (2, 2)
    change(columns)
    with pytest.raises(StepError) as refused:
        call_signature(signature, columns)
    message = str(refused.value)
    assert message.startswith(said) and message.endswith(".") and "\n" not in message, message
