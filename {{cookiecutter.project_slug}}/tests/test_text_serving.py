"""Text through the serving code{% if cookiecutter.include_benchmarks %} and gpu-bench{% endif %}: REST answers to strings, synthetic token ids.
{%- if cookiecutter.include_serving %}

No TF Serving binary runs here: answer_rest answers a REST body in this process with the export's
own serving_default, as the server would, class names included.

The load test's requests carry real texts and are checked in the forms TF Serving takes: the REST
body as the JSON row form of strings, the gRPC request as tensorflow-serving-api's own
PredictRequest (serialized and parsed back) with a DT_STRING tensor, answered by the loaded
signature behind a PredictionService in this process.
{% endif %}"""

from __future__ import annotations

import json
{%- if cookiecutter.include_serving %}
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
{%- endif %}
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import tasks
from {{ cookiecutter.package_name }}.artifacts import StepError
{%- if cookiecutter.include_serving %}
from {{ cookiecutter.package_name }}.cli import main
from {{ cookiecutter.package_name }}.export import answer_rest, parse_rest_response
{%- endif %}
{%- if cookiecutter.include_benchmarks %}
from {{ cookiecutter.package_name }}.gpubench import bench as gpu
{%- endif %}
from {{ cookiecutter.package_name }}.prepare import entry
{%- if cookiecutter.include_serving %}
from {{ cookiecutter.package_name }}.serve import bench
{%- endif %}
from {{ cookiecutter.package_name }}.tasks.text import data_step

