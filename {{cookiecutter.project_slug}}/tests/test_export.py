"""Export of the image task: the SavedModel's uint8 signature, parity after a fresh-process
reload, its lineage, REST. The step's refusals of broken or stale inputs, its safe writes and
versions are tested on the fake task in every bake: tests/test_export_shared.py.

One untrained small model on a tiny synthetic data set is exported once for the whole file by
export.run (an untrained model exports and serves exactly like a trained one). Class names with a
non-ASCII letter check that names survive the graph constant, the fresh process and REST's JSON.
TF Serving itself is not needed: a local HTTP server answers `:predict` with the same SavedModel.
"""

from __future__ import annotations

{% if cookiecutter.include_serving %}import http.server
{% endif %}import json
import os
{%- if cookiecutter.include_serving %}
import re
{%- endif %}
import shutil
{%- if cookiecutter.include_serving %}
import socket
import threading
from collections.abc import Iterator
{%- endif %}
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf
{%- if cookiecutter.include_serving %}
from helpers import assert_one_sentence
{%- endif %}

from {{ cookiecutter.package_name }} import data, export, lineage
from {{ cookiecutter.package_name }}.artifacts import (
    read_metrics,
)
from {{ cookiecutter.package_name }}.tasks.image import data_step, models
from {{ cookiecutter.package_name }}.writes import write_json

