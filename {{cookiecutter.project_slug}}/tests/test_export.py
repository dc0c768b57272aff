"""Export: the step's contract, the SavedModel's signature, parity after a fresh-process reload,
safe writes, refusals of broken or stale inputs, REST.

One untrained small model on a tiny synthetic data set is exported once for the whole file by
export.run (an untrained model exports and serves exactly like a trained one). Class names with a
non-ASCII letter check that names survive the graph constant, the fresh process and REST's JSON.
TF Serving itself is not needed: a local HTTP server answers `:predict` with the same SavedModel.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import data, export, lineage
from {{ cookiecutter.package_name }}.artifacts import (
    MissingInputError,
    StaleInputError,
    StepError,
    read_metrics,
)
from {{ cookiecutter.package_name }}.tasks.image import data_step, models
from {{ cookiecutter.package_name }}.writes import WriteError, write_json

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


def test_a_savedmodel_of_other_weights_fails_parity(run_copy: Path) -> None:
    """Parity can fail: model.keras retrained (other weights) against the old export."""
    keras.utils.set_random_seed(1)
    models.build_model("small_cnn", SHAPE, len(CLASSES), width=8).save(run_copy / "model.keras")
    parity = export.check_parity(run_copy, run_copy / "export" / "1", max_examples=8)
    assert parity["max_abs_diff"] > parity["tolerance"]
    assert parity["parity_ok"] is False, parity["verdict"]


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


def test_check_without_inputs_looks_at_the_values_only(tmp_path: Path) -> None:
    """The runner's pre-flight check: values refused, an empty folder not looked at."""
    export.check(tmp_path / "nothing-here", export.Params(), inputs=False)
    with pytest.raises(export.ExportError, match="overwrite='no'") as refused:
        export.check(tmp_path, export.Params(overwrite="no"), inputs=False)
    assert_one_sentence(str(refused.value))
    with pytest.raises(MissingInputError, match="03_train"):
        export.check(tmp_path, export.Params())


def test_a_model_trained_on_replaced_data_is_refused_naming_03_train(run_copy: Path) -> None:
    """model.keras recorded as made from other data than data/ holds now: retrain first."""
    lineage.record(run_copy, "model", "train", {"data": "0" * 64})
    with pytest.raises(StaleInputError, match="re-run 03_train before 04_export") as refused:
        export.check(run_copy, export.Params(version=2))
    assert_one_sentence(str(refused.value))
    lineage.record(run_copy, "model", "train", {"data": lineage.fingerprint(run_copy, "data")})
    export.check(run_copy, export.Params(version=2))  # trained on the data there now: accepted


def test_an_export_folder_that_cannot_be_written_is_refused_before_loading(
    run_copy: Path,
) -> None:
    """export/ is a file here: refused in one sentence before any model is loaded."""
    shutil.rmtree(run_copy / "export")
    (run_copy / "export").write_text("not a folder")
    with pytest.raises(StepError, match="is a file, not a folder") as refused:
        export.check(run_copy, export.Params(version=2))
    assert_one_sentence(str(refused.value))
    assert str(refused.value).startswith(f"the export folder {run_copy / 'export'} cannot be used")


def cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(5000))


def damaged_byte(path: Path) -> None:
    """One byte of the weights flipped: still a zip archive, but its CRC no longer matches."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        weights = archive.getinfo("model.weights.h5")
    raw[weights.header_offset + 200] ^= 0xFF
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", [cut_short, random_bytes, damaged_byte])
def test_a_broken_model_file_is_refused_naming_03_train(run_copy: Path, damage: Any) -> None:
    """A model.keras cut short or damaged: one sentence before any work, not "File not found"."""
    damage(run_copy / "model.keras")
    with pytest.raises(export.ExportError) as refused:
        export.check(run_copy, export.Params(version=2))
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"model.keras in {run_copy} cannot be read (")
    assert message.endswith("): re-run 03_train.") and "File not found" not in message
    assert not (run_copy / "export" / "2").exists()


def test_a_model_file_keras_cannot_load_is_one_sentence_too(run_copy: Path) -> None:
    """A whole archive whose model Keras cannot build passes the cheap check; the load says so."""
    with zipfile.ZipFile(run_copy / "model.keras", "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": "NoSuchLayer", "config": {}}))
        archive.writestr("model.weights.h5", b"not hdf5")
    lineage.record(run_copy, "model", "train", {"data": lineage.fingerprint(run_copy, "data")})
    with pytest.raises(export.ExportError, match="re-run 03_train") as refused:
        export.export_savedmodel(run_copy, version=2)
    assert_one_sentence(str(refused.value))
    assert not (run_copy / "export" / "2").exists()


def test_an_existing_version_is_refused_unless_overwrite(run: Path) -> None:
    """Exporting over a version needs overwrite=True; then the old folder is replaced whole."""
    target = Path(export.export_savedmodel(run, version=2)["export_dir"])
    (target / "stale.txt").write_text("from the first export")
    with pytest.raises(export.ExportError, match="overwrite=True") as refused:
        export.export_savedmodel(run, version=2)
    assert str(target) in str(refused.value)
    assert_one_sentence(str(refused.value))
    with pytest.raises(export.ExportError, match="overwrite=True"):
        export.run(run, export.Params(version=2, overwrite=False), verbose=False)
    assert (target / "stale.txt").is_file()
    export.export_savedmodel(run, version=2, overwrite=True)
    assert (target / "saved_model.pb").is_file() and not (target / "stale.txt").exists()


def test_a_failed_write_leaves_no_half_export(
    run: Path, exported: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash while writing leaves neither a new version folder nor a temporary one behind."""
    archive = type(keras.export.ExportArchive())  # Keras 3 hands out the backend's subclass
    write_out = archive.write_out

    def write_then_fail(self: Any, filepath: str, *args: Any, **kwargs: Any) -> None:
        write_out(self, filepath, *args, **kwargs)
        raise OSError("No space left on device")

    monkeypatch.setattr(archive, "write_out", write_then_fail)
    existing = Path(exported["export_dir"])
    (existing / "marker.txt").write_text("the version being served")
    before = sorted(path.name for path in existing.parent.iterdir())
    with pytest.raises(WriteError, match="export/7 could not be written: the disk is full"):
        export.export_savedmodel(run, version=7)
    with pytest.raises(WriteError, match="the disk is full .*; the earlier one is kept"):
        export.export_savedmodel(run, version=1, overwrite=True, replace_served=True)
    assert sorted(path.name for path in existing.parent.iterdir()) == before
    assert (existing / "marker.txt").is_file() and (existing / "saved_model.pb").is_file()


