"""Serving: the configs TF Serving is given, versions under labels, and the load generator.

No TF Serving binary runs here. The configs are parsed with TF Serving's own messages
(tensorflow-serving-api's ModelServerConfig; BatchingParameters and MonitoringConfig as serve.protos
declares them where that package lacks them); the load generator runs against a small HTTP
server in this file and a gRPC PredictionService in this process, so its figures here describe
the client, not TF Serving.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import image_only
from google.protobuf import text_format
from helpers import free_port
from tensorflow_serving.config import model_server_config_pb2

from {{ cookiecutter.package_name }} import serve
from {{ cookiecutter.package_name }}.cli import main
from {{ cookiecutter.package_name }}.serve import bench, config, protos

PACKAGE = "{{ cookiecutter.package_name }}"
CURVE = {"1": 1000.0, "8": 7000.0, "32": 30000.0, "64": 31000.0}  # images/s per batch size


def fake_export(run_dir: Path, version: int, parity_ok: bool = True) -> str:
    """export/<version>/ with a saved_model.pb, recorded by step 4's hook with its parity."""
    (run_dir / "export" / str(version)).mkdir(parents=True, exist_ok=True)
    (run_dir / "export" / str(version) / "saved_model.pb").write_bytes(b"stand-in")
    metrics = {
        "version": version,
        "parity_ok": parity_ok,
        "max_abs_diff": 0.0 if parity_ok else 0.3,
    }
    return serve.record_export(run_dir, metrics)


def models(run_dir: Path) -> dict:
    """models.config parsed with tensorflow_serving's ModelServerConfig, outside the package."""
    text = (run_dir / "serving" / "models.config").read_text(encoding="utf-8")
    parsed = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    (model,) = parsed.model_config_list.config
    return {
        "name": model.name,
        "base_path": model.base_path,
        "served": list(model.model_version_policy.specific.versions),
        "labels": dict(model.version_labels),
    }


# ----------------------------------------------------------------------------- the configs


def test_serving_configs_written_by_export_parse_with_tf_serving_messages(tmp_path):
    """The first export that passed parity is served alone, labelled stable; the batching and
    monitoring configs parse as BatchingParameters and MonitoringConfig."""
    fake_export(tmp_path, 1)
    assert models(tmp_path) == {
        "name": PACKAGE,
        "base_path": f"/models/{PACKAGE}",
        "served": [1],
        "labels": {"stable": 1},
    }
    batching = (tmp_path / "serving" / "batching.config").read_text(encoding="utf-8")
    params = text_format.Parse(batching, protos.batching_parameters()())
    assert params.max_batch_size.value == config.PROVISIONAL_MAX_BATCH
    assert params.num_batch_threads.value >= 1
    monitoring = (tmp_path / "serving" / "monitoring.config").read_text(encoding="utf-8")
    parsed = text_format.Parse(monitoring, protos.monitoring_config()())
    assert parsed.prometheus_config.enable
    assert parsed.prometheus_config.path == config.PROMETHEUS_PATH