SHAPE = (8, 8, 1)
CLASSES = ["cat", "dög", "bird"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as 01_data and 03_train leave it: data/ with meta.json, and model.keras."""
    folder = tmp_path_factory.mktemp("export-run")
    meta = data_step.prepare(
        folder,
        "synthetic",
        shards=1,
        synthetic_shape=SHAPE,
        synthetic_classes=len(CLASSES),
        synthetic_count=60,
    )
    write_json(folder / "data" / "meta.json", {**meta, "classes": CLASSES})  # readable names
    keras.utils.set_random_seed(0)
    models.build_model("small_cnn", SHAPE, len(CLASSES), width=8).save(folder / "model.keras")
    lineage.record(folder, "model", "train", {"data": lineage.fingerprint(folder, "data")})
    return folder


@pytest.fixture(scope="module")
def exported(run: Path) -> dict[str, Any]:
    """The step as the notebook runs it: export/1, parity, saved_model_cli, metrics/export.json."""
    return export.run(run, export.Params(version=1, overwrite=False), verbose=False)


@pytest.fixture(scope="module")
def loaded(exported: dict[str, Any]) -> Any:
    return tf.saved_model.load(exported["export_dir"])


@pytest.fixture
def run_copy(run: Path, exported: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the exported run folder, for a test that breaks something in it."""
    return Path(shutil.copytree(run, tmp_path / "run"))


@pytest.fixture(scope="module")
def images(run: Path) -> np.ndarray:
    return np.concatenate(
        [batch.numpy() for batch, _ in data_step.make_dataset(run, "validation", 8)]
    )


def serve(loaded: Any, images: np.ndarray) -> dict[str, np.ndarray]:
    outputs = loaded.signatures[export.SIGNATURE](**{export.INPUT_NAME: tf.constant(images)})
    return {name: value.numpy() for name, value in outputs.items()}


def test_signature_takes_raw_uint8_images_and_gives_probabilities_ids_names(
    exported: dict[str, Any],
) -> None:
    """serving_default: uint8 [None, H, W, C] in; float32 [None, K], int64 and string out."""
    assert exported["export_dir"] == str(Path(exported["export_dir"]).parent / "1")
    assert exported["signature"] == {
        "name": "serving_default",
        "inputs": {"images": {"dtype": "uint8", "shape": [None, *SHAPE]}},
        "outputs": {
            "class_ids": {"dtype": "int64", "shape": [None]},
            "class_names": {"dtype": "string", "shape": [None]},
            "probabilities": {"dtype": "float32", "shape": [None, len(CLASSES)]},
        },
    }


def test_any_batch_size_is_served(loaded: Any, images: np.ndarray) -> None:
    """One image or many: the batch dimension is open and the outputs follow it."""
    for count in (1, 5):
        outputs = serve(loaded, images[:count])
        assert outputs["probabilities"].shape == (count, len(CLASSES))
        assert outputs["class_ids"].shape == outputs["class_names"].shape == (count,)
        np.testing.assert_allclose(outputs["probabilities"].sum(axis=1), 1.0, rtol=1e-5)
        names = [CLASSES[index] for index in outputs["class_ids"]]
        assert [name.decode("utf-8") for name in outputs["class_names"]] == names


def test_saved_model_cli_shows_the_uint8_input_and_the_three_outputs(
    exported: dict[str, Any],
) -> None:
    """The text is the real saved_model_cli's: DT_UINT8 (-1, 8, 8, 1) in, the outputs named.

    The step runs the tool once, with --all, and keeps serving_default's part of it: the same text
    `show --signature_def serving_default` prints.
    """
    text = export.signature_text(exported["export_dir"])
    assert exported["saved_model_cli"] == text
    info = "tensor_info:\n      dtype: "
    assert f"inputs['images'] {info}DT_UINT8\n      shape: (-1, 8, 8, 1)" in text
    assert f"outputs['probabilities'] {info}DT_FLOAT\n      shape: (-1, 3)" in text
    assert f"outputs['class_ids'] {info}DT_INT64\n      shape: (-1)" in text
    assert f"outputs['class_names'] {info}DT_STRING\n      shape: (-1)" in text
    assert "Method name is: tensorflow/serving/predict" in text


def test_the_export_runs_in_inference_mode(exported: dict[str, Any], loaded: Any) -> None:
    """Dropout is off in the served graph: no random op in it, the same answer every call."""
    ops = export.graph_ops(exported["saved_model_cli_all"])
    assert "Softmax" in ops and "ArgMax" in ops, ops
    assert not [op for op in ops if "Random" in op], ops
    batch = np.full((4, *SHAPE), 128, dtype=np.uint8)
    first, second = serve(loaded, batch), serve(loaded, batch)
    np.testing.assert_array_equal(first["probabilities"], second["probabilities"])


def test_reloaded_in_a_fresh_process_it_predicts_what_keras_predicts(
    run: Path, exported: dict[str, Any]
) -> None:
    """A new process with only the SavedModel gives Keras' probabilities and top classes."""
    parity = exported
    validation = data.read_meta(run)["splits"]["validation"]["count"]
    assert parity["served_pid"] != os.getpid()
    assert parity["examples"] == validation
    assert parity["top1_agreement"] == 1.0
    assert parity["max_abs_diff"] <= export.TOLERANCE["float32"]
    assert parity["class_names_match"] and parity["parity_ok"], parity["verdict"]
    assert parity["precision"] == "float32" and parity["tolerance"] == 1e-5


def test_run_writes_export_json_with_its_lineage(run: Path, exported: dict[str, Any]) -> None:
    """metrics/export.json is what run returned, with what it read and wrote, by fingerprint."""
    assert read_metrics(run, "export") == json.loads(json.dumps(exported))
    assert exported["version"] == 1 and exported["parity_ok"] and "keras_pid" not in exported
    assert exported["signature"]["inputs"]["images"]["dtype"] == "uint8"
    now = {name: lineage.fingerprint(run, name) for name in ("data", "model")}
    recorded = lineage.read(run)["export/1"]  # by export_savedmodel, once export/1 was in place
    assert all(now.values()) and recorded["fingerprint"]
    assert recorded["step"] == "export" and recorded["inputs"] == {"model": now["model"], **now}
    assert exported["lineage"] == {
        "reads": now,
        "writes": {"export/1": recorded["fingerprint"]},
    }
{%- if cookiecutter.include_serving %}


def test_the_rest_payload_through_the_signature_gives_the_signature_outputs(
    loaded: Any, images: np.ndarray
) -> None:
    """Same JSON in, same outputs out: the payload decoded and run locally equals a direct call."""
    payload = json.loads(json.dumps(export.rest_payload(images)))
    assert payload["signature_name"] == "serving_default" and list(payload["inputs"]) == ["images"]
    np.testing.assert_array_equal(np.array(payload["inputs"]["images"], dtype=np.uint8), images)
    answer = export.answer_rest(loaded.signatures["serving_default"], payload)
    answer = json.loads(json.dumps(answer))
    parsed = export.parse_rest_response(answer)
    direct = serve(loaded, images)
    np.testing.assert_array_equal(parsed["probabilities"], direct["probabilities"])
    np.testing.assert_array_equal(parsed["class_ids"], direct["class_ids"])
    assert parsed["class_names"].tolist() == [name.decode() for name in direct["class_names"]]
    assert parsed["probabilities"].dtype == np.float32 and parsed["class_ids"].dtype == np.int64


def test_the_row_form_answer_parses_like_the_columnar_one() -> None:
    """TF Serving answers "instances" requests per row; the arrays come out the same."""
    columns = {"probabilities": [[0.25, 0.75], [0.5, 0.5]], "class_ids": [1, 0]}
    rows = [
        {"probabilities": [0.25, 0.75], "class_ids": 1},
        {"probabilities": [0.5, 0.5], "class_ids": 0},
    ]
    by_rows = export.parse_rest_response({"predictions": rows})
    by_columns = export.parse_rest_response({"outputs": columns})
    for name in columns:
        np.testing.assert_array_equal(by_rows[name], by_columns[name])
    with pytest.raises(export.ServingError, match="Servable not found"):
        export.parse_rest_response({"error": "Servable not found for request"})


def test_the_payload_refuses_anything_but_raw_uint8_batches(images: np.ndarray) -> None:
    """Float or unbatched images are refused: the model rescales raw uint8 itself."""
    for wrong in (images.astype("float32") / 255, images[0]):
        with pytest.raises(export.ExportError, match="uint8") as refused:
            export.rest_payload(wrong)
        assert_one_sentence(str(refused.value))


@pytest.fixture
def local_serving(loaded: Any) -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on 127.0.0.1 that answers TF Serving's REST calls with the SavedModel."""
    signature, paths = loaded.signatures["serving_default"], []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the model status URL
            paths.append(self.path)
            self._send(200, {"model_version_status": [{"version": "1", "state": "AVAILABLE"}]})

        def do_POST(self) -> None:  # :predict
            paths.append(self.path)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._send(200, export.answer_rest(signature, body))

        def _send(self, status: int, answer: dict[str, Any]) -> None:
            encoded = json.dumps(answer).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(encoded)))
            self.end_headers()
            self.wfile.write(encoded)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield server.server_address[1], paths
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_predict_rest_over_http_gives_the_signature_outputs(
    local_serving: tuple[int, list[str]], loaded: Any, images: np.ndarray
) -> None:
    """predict_rest posts to /v1/models/<name>:predict and parses the answer into arrays."""
    port, paths = local_serving
    url = export.rest_url(port=port)
    assert export.server_ready(url, timeout=10)
    outputs = export.predict_rest(url, images, timeout=30)
    assert paths == [f"/v1/models/{export.MODEL_NAME}", f"/v1/models/{export.MODEL_NAME}:predict"]
    direct = serve(loaded, images)
    np.testing.assert_array_equal(outputs["probabilities"], direct["probabilities"])
    assert outputs["class_names"].tolist() == [name.decode() for name in direct["class_names"]]


