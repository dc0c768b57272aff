"""The shared steps on text, through the task seam: train, export and optimize a small BANKING77
run, and check what a user of the text task relies on — strings in and names out of the export,
the same answers after a reload in a fresh process and from ONNX Runtime, the baseline beside the
model, and the image-only options refused in one sentence."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import export, optimize, steps, tasks, train
from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.text import data_step
from {{ cookiecutter.package_name }}.tasks.text.sources import BANKING77

CLASSES = 12  # the first intents of BANKING77, 40 training texts each: a run of seconds
PER_CLASS = 40


def banking77_slice(path: Path) -> Path:
    """A CSV of real BANKING77 queries: the first PER_CLASS of each of the first CLASSES intents."""
    rows = csv.DictReader(
        io.StringIO(gzip.decompress((BANKING77 / "train.csv.gz").read_bytes()).decode())
    )
    kept: dict[str, list[str]] = {}
    for row in rows:
        if len(kept) < CLASSES or row["category"] in kept:
            texts = kept.setdefault(row["category"], [])
            if len(texts) < PER_CLASS:
                texts.append(row["text"])
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"])
        writer.writerows([text, label] for label, texts in kept.items() for text in texts)
    return path


@pytest.fixture(scope="module")
def text_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict, dict]:
    """data → train → export → optimize on the slice: (run folder, the three steps' metrics)."""
    folder = tmp_path_factory.mktemp("text-chain")
    source = banking77_slice(folder.parent / "slice.csv")
    entry.run(
        folder,
        data_step.Params(dataset="csv", data_dir=str(source), max_tokens=32, benchmark_seconds=1),
        verbose=False,
    )
    trained = train.run(
        folder,
        train.Params(epochs=8, batch_size=32, learning_rate=0.01, label_smoothing=0.1),
        verbose=False,
    )
    exported = export.run(folder, export.Params(version=1), verbose=False)
    optimized = optimize.run(
        folder,
        optimize.Params(backends="onnx", precisions="fp32,int8", batch_sizes="1", iterations=20),
        verbose=False,
    )
    return folder, trained, exported, optimized


def test_training_scores_the_test_split_beside_the_baseline(text_run) -> None:
    _, trained, _, _ = text_run
    assert trained["test_accuracy"] > 1 / CLASSES * 3  # learned something, far above chance
    baseline = trained["baseline"]
    assert baseline["name"].startswith("tfidf") and 0 < baseline["test_accuracy"] <= 1
    pairs, mistakes = trained["test_confused_pairs"], trained["test_confident_mistakes"]
    assert all(pair["true"] != pair["predicted"] for pair in pairs)
    assert all(isinstance(item["text"], str) and item["text"] for item in mistakes)


def test_the_mistakes_are_the_texts_scored_in_that_order(text_run) -> None:
    """test_extras reads the split in the order it was scored: each mistake's text is a test text
    of its true class (a shuffled order would pair texts with other labels)."""
    folder, trained, _, _ = text_run
    texts, labels = tasks.current().examples(folder, "test", 10_000)
    classes = trained["test_per_class"]
    names = list(classes)
    truth = {text: names[label] for text, label in zip(texts, labels, strict=True)}
    assert trained["test_confident_mistakes"], "no mistake to check: the test could not fail"
    for item in trained["test_confident_mistakes"]:
        assert truth[item["text"]] == item["true"]


def test_the_export_takes_strings_and_answers_names_after_a_reload(text_run) -> None:
    folder, _, exported, _ = text_run
    assert exported["signature"]["inputs"] == {"text": {"dtype": "string", "shape": [None]}}
    assert exported["parity_ok"] and exported["top1_agreement"] == 1.0
    assert exported["served_pid"] != os.getpid()  # reloaded in a fresh process
    count = json.loads((folder / "data" / "meta.json").read_text())["splits"]["test"]["count"]
    assert exported["examples"] == count  # every test text, not a sample
    loaded = tf.saved_model.load(exported["export_dir"]).signatures["serving_default"]
    answer = loaded(text=tf.constant(["I lost my card", "how do I top up?"]))
    assert answer["class_names"].dtype == tf.string and answer["probabilities"].shape[0] == 2
{%- if cookiecutter.include_serving %}


def test_the_rest_payload_is_strings_and_answered_with_names(text_run) -> None:
    _, _, exported, _ = text_run
    payload = json.loads(json.dumps(export.rest_payload(np.array(["card lost", "top up fee"]))))
    assert payload == {
        "signature_name": "serving_default",
        "instances": ["card lost", "top up fee"],
    }
    signature = tf.saved_model.load(exported["export_dir"]).signatures["serving_default"]
    answer = export.parse_rest_response(export.answer_rest(signature, payload))
    assert answer["class_names"].shape == (2,) and all(
        isinstance(n, str) for n in answer["class_names"]
    )
    with pytest.raises(export.ExportError) as refused:
        export.rest_payload(np.zeros((2, 8, 8, 1), np.uint8))
    assert_one_sentence(str(refused.value))
{%- endif %}


def test_onnx_keeps_the_answers_and_tokenization_is_timed_apart(text_run) -> None:
    _, _, _, optimized = text_run
    entries = {entry["precision"]: entry for entry in optimized["backends"]}
    assert entries["fp32"]["status"] == "ran" and entries["fp32"]["top1_agreement"] >= 0.995
    # int8 (dynamic) on a model of seconds, 48 test texts: one near-tie flips 2 %. What must
    # hold is that it ran, was measured, and was judged by the stated rule (on all of BANKING77
    # it keeps the answers: the closing note of issue 31 has the numbers).
    int8 = entries["int8"]
    assert int8["int8_format"] and int8["top1_agreement"] >= 0.9
    rule = optimized["int8_rule"]
    kept = (
        int8["top1_agreement"] >= rule["min_top1_agreement"]
        and int8["accuracy_drop"] <= rule["max_accuracy_drop"]
    )
    assert (int8["status"] == "ran") == kept
    assert optimized["parity_split"] == "test"
    names = [line["name"] for line in optimized["baselines"]]
    assert "savedmodel_raw" in names and optimize.preprocess_sentences(optimized)
    # issue 42 §3.8: the verdict is end to end, the client's tokenization in front of ONNX
    assert entries["fp32"]["end_to_end"]["calls"]["1"] >= 3
    assert optimized["comparison"] == "end_to_end"
    faster = optimized["best_vs_savedmodel_batch1"] >= 1
    lead = "best backend" if faster else "fastest converted backend"
    assert optimized["best_sentence"].startswith(f"{lead} end to end")


def test_ids_cut_to_their_length_bucket_give_the_same_answers(text_run) -> None:
    """An engine runs each batch at its length bucket (optimize/lengths.py), which is only right
    if the model masks its padding: the ONNX model answers each test text cut to its bucket as
    it does the text padded to max_tokens."""
    import onnxruntime

    from {{ cookiecutter.package_name }}.optimize.lengths import cut, length_ranges

    folder = text_run[0]
    ranges = length_ranges(folder)
    assert ranges == ((1, 8), (9, 16), (17, 32))  # the pipeline's buckets for max_tokens=32
    ids, _ = tasks.current().examples(folder, "test", 48, form="model")
    model = folder / "optimized" / "model_fp32.onnx"
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    padded = session.run(None, {name: ids})[0]
    buckets = []
    for row, answer in zip(ids, padded, strict=True):
        short, bucket = cut(row[None], ranges)
        buckets.append(bucket)
        np.testing.assert_allclose(session.run(None, {name: short})[0][0], answer, atol=1e-5)
    assert set(buckets) >= {0, 1}, buckets  # short and longer texts were both cut


def test_image_options_are_no_text_parameters() -> None:
    """Issue 43: augment is the image task's own training parameter, so a text bake's train
    (--help, notebook 03, a profile's -p) does not take it, and imagenet is no weights it names."""
    assert "augment" not in {field.name for field in dataclasses.fields(train.Params)}
    with pytest.raises(StepError) as unknown:
        steps.params_from("train", {"augment": "light"})
    assert str(unknown.value).startswith("Unknown parameter 'augment' for train: it takes model,")
    with pytest.raises(train.TrainError) as refused:
        train.check("unused", train.Params(weights="imagenet"), inputs=False)
    assert str(refused.value).startswith(
        "weights='imagenet' is not allowed: use none or the path of a .keras or .weights.h5 file"
    )
    assert_one_sentence(str(refused.value))


def test_the_smoke_profile_spends_no_seconds_it_cannot_judge() -> None:
    """Issue 42 §3.9: in the text smoke chain 03's finders took 23 s and chose a rate of 1e-06
    (a model at chance), and 01's benchmark was too short to compare at 6 s as at 1 s: the
    profile fixes the batch, takes 02's rate, and gives the benchmark the least it takes."""
    import yaml

    path = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    notebooks = yaml.safe_load(path.read_text(encoding="utf-8"))["notebooks"]
    asked = notebooks["03_train"]
    assert "auto" not in (asked.get("batch_size"), asked.get("learning_rate")), asked
    assert "finder_seconds" not in asked
    assert notebooks["01_data"]["benchmark_seconds"] == 1.0