@pytest.mark.parametrize(
    ("name", "text", "fault"),
    [
        ("models.config", "model_config_list { config { nme: 'x' } }", "no field named"),
        (
            "models.config",
            "model_config_list { config { name: 'm' model_version_policy { specific { versions: 1"
            " } } version_labels { key: 'stable' value: 2 } } }",
            "does not serve",
        ),
        ("models.config", "model_config_list { config { name: 'm' } }", "not `specific`"),
        ("batching.config", "max_batch_size { value: 'big' }", "Couldn't parse integer"),
        (
            "batching.config",
            "max_batch_size { value: 32 } num_batch_threads { value: 2 } batch_timeout_micros "
            "{ value: 1 } max_enqueued_batches { value: 2 } allowed_batch_sizes: 8 "
            "allowed_batch_sizes: 16",
            "end at max_batch_size 32",
        ),
        ("monitoring.config", "prometheus_config { enable: true pth: '/m' }", "no field named"),
    ],
)
def test_serving_malformed_or_inconsistent_config_is_refused(tmp_path, name, text, fault):
    """A misspelt field, a wrong type, a label on an unserved version, batch sizes that do not
    end at max_batch_size: each is refused in one sentence naming the file."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(serve.ConfigError, match=fault):
        config.read_config(path)


def test_serving_refused_config_leaves_the_old_file_in_place(tmp_path):
    """write_config checks before it renames: a label on an unserved version never lands."""
    fake_export(tmp_path, 1)
    path = tmp_path / "serving" / "models.config"
    before = path.read_text(encoding="utf-8")
    bad = config.models_config(PACKAGE, [1], {"stable": 1, "canary": 2})
    with pytest.raises(serve.ConfigError, match="does not serve"):
        config.write_config(path, bad, "bad")
    assert path.read_text(encoding="utf-8") == before
    hidden = [p.name for p in path.parent.iterdir() if p.name.startswith(".")]
    assert hidden == [".versions.lock"]  # the lock `serve` takes, and no temporary file


def test_serving_batching_is_sized_from_the_throughput_curve(tmp_path):
    """max_batch_size is the smallest measured batch within 90 % of the best images/s, the
    timeout one such batch's compute time, the threads the cores; step 5's hook rewrites it."""
    sizing = config.size_batching({"baselines": [{"name": "savedmodel", "throughput": CURVE}]}, 6)
    assert sizing["max_batch_size"] == 32
    assert sizing["batch_timeout_micros"] == round(32 / 30000.0 * 1e6)
    assert sizing["allowed_batch_sizes"] == [1, 8, 32]
    assert (sizing["num_batch_threads"], sizing["max_enqueued_batches"]) == (6, 6)
    fake_export(tmp_path, 1)
    serve.resize_batching(tmp_path, {"baselines": [{"name": "savedmodel", "throughput": CURVE}]})
    read = config.read_config(tmp_path / "serving" / "batching.config")
    assert (read["max_batch_size"], read["allowed_batch_sizes"]) == (32, [1, 8, 32])


# ----------------------------------------------------------------------------- versions, labels


def test_serve_canary_promote_rollback_move_labels_in_models_config(tmp_path):
    """canary 2 serves 1 and 2; promote makes 2 stable and keeps 1 loaded; rollback gives
    stable back to 1 and unloads 2; a second rollback has nothing to go back to."""
    fake_export(tmp_path, 1)
    fake_export(tmp_path, 2)
    assert models(tmp_path)["labels"] == {"stable": 1}  # a new export is not served by itself
    serve.canary(tmp_path, 2)
    assert models(tmp_path)["served"] == [1, 2]
    assert models(tmp_path)["labels"] == {"stable": 1, "canary": 2}
    serve.promote(tmp_path)
    assert (models(tmp_path)["served"], models(tmp_path)["labels"]) == ([1, 2], {"stable": 2})
    serve.rollback(tmp_path)
    assert (models(tmp_path)["served"], models(tmp_path)["labels"]) == ([1], {"stable": 1})
    with pytest.raises(serve.ServeError, match="Nothing to roll back to"):
        serve.rollback(tmp_path)


def test_serve_moves_a_label_onto_an_unloaded_version_in_two_steps(tmp_path):
    """With a canary labelled, a new canary is first served unlabelled (TF Serving moves a
    label only onto a loaded version); the same command again moves the label."""
    for version in (1, 2, 3):
        fake_export(tmp_path, version)
    serve.canary(tmp_path, 2)
    said = serve.canary(tmp_path, 3)
    assert "run this command again" in said
    assert models(tmp_path)["served"] == [1, 2, 3]
    assert models(tmp_path)["labels"] == {"stable": 1, "canary": 2}
    serve.canary(tmp_path, 3)
    assert (models(tmp_path)["served"], models(tmp_path)["labels"]) == (
        [1, 3],
        {"stable": 1, "canary": 3},
    )


def test_serve_refuses_a_missing_version_or_one_that_failed_parity(tmp_path):
    """A version with no export folder, or whose parity failed in step 4, is refused and the
    config is not rewritten."""
    fake_export(tmp_path, 1)
    fake_export(tmp_path, 2, parity_ok=False)
    before = (tmp_path / "serving" / "models.config").read_text(encoding="utf-8")
    with pytest.raises(serve.ServeError, match="Version 5 does not exist"):
        serve.canary(tmp_path, 5)
    with pytest.raises(serve.ServeError, match="did not pass parity"):
        serve.promote(tmp_path, 2)
    assert (tmp_path / "serving" / "models.config").read_text(encoding="utf-8") == before


def test_label_changes_at_the_same_moment_take_turns(tmp_path, monkeypatch):
    """`serve canary 3` and `serve rollback` at once: each reads, changes and writes versions.json
    under the lock, so both changes land (stable 1, canary 3) and models.config agrees, however
    slowly each reads the state."""
    for version in (1, 2, 3):
        fake_export(tmp_path, version)
    serve.promote(tmp_path, 2)  # loads 2 first; the same command again moves the label
    serve.promote(tmp_path, 2)  # stable 2, with 1 kept for rollback
    real_load = serve.versions.load_state

    def slow_load(folder):
        state = real_load(folder)
        time.sleep(0.3)  # both commands hold what they read while the other one reads
        return state

    monkeypatch.setattr(serve.versions, "load_state", slow_load)
    said: list[str] = []
    threads = [
        threading.Thread(target=lambda: said.append(serve.canary(tmp_path, 3))),
        threading.Thread(target=lambda: said.append(serve.rollback(tmp_path))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(said) == 2, said
    state = json.loads((tmp_path / "serving" / "versions.json").read_text())
    assert (state["stable"], state["canary"], state["history"]) == (1, 3, [])
    assert models(tmp_path)["labels"] == {"stable": 1, "canary": 3}


def test_export_refuses_to_replace_a_served_version_without_replace_served(tmp_path, monkeypatch):
    """export's defaults (version 1, overwrite) do not replace the stable or canary version, so a
    later rollback cannot "restore" a new model; replace_served=True does, a new version is free."""
    from {{ cookiecutter.package_name }}.export import params as export_params

    monkeypatch.setattr(export_params, "check_trained_model", lambda *args, **kwargs: None)
    for version in (1, 2):
        fake_export(tmp_path, version)
    serve.canary(tmp_path, 2)
    with pytest.raises(export_params.ExportError) as refused:
        export_params.check(tmp_path, export_params.Params())
    assert str(refused.value) == (
        f"{tmp_path / 'export' / '1'} is the stable version in {tmp_path / 'serving'}/versions."
        "json: export another version (e.g. version=3), or pass replace_served=True to replace it."
    )
    with pytest.raises(export_params.ExportError, match="is the canary version"):
        export_params.check(tmp_path, export_params.Params(version=2))
    export_params.check(tmp_path, export_params.Params(version=1, replace_served=True))
    export_params.check(tmp_path, export_params.Params(version=3))


def test_serve_cli_promote_then_rollback_refuses_in_one_sentence(tmp_path, capsys):
    """`serve promote --version 1` on the only version succeeds; `serve rollback` exits 2 with
    one sentence."""
    fake_export(tmp_path, 1)
    assert main(["serve", "promote", "--run-dir", str(tmp_path), "--version", "1"]) == 0
    assert "already" in capsys.readouterr().out
    assert main(["serve", "rollback", "--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{PACKAGE}: Nothing to roll back to") and len(err.splitlines()) == 1


def test_serving_rest_url_takes_a_version_or_a_label():
    """The REST helper addresses /versions/N or /labels/L, and refuses both at once."""
    from {{ cookiecutter.package_name }}.export import ExportError, rest_url

    base = f"http://127.0.0.1:8501/v1/models/{PACKAGE}"
    assert rest_url(version=2) == f"{base}/versions/2:predict"
    assert rest_url(label="canary") == f"{base}/labels/canary:predict"
    with pytest.raises(ExportError, match="not both"):
        rest_url(version=2, label="canary")


# ----------------------------------------------------------------------------- the load generator


class FakeServing(BaseHTTPRequestHandler):
    """TF Serving's REST predict route: stable answers at once, canary after 50 ms, broken
    with HTTP 500; anything else is a 404."""

    protocol_version = "HTTP/1.1"  # keep-alive, as TF Serving does
    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        label = self.path.rsplit("/labels/", 1)[-1].removesuffix(":predict")
        self.seen.append(self.path)
        status, answer = 200, {"outputs": {"class_ids": [0] * len(body["inputs"]["images"])}}
        if not self.path.startswith(f"/v1/models/{PACKAGE}/labels/"):
            status, answer = 404, {"error": "no such model"}
        elif label == "canary":
            time.sleep(0.05)
        elif label != "stable":
            status, answer = 500, {"error": "broken"}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        """Quiet."""


@pytest.fixture
def fake_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeServing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@image_only
def test_serve_bench_splits_labels_and_stops_at_the_request_count(fake_server):
    """A 3:1 A/B split over 4 workers: exactly `requests` sent, per-label counts add up, the
    slow canary's 50 ms shows in p99, none fail, and progress lines are printed."""
    lines = []
    params = bench.BenchParams(
        port=fake_server,
        concurrency=4,
        requests=80,
        duration=30,
        batch=2,
        labels={"stable": 3.0, "canary": 1.0},
    )
    result = bench.run_bench(params, [8, 8, 1], progress=lines.append)
    assert (result["requests"], result["ok"], result["errors"]) == (80, 80, 0)
    assert result["stopped_by"] == "requests"
    counts = result["labels"]
    assert counts["stable"]["requests"] + counts["canary"]["requests"] == 80
    assert counts["stable"]["requests"] > counts["canary"]["requests"] > 0
    assert result["latency_ms"]["p99"] >= 50 > result["latency_ms"]["p50"]
    assert result["qps"] > 0 and result["images_per_second"] == pytest.approx(2 * result["qps"])
    assert lines and "requests" in lines[-1]


