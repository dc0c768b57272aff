"""The shared steps on a table, through the task seam: data, train, export and optimize a slice of
census income given as a user's CSV, and check what a user of the table task relies on — raw named
columns in and names out of the export, the same answers after a reload in a fresh process and
from ONNX Runtime, ROC AUC beside two scikit-learn baselines, and no image options to give."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import export, optimize, steps, train
from {{ cookiecutter.package_name }}.artifacts import StepError
{%- if cookiecutter.include_serving %}
from {{ cookiecutter.package_name }}.export.rest import answer_rest
{%- endif %}
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks import tabular
from {{ cookiecutter.package_name }}.tasks.tabular import data_step{% if cookiecutter.include_serving %}, task{% endif %}

ROWS = 3000  # the first rows of census income: a run of seconds, real values and missing ones
HEADER = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,"
    "sex,capital-gain,capital-loss,hours-per-week,native-country,income"
)


def census_slice(path: Path) -> Path:
    """A CSV with a header, as users bring one: the first ROWS rows of the vendored census."""
    source = Path(tabular.__file__).parent / "census" / "adult.data.gz"
    lines = gzip.decompress(source.read_bytes()).decode("utf-8").strip().splitlines()[:ROWS]
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def table_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict, dict]:
    """data → train → export → optimize on the slice: (run folder, the three steps' metrics)."""
    folder = tmp_path_factory.mktemp("table-chain")
    source = census_slice(folder.parent / "census.csv")
    params = data_step.Params(dataset="csv", data_dir=str(source), label_column="income")
    entry.run(folder, params, verbose=False)
    trained = train.run(
        folder, train.Params(epochs=6, batch_size=64, learning_rate=0.002), verbose=False
    )
    exported = export.run(folder, export.Params(version=1), verbose=False)
    optimized = optimize.run(
        folder,
        optimize.Params(
            backends="onnx", precisions="fp32,int8", batch_sizes="1,256", iterations=20
        ),
        verbose=False,
    )
    return folder, trained, exported, optimized


def test_training_scores_ranking_beside_two_baselines(table_run) -> None:
    _, trained, _, _ = table_run
    assert trained["test_roc_auc"] > 0.8, trained["test_roc_auc"]
    assert 0 <= trained["threshold"] <= 1 and trained["threshold_from"].startswith("validation")
    base = trained["baseline"]
    names = [base["name"], *(other["name"] for other in base["others"])]
    assert len(names) == 2 and all(b["roc_auc"] > 0.75 for b in [base, *base["others"]])
    assert "figures/train_scores.png" in trained["figures"]


def test_the_export_takes_raw_named_columns_after_a_reload(table_run) -> None:
    folder, _, exported, _ = table_run
    assert exported["parity_ok"] and exported["top1_agreement"] == 1.0
    meta = json.loads((folder / "data" / "meta.json").read_text())
    assert exported["examples"] == meta["splits"]["test"]["count"]  # every test row
    signature = tf.saved_model.load(str(folder / "export" / "1")).signatures["serving_default"]
    inputs = signature.structured_input_signature[1]
    assert "education_num" in inputs and inputs["workclass"].dtype == tf.string
    row = {
        name: tf.constant([np.nan] if spec.dtype == tf.float32 else ["never seen"])
        for name, spec in inputs.items()
    }
    answer = signature(**row)
    assert answer["class_names"].numpy()[0].decode() in meta["classes"]
{%- if cookiecutter.include_serving %}


def test_the_rest_rows_are_answered_and_a_bad_row_is_one_sentence(table_run) -> None:
    folder, _, _, _ = table_run
    rows, _ = task.raw_examples(folder, "test", 4)
    signature = tf.saved_model.load(str(folder / "export" / "1")).signatures["serving_default"]
    body = task.rest_payload(rows)
    assert len(answer_rest(signature, body)["predictions"]) == 4
    del body["instances"][2]["age"]
    error = answer_rest(signature, body)["error"]
    assert_one_sentence(error)
    assert "instances[2] lacks age" in error
{%- endif %}


def test_onnx_keeps_the_answers_and_preprocessing_is_timed_apart(table_run) -> None:
    _, _, _, optimized = table_run
    onnx = [entry for entry in optimized["backends"] if entry["name"] == "onnx"]
    fp32 = next(entry for entry in onnx if entry["precision"] == "fp32")
    assert fp32["status"] == "ran" and fp32["top1_agreement"] >= 0.999
    names = [baseline["name"] for baseline in optimized["baselines"]]
    # serving_default on raw columns, beside the features graph: the preprocessing's own cost
    assert "savedmodel_raw" in names and optimize.preprocess_sentences(optimized)
    # issue 42 §3.8: the verdict is end to end, the client's encoding in front of ONNX
    assert fp32["end_to_end"]["calls"]["1"] >= 3 and optimized["comparison"] == "end_to_end"


def test_image_options_are_no_table_parameters() -> None:
    """Issue 43: augment is the image task's own training parameter, so a table bake's train
    (--help, notebook 03, a profile's -p) does not take it, and imagenet is no weights it names."""
    assert "augment" not in {field.name for field in dataclasses.fields(train.Params)}
    with pytest.raises(StepError) as unknown:
        steps.params_from("train", {"augment": "light"})
    assert str(unknown.value).startswith("Unknown parameter 'augment' for train: it takes model,")
    with pytest.raises(train.TrainError) as refused:
        train.check("unused", train.Params(epochs=1, weights="imagenet"), inputs=False)
    assert str(refused.value).startswith(
        "weights='imagenet' is not allowed: use none or the path of a .keras or .weights.h5 file"
    )
    assert_one_sentence(str(refused.value))


def test_the_smoke_profile_spends_no_seconds_it_cannot_judge() -> None:
    """Issue 42 §3.9: 03's finders took 28 s of the table smoke chain, too short to choose by:
    the profile fixes the batch and takes 02's rate (or training's default)."""
    import yaml

    path = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    asked = yaml.safe_load(path.read_text(encoding="utf-8"))["notebooks"]["03_train"]
    assert "auto" not in (asked.get("batch_size"), asked.get("learning_rate")), asked
    assert "finder_seconds" not in asked