NO_GPU = not tf.config.list_physical_devices("GPU")
CLASSES = ("card", "fee", "pin", "transfer")
WORDS = ["my", "card", "fee", "pin", "transfer", "please", "why", "was", "charged", "héllo"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A text run folder: step 1 on a 120-row CSV (validation: 24 texts), and export/1/ of an
    untrained bag of n-grams (its answers are class names all the same)."""
    folder = tmp_path_factory.mktemp("text-serving")
    rng = np.random.default_rng(0)
    lines = ["text,label"]
    for row in range(120):
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 9))))
        lines.append(f"uniq{row} {words},{CLASSES[row % len(CLASSES)]}")
    (folder / "intents.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    params = data_step.Params(
        dataset="csv", data_dir=str(folder / "intents.csv"), max_tokens=16, vocab_size=256,
        val_fraction=0.2, test_fraction=0.0, shards=2, batch_size=16, benchmark_seconds=1.0,
    )  # fmt: skip
    entry.run(folder / "run", params, verbose=False)
    task = tasks.current()
    meta = meta_of(folder / "run")
    model = task.build_model("bag_of_ngrams", meta, width=16)
    task.export.build_archive(model, meta, folder / "run").write_out(
        str(folder / "run" / "export" / "1"), verbose=False
    )
    return folder / "run"


def meta_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "data" / "meta.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def signature(run_dir):
    return tf.saved_model.load(str(run_dir / "export" / "1")).signatures["serving_default"]


def validation_texts(run_dir: Path) -> list[str]:
    count = meta_of(run_dir)["splits"]["validation"]["count"]
    texts, _ = tasks.current().examples(run_dir, "validation", count)
    return texts.tolist()


def test_the_load_test_sends_the_validation_texts_in_shard_order(run_dir):
    """serving_examples: the validation split's own texts, first to last, repeated past its end."""
    texts = validation_texts(run_dir)
    sent = tasks.current().bench.serving_examples(run_dir, meta_of(run_dir), len(texts) + 3)
    assert sent.tolist() == texts + texts[:3]
    assert all(isinstance(text, str) for text in sent.tolist())
{%- if cookiecutter.include_serving %}


def test_answer_rest_names_the_classes_of_a_text_payload(run_dir, signature):
    """The REST answer computed in this process: one class name per text, that text's top class
    as the signature itself gives it; a payload without the texts is TF Serving's error."""
    texts = validation_texts(run_dir)[:5] + ["", "héllo 🙂"]
    payload = tasks.current().export.rest_payload(texts)
    assert payload == {"signature_name": "serving_default", "instances": texts}
    rows = answer_rest(signature, json.loads(json.dumps(payload)))["predictions"]  # TF Serving's
    wanted = {"probabilities", "class_ids", "class_names", "oov_share"}
    assert len(rows) == len(texts) and set(rows[0]) == wanted
    assert rows[-2]["oov_share"] == 1.0  # the empty text: no word the model knows
    outputs = {name: [row[name] for row in rows] for name in rows[0]}
    direct = signature(text=tf.constant(texts))
    assert outputs["class_ids"] == direct["class_ids"].numpy().tolist()
    assert outputs["class_names"] == [CLASSES[i] for i in outputs["class_ids"]]
    assert "error" in answer_rest(signature, {"signature_name": "serving_default"})
{%- endif %}


@pytest.mark.parametrize(
    "texts, said",
    [
        (["lost card", 7, None], "texts[1] is 7, not a string"),
        (["lost card", None], "texts[1] is None, not a string"),
        ("lost card", "texts "),  # a str is no list of texts: "...send a list of strings..."
    ],
    ids=["a number", "a null", "one bare string"],
)
def test_a_text_that_is_not_a_string_is_refused_not_sent_as_its_repr(run_dir, texts, said):
    """rest_payload(['lost card', 7, None]) sent '7' and 'None' and the model classified them
    (issue 45): the body and the in-process call refuse in one sentence, naming the value."""
    from {{ cookiecutter.package_name }}.tasks.text import export as text_export

    for call in (
        tasks.current().export.rest_payload,
        text_export.rest_payload,
        lambda t: text_export.predict_texts(run_dir / "export" / "1", t),
    ):
        with pytest.raises(StepError) as refused:
            call(texts)
        message = str(refused.value)
        assert message.startswith(said) and "string" in message, message
        assert "\n" not in message and message.endswith(".")


@pytest.mark.parametrize(
    "text, said",
    [
        (tf.constant([1, 2], tf.int32), "the input 'text' holds int32 values: serving_default "),
        (tf.constant([["lost", "card"]]), "the input 'text' has the shape [1, 2]: serving_default"),
        (np.array(["lost card", None], object), "the input 'text' holds None, not a string: "),
    ],
    ids=["int32", "2-D", "a null"],
)
def test_the_signature_called_with_another_input_is_one_sentence(signature, text, said):
    """serving_default called with an int32 or a 2-D batch answered with TensorFlow's own text
    (issue 45): export.call_signature, which predict_texts uses, says what the input takes."""
    from {{ cookiecutter.package_name }}.export import call_signature

    assert call_signature(signature, {"text": ["lost card"]})["class_names"].shape == (1,)
    with pytest.raises(StepError) as refused:
        call_signature(signature, {"text": text})
    message = str(refused.value)
    assert message.startswith(said), message
    assert message.endswith("takes strings for it, of shape [None] (None: any size).")
{%- if cookiecutter.include_serving %}


@pytest.mark.parametrize(
    "body, said",
    [
        ({"instances": ["lost card", 7]}, "instances[1] is 7, not a string"),
        ({"instances": ["lost card", None]}, "instances[1] is None, not a string"),
        ({"instances": [["lost", "card"]]}, "instances[0] is ['lost', 'card'], not a string"),
        ({"instances": "lost card"}, "instances must be a non-empty list, not str"),
        ({"inputs": {"text": [1.5]}}, "inputs['text'][0] is 1.5, not a string"),
    ],
    ids=["number", "null", "list", "bare string", "columnar number"],
)
def test_the_rest_stand_in_answers_a_bad_text_body_with_an_error_as_tf_serving(
    signature, body, said
):
    """answer_rest classified numbers and nulls as text, or raised NumPy's own ValueError on
    objects: TF Serving answers {"error": ...}, and so does the stand-in, in one sentence. (A
    JSON object naming the input, {"text": ...}, is TF Serving's named row form, and answered.)"""
    answer = answer_rest(signature, {"signature_name": "serving_default", **body})
    assert set(answer) == {"error"}
    assert answer["error"].startswith(said), answer["error"]
    assert answer["error"].endswith(
        "send a list of strings, one per text (rest_payload builds the body)."
    )
{%- endif %}


# ----------------------------------------------------------------------------- synthetic texts


def test_synthetic_texts_are_token_ids_the_task_models_take():
    """synthetic_meta and synthetic_batch: int64 ids max_tokens long, never padding (0) or unknown
    (1), inside the vocabulary; both text models take them and give one probability per class."""
    task = tasks.current()
    meta = task.bench.synthetic_meta(24, 5)
    ids, labels = task.bench.synthetic_batch(meta, 6, seed=1)
    assert ids.dtype == np.int64 and ids.shape == (6, 24)
    assert ids.min() >= 2 and ids.max() < meta["vocab_size"]
    assert labels.dtype == np.int64 and set(labels.tolist()) <= set(range(5))
    for name in task.models.names:
        model = task.build_model(name, meta, width=16)
        assert tuple(model(ids).shape) == (6, 5)
{%- if cookiecutter.include_benchmarks %}


# ----------------------------------------------------------------------------- gpu-bench


def test_gpu_bench_plans_the_text_models(tmp_path):
    """The reference is the Transformer, --quick the bag of n-grams, and --model takes only the
    text models, refused in one sentence naming them."""
    _, specs, _ = gpu.plan(
        quick=True, gpus=[], model=None, batch=None, data_dir=None, finder_batch=None
    )
    assert {spec["model"] for _, spec in specs} == {"bag_of_ngrams"}
    gpus = [{"model": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0"}]
    base, _, _ = gpu.plan(
        quick=False, gpus=gpus, model=None, batch=None, data_dir=None, finder_batch=None
    )
    assert (base["model"], base["size"], base["num_classes"]) == ("transformer", 128, 77)
    with pytest.raises(gpu.GpuBenchError, match="use one of bag_of_ngrams, transformer"):
        gpu.plan(
            quick=True, gpus=[], model="an_image_net", batch=None, data_dir=None, finder_batch=None
        )
    if NO_GPU:
        with pytest.raises(gpu.GpuBenchError, match=r"No GPU found: .*transformer on 128 tokens"):
            gpu.plan(quick=False, gpus=[], model=None, batch=None, data_dir=None, finder_batch=None)


def test_one_quick_text_measurement_in_its_own_process():
    """A real measurement process: the quick float32 run trains on token ids and gives texts/s."""
    _, specs, _ = gpu.plan(
        quick=True, gpus=[], model=None, batch=None, data_dir=None, finder_batch=None
    )
    name, spec = specs[0]
    result = gpu.run_one(spec, timeout=120)
    assert name == "float32" and result.get("texts_per_second", 0) > 0, result
    assert gpu.examples_per_second(result) == result["texts_per_second"]


def test_a_quick_measurement_on_the_run_folders_own_texts(run_dir):
    """--data run: the run's own pipeline (length buckets) feeds the same measurement."""
    _, specs, _ = gpu.plan(
        quick=True, gpus=[], model=None, batch=8, data_dir=run_dir, finder_batch=None
    )
    result = gpu.run_one(specs[0][1], timeout=120)
    assert result.get("texts_per_second", 0) > 0, result


# ----------------------------------------------------------------------------- REST


class ServingOverRest(BaseHTTPRequestHandler):
    """TF Serving's REST predict route, answered by the export's serving_default (answer_rest)."""

    protocol_version = "HTTP/1.1"
    signature = None
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        answer = answer_rest(self.signature, body)
        data = json.dumps(answer).encode()
        self.send_response(400 if "error" in answer else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        """Quiet."""


@pytest.fixture
def rest_server(signature):
    ServingOverRest.signature = signature
    ServingOverRest.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ServingOverRest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_rest_bodies_are_strings_in_the_row_form_and_answered_with_class_names(
    run_dir, signature, rest_server
):
    """serve-bench's REST body for text: {"signature_name", "instances": [str, ...]}, plain JSON
    strings (no ids, no base64), a different batch of validation texts each turn; serving_default
    answers every one with probabilities and class names, so no request is an error."""
    examples = tasks.current().bench.serving_examples(run_dir, meta_of(run_dir), 12)
    params = bench.BenchParams(port=rest_server, concurrency=2, requests=12, batch=3)
    result = bench.run_bench(params, examples)
    assert (result["requests"], result["ok"], result["errors"]) == (12, 12, 0), result
    assert result["texts_per_second"] == pytest.approx(3 * result["qps"])
    assert result["distinct_requests"] == 4
    bodies = ServingOverRest.bodies
    assert all(set(body) == {"signature_name", "instances"} for body in bodies)
    assert {body["signature_name"] for body in bodies} == {"serving_default"}
    sent = [tuple(body["instances"]) for body in bodies]
    assert all(len(batch) == 3 and all(type(t) is str for t in batch) for batch in sent)
    assert set(sent) == {tuple(examples[i : i + 3].tolist()) for i in range(0, 12, 3)}
    answer = parse_rest_response(answer_rest(signature, bodies[0]))
    assert set(answer["class_names"]) <= set(CLASSES)
    assert np.asarray(answer["probabilities"]).shape == (3, len(CLASSES))


def test_serve_bench_cli_on_a_text_run_writes_texts_per_second(run_dir, rest_server, capsys):
    """`serve-bench` on a text run folder: it reads no image shape, sends the validation texts,
    and writes metrics/serve.json with the rate in texts/s."""
    argv = ["serve-bench", "--run-dir", str(run_dir), "--port", str(rest_server)]
    assert main([*argv, "--requests", "10", "--batch", "2"]) == 0, capsys.readouterr().err
    written = json.loads((run_dir / "metrics" / "serve.json").read_text())
    assert (written["ok"], written["errors"]) == (10, 0)
    assert "texts_per_second" in written and "images_per_second" not in written
    texts = set(validation_texts(run_dir))
    assert all(set(body["instances"]) <= texts for body in ServingOverRest.bodies)


# ----------------------------------------------------------------------------- gRPC


def test_grpc_requests_carry_a_string_tensor_answered_by_the_export(run_dir, signature):
    """serve-bench over gRPC: tensorflow-serving-api's PredictRequest, serialized and parsed back,
    holds a DT_STRING tensor [batch] of the UTF-8 texts under "text" for serving_default under the
    label; a PredictionService in this process runs the export on it and returns class names."""
    import grpc
    from tensorflow.core.framework import types_pb2
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    received = []

    class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
        def Predict(self, request, context):  # noqa: N802 - the gRPC method's name
            received.append(predict_pb2.PredictRequest.FromString(request.SerializeToString()))
            texts = tf.make_ndarray(request.inputs["text"])
            answer = predict_pb2.PredictResponse()
            for name, value in signature(text=tf.constant(texts)).items():
                answer.outputs[name].CopyFrom(tf.make_tensor_proto(value.numpy()))
            return answer

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    examples = tasks.current().bench.serving_examples(run_dir, meta_of(run_dir), 4)
    try:
        params = bench.BenchParams(
            port=port, protocol="grpc", concurrency=1, requests=4, batch=2, labels={"canary": 1.0}
        )
        result = bench.run_bench(params, examples)
    finally:
        server.stop(None)
    assert (result["requests"], result["ok"]) == (4, 4), result
    request = received[0]
    assert (request.model_spec.signature_name, request.model_spec.version_label) == (
        "serving_default",
        "canary",
    )
    assert set(request.inputs) == {"text"}
    tensor = request.inputs["text"]
    assert tensor.dtype == types_pb2.DT_STRING
    assert [d.size for d in tensor.tensor_shape.dim] == [2]
    sent = [[t.decode("utf-8") for t in tf.make_ndarray(r.inputs["text"])] for r in received]
    assert sent == [examples[:2].tolist(), examples[2:].tolist()] * 2


def test_a_batch_of_ids_is_refused_before_any_request(run_dir):
    """Token ids are not what serving_default takes: rest_payload's one sentence, nothing sent."""
    with pytest.raises(StepError, match="send a list of strings"):
        bench.run_bench(bench.BenchParams(port=1, requests=1), [[3, 4], [5, 6]])
{%- endif %}