@image_only
def test_serve_bench_counts_errors_and_stops_at_the_duration(fake_server, monkeypatch):
    """Failing answers are counted as errors with their text; the run ends at its duration."""
    monkeypatch.setattr(config, "LABELS", ("stable", "canary", "broken"))
    monkeypatch.setattr(bench, "LABELS", ("stable", "canary", "broken"))
    params = bench.BenchParams(
        port=fake_server,
        concurrency=2,
        requests=1_000_000,
        duration=0.5,
        labels={"broken": 1.0},
    )
    started = time.perf_counter()
    result = bench.run_bench(params, [8, 8, 1])
    assert time.perf_counter() - started < 3
    assert result["stopped_by"] == "duration"
    assert result["errors"] == result["requests"] > 0 and result["ok"] == 0
    assert result["error_examples"][0].startswith("HTTP 500")
    assert result["latency_ms"] == {"p50": None, "p95": None, "p99": None}


def test_serve_bench_refuses_bad_values_before_sending(fake_server):
    """Unknown label, zero concurrency, a URL as host: one sentence each, nothing sent."""
    FakeServing.seen.clear()
    for change, fault in (
        ({"labels": {"newest": 1.0}}, "labels"),
        ({"concurrency": 0}, "concurrency=0"),
        ({"host": "http://example.com/"}, "host="),
        ({"duration": 0}, "duration=0"),
    ):
        with pytest.raises(serve.ServeError, match=fault):
            bench.run_bench(bench.BenchParams(port=fake_server, **change), [8, 8, 1])
    assert FakeServing.seen == []