@pytest.fixture(scope="module")
def export_after_a_kill(
    run: Path, exported: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One export of version 3, shared by the two tests below (each export reloads TensorFlow in a
    fresh process: minutes on a busy machine), into a copy of the run where a killed runner left
    export/.3.tmp-* folders, with progress lines every 0.05 s and the fresh process's parity check
    slowed by 0.3 s: the versions counted before, the folders planted, and what it printed."""
    from {{ cookiecutter.package_name }} import progress
    from {{ cookiecutter.package_name }}.export import entry as step
    from {{ cookiecutter.package_name }}.export import files
    from {{ cookiecutter.package_name }}.export.params import next_version
    from {{ cookiecutter.package_name }}.optimize.base import latest_export

    run_copy = Path(shutil.copytree(run, tmp_path_factory.mktemp("killed-export") / "run"))
    gone = _dead_pid()
    folder = run_copy / "export"
    one = folder / "1"
    killed = [
        folder / f".3.tmp-{files._host()}-{gone}-k1l2",  # this host, its process is gone
        folder / ".3.tmp-x8y9z0a1",  # an older export's name, without host and process
    ]
    alive = folder / f".3.tmp-{files._host()}-{os.getpid()}-w7r1"  # still being written
    for path in (*killed, alive):
        shutil.copytree(one, path)
    top = max(int(path.name) for path in folder.iterdir() if path.name.isdigit())
    counted = (next_version(run_copy), latest_export(run_copy))
    shutil.rmtree(folder / "3", ignore_errors=True)  # an earlier test's version 3, if any
    real = step.check_parity

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    said = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(said):
        patch.setenv(progress.PROGRESS_ENV, "lines")
        patch.setattr(progress, "LINE_EVERY", 0.05)
        patch.setattr(step, "check_parity", slow)
        export.run(run_copy, export.Params(version=3, overwrite=False))
    return {
        "run": run_copy,
        "top": top,
        "counted": counted,
        "killed": killed,
        "alive": alive,
        "said": said.getvalue(),
    }


def test_what_a_killed_export_left_is_removed_by_the_next_and_never_counts(
    export_after_a_kill: dict[str, Any],
) -> None:
    """A runner killed mid-export leaves export/.N.tmp-*: no list of versions counts it, and the
    next export of N removes it in one line; a temporary folder whose process still runs stays,
    and a version a killed overwrite had moved aside is put back, not removed."""
    from {{ cookiecutter.package_name }}.export import files

    after = export_after_a_kill
    run_copy, killed, top = after["run"], after["killed"], after["top"]
    folder = run_copy / "export"
    assert after["counted"] == (top + 1, folder / str(top))
    said = [line for line in after["said"].splitlines() if "interrupted" in line]
    names = ", ".join(path.name for path in killed)
    assert said == [f"Removed what an interrupted export left in {folder}: {names}"]
    assert not any(path.exists() for path in killed) and after["alive"].is_dir()
    moved = folder / f".9.tmp-{files._host()}-{_dead_pid()}-q4.old"  # killed between the renames
    shutil.copytree(folder / "1", moved)
    with pytest.raises(export.ExportError, match="exists already"):
        export.export_savedmodel(run_copy, version=9)
    assert (folder / "9" / "saved_model.pb").is_file() and not moved.exists()


def _dead_pid() -> int:
    """The process id of a process that has ended (and been reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_the_parity_check_in_a_fresh_process_is_not_silent(
    export_after_a_kill: dict[str, Any],
) -> None:
    """The fresh process loads TensorFlow and the export, minutes on a busy machine: a line says
    so while it runs, and again with its time when it is done (it was a silent wait)."""
    said = export_after_a_kill["said"]
    moving = re.findall(r"Parity: the export reloaded in a fresh process: [^\n]*", said)
    assert len(moving) >= 2 and "done in" in moving[-1], said


@pytest.mark.parametrize("version", [0, -1, 1.5, "1", True, None])
def test_a_bad_version_is_refused_in_one_sentence(run: Path, version: Any) -> None:
    """Versions are whole numbers >= 1, the folder names TF Serving loads."""
    with pytest.raises(export.ExportError, match=re.escape(f"version={version!r}")) as refused:
        export.export_savedmodel(run, version=version)
    assert_one_sentence(str(refused.value))


def test_a_run_without_a_model_names_03_train(tmp_path: Path) -> None:
    """No model.keras: one sentence that says to run 03_train first."""
    with pytest.raises(MissingInputError, match="03_train") as missing:
        export.export_savedmodel(tmp_path, version=1)
    assert_one_sentence(str(missing.value))
    assert not (tmp_path / "export").exists()


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