def test_without_a_server_predict_rest_says_so(images: np.ndarray) -> None:
    """Nothing listening on the port: server_ready is False and predict_rest names the URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = export.rest_url(port=port)
    assert not export.server_ready(url, timeout=2)
    with pytest.raises(export.ServingError, match=re.escape(url)):
        export.predict_rest(url, images, timeout=5)
{%- endif %}


def test_the_fresh_parity_process_predicts_with_tf32_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """TF32 (on by default on Ampere and newer) would move float32 probabilities by 1e-4-1e-3,
    beyond the 1e-5 float32 tolerance: the reference predicts with it off, and restores it."""
    from {{ cookiecutter.package_name }}.export import parity

    seen: list[bool] = []

    def signature(images: tf.Tensor) -> dict[str, tf.Tensor]:
        seen.append(tf.config.experimental.tensor_float_32_execution_enabled())
        count = int(images.shape[0])
        return {
            "probabilities": tf.zeros([count, 2]),
            "class_ids": tf.zeros([count], tf.int64),
            "class_names": tf.constant([b"a"] * count),
        }

    loaded = type("Loaded", (), {"signatures": {parity.SIGNATURE: signature}})()
    monkeypatch.setattr(tf.saved_model, "load", lambda path: loaded)
    np.save(tmp_path / "images.npy", np.zeros((3, 4, 4, 1), np.uint8))
    before = tf.config.experimental.tensor_float_32_execution_enabled()
    parity.main(["predict", str(tmp_path), str(tmp_path / "images.npy"), str(tmp_path / "o.npz")])
    assert seen == [False]
    assert tf.config.experimental.tensor_float_32_execution_enabled() == before


def test_the_signature_is_shown_as_a_table_not_a_json_dump() -> None:
    """04_export shows each input and output with its dtype and shape; None is the open batch."""
    signature = {
        "name": "serving_default",
        "inputs": {"images": {"dtype": "uint8", "shape": [None, 8, 8, 1]}},
        "outputs": {"probabilities": {"dtype": "float32", "shape": [None, 10]}},
    }
    lines = export.signature_table(signature).splitlines()
    assert lines[0] == "Signature `serving_default`:"
    assert lines[4:] == [
        "| input | `images` | uint8 | [None, 8, 8, 1] |",
        "| output | `probabilities` | float32 | [None, 10] |",
    ]