@image_only
def test_serve_bench_grpc_reaches_a_prediction_service_with_the_label():
    """gRPC through tensorflow-serving-api's stub against a PredictionService in this process:
    the label, model name and image tensor arrive as TF Serving would receive them."""
    from concurrent import futures

    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    received = []

    class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
        def Predict(self, request, context):  # noqa: N802 - the gRPC method's name
            received.append(request)
            answer = predict_pb2.PredictResponse()
            answer.outputs["class_ids"].CopyFrom(request.inputs["images"])
            return answer

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        params = bench.BenchParams(
            port=port, protocol="grpc", concurrency=2, requests=10, labels={"canary": 1.0}
        )
        result = bench.run_bench(params, [8, 8, 1])
    finally:
        server.stop(None)
    assert (result["requests"], result["ok"]) == (10, 10)
    assert {r.model_spec.version_label for r in received} == {"canary"}
    assert received[0].model_spec.name == PACKAGE
    assert [d.size for d in received[0].inputs["images"].tensor_shape.dim] == [1, 8, 8, 1]


@image_only
def test_serve_bench_cli_writes_metrics_serve_json(fake_server, tmp_path, capsys):
    """`serve-bench` reads the image shape from data/meta.json and writes metrics/serve.json."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_text(json.dumps({"image_shape": [8, 8, 1]}))
    argv = ["serve-bench", "--run-dir", str(tmp_path), "--port", str(fake_server)]
    assert main([*argv, "--requests", "20", "--label", "stable=1", "--label", "canary=1"]) == 0
    written = json.loads((tmp_path / "metrics" / "serve.json").read_text())
    assert written["requests"] == 20 and set(written["labels"]) == {"stable", "canary"}
    assert "QPS" in capsys.readouterr().out


@image_only
def test_serve_bench_cli_says_so_when_nothing_answers(tmp_path, capsys):
    """With no server on the port, every request is an error: the CLI says so and exits 1, and
    writes the attempt to metrics/serve.failed.json, keeping the last good metrics/serve.json."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_text(json.dumps({"image_shape": [8, 8, 1]}))
    good = tmp_path / "metrics" / "serve.json"
    good.parent.mkdir()
    good.write_text('{"ok": 20, "qps": 512.0}\n')
    argv = ["serve-bench", "--run-dir", str(tmp_path), "--port", str(free_port())]
    assert main([*argv, "--requests", "5"]) == 1
    err = capsys.readouterr().err
    assert "no request succeeded" in err and f"{good} keeps the last good result" in err
    assert good.read_text() == '{"ok": 20, "qps": 512.0}\n'
    assert json.loads((tmp_path / "metrics" / "serve.failed.json").read_text())["errors"] == 5


@image_only
def test_serve_bench_takes_the_tasks_examples_in_turn():
    """The requests carry batches of the examples given, in turn (fewer than a batch: repeated);
    a shape gives one batch of random uint8 examples; nothing given is one sentence."""
    import numpy as np

    from {{ cookiecutter.package_name }}.tasks import current

    images = current().bench.serving_examples(None, {"image_shape": [8, 8, 1]}, 5, seed=1)
    assert images.dtype == np.uint8 and images.shape == (5, 8, 8, 1)
    batches = bench.request_batches(images, 2)
    assert [len(batch) for batch in batches] == [2, 2]
    assert (batches[1] == images[2:4]).all()
    (repeated,) = bench.request_batches(images, 7)
    assert (repeated[5:] == images[:2]).all()
    (random,) = bench.request_batches([8, 8, 1], 3)
    assert random.dtype == np.uint8 and random.shape == (3, 8, 8, 1)
    with pytest.raises(serve.ServeError, match="no examples to send"):
        bench.request_batches([], 1)
    with pytest.raises(serve.ServeError, match=r"shape \(2, 65536, 65536\) is not allowed"):
        bench.request_batches([65536, 65536], 2)  # token ids are no shape: 8 GiB refused
    assert bench.example_count(1) == bench.BODIES and bench.example_count(1024) == 1024


@image_only
def test_serve_bench_cli_sends_random_images_of_the_datas_shape(fake_server, tmp_path):
    """An image run folder's requests: random uint8 images of meta.json's shape, a few distinct
    bodies in the columnar form, counted in images/s."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_text(json.dumps({"image_shape": [8, 8, 1]}))
    argv = ["serve-bench", "--run-dir", str(tmp_path), "--port", str(fake_server)]
    assert main([*argv, "--requests", "20", "--batch", "4"]) == 0
    written = json.loads((tmp_path / "metrics" / "serve.json").read_text())
    assert written["distinct_requests"] == bench.BODIES
    assert written["images_per_second"] == pytest.approx(4 * written["qps"])
