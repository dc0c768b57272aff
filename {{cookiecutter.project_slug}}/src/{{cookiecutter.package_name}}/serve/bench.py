"""`serve-bench`: a closed-loop load generator for TF Serving, over REST or gRPC.

`concurrency` workers each send one request, wait for its answer, and send the next, so the load
follows the server's pace (closed loop) instead of piling up. Every run is bounded twice: by a
request count and by a duration, whichever comes first, and each request by a timeout. Requests
go to a label (`stable`, `canary`) or are split between labels by weight, the way a caller does an
A/B test; the result counts requests, answers and errors per label. It only sends to the host it
is given (default 127.0.0.1). Figures measured against a stand-in server describe the client.

What a request carries comes from the task (tasks.current()): its serving_examples (random uint8
images, real validation texts), cut into a few batches that the requests take in turn; the REST
body is the task's rest_payload (images as columnar integers, texts as a row of strings) and the
gRPC request a PredictRequest holding one TensorProto of the raw batch (DT_UINT8, DT_STRING) under
the task's RAW_INPUT. The same code path sends every task's payload.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..tasks.outputs import SIGNATURE
from .config import LABELS
from .versions import MODEL_NAME, ServeError

PORTS = {"rest": 8501, "grpc": 8500}
LIMITS = {"concurrency": 256, "duration": 3600.0, "requests": 1_000_000, "batch": 1024}
BODIES = 16  # distinct request bodies at most, taken in turn ...
BODY_EXAMPLES = 256  # ... from this many examples at most (unless one batch is larger)
MAX_RANDOM_BYTES = 1 << 30  # random uint8 examples made from a shape: 1 GiB a batch at most
PROGRESS_EVERY = 1.0  # seconds between progress lines


@dataclass(frozen=True)
class BenchParams:
    """What one load test sends, where, and for how long."""

    host: str = "127.0.0.1"
    port: int | None = None  # None: 8501 for REST, 8500 for gRPC
    protocol: str = "rest"
    concurrency: int = 4
    duration: float = 10.0
    requests: int = 10_000
    batch: int = 1
    labels: dict[str, float] = field(default_factory=lambda: {"stable": 1.0})
    timeout: float = 10.0
    model_name: str = MODEL_NAME
    seed: int = 0


def check(params: BenchParams) -> None:
    """Refuse values outside their bounds in one sentence, before a request is sent."""
    if params.protocol not in PORTS:
        raise ServeError(f"protocol={params.protocol!r} is not allowed: use rest or grpc.")
    for name in ("concurrency", "requests", "batch"):
        value = getattr(params, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LIMITS[name]:
            raise ServeError(f"{name}={value!r} is not allowed: use 1 to {LIMITS[name]}.")
    for name, top in (("duration", LIMITS["duration"]), ("timeout", 600.0)):
        if not 0 < float(getattr(params, name)) <= top:
            raise ServeError(f"{name}={getattr(params, name)!r} is not allowed: use (0, {top:g}].")
    unknown = set(params.labels) - set(LABELS)
    weights = params.labels.values()
    if not params.labels or unknown or not all(0 < w < math.inf for w in weights):
        raise ServeError(
            f"labels {params.labels} are not allowed: use {' or '.join(LABELS)} with positive, "
            "finite weights, e.g. --label stable=9 --label canary=1."
        )
    if not params.host or "/" in params.host:
        raise ServeError(f"host={params.host!r} is not allowed: give a host name or address.")


def example_count(batch: int) -> int:
    """How many raw examples a load test of `batch` per request draws its bodies from."""
    return max(batch, min(batch * BODIES, BODY_EXAMPLES))


def request_batches(examples: Any, batch: int, seed: int = 0) -> list[np.ndarray]:
    """The batches the requests send in turn: `examples` (raw, as serving_default takes them:
    tasks.current().bench.serving_examples) cut into batches of `batch`, repeated when fewer; or,
    given a shape [d1, d2, ...] (whole numbers), random uint8 examples of that shape, one batch."""
    given = np.asarray(examples)
    if given.ndim == 1 and given.dtype.kind in "iu" and len(given):
        shape = (batch, *given.tolist())
        if min(shape) < 1 or math.prod(shape) > MAX_RANDOM_BYTES:
            raise ServeError(
                f"a batch of shape {shape} is not allowed as random uint8 examples: give a shape "
                f"of positive sides and at most {MAX_RANDOM_BYTES:,} values a batch, or the "
                "examples themselves."
            )
        return [np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)]
    if not len(given):
        raise ServeError("no examples to send: give the raw examples serving_default takes.")
    if len(given) < batch:
        given = given[np.arange(batch) % len(given)]
    return [given[start : start + batch] for start in range(0, len(given) - batch + 1, batch)]


def run_bench(
    params: BenchParams, examples: Any, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Send the load; return QPS, latency percentiles, errors and per-label counts. `examples`:
    the raw examples the requests carry (see request_batches)."""
    from ..tasks import current as task

    check(params)
    port = params.port or PORTS[params.protocol]
    batches = request_batches(examples, params.batch, params.seed)
    send = (rest_sender if params.protocol == "rest" else grpc_sender)(params, port, batches)
    names, weights = list(params.labels), list(params.labels.values())
    picker = random.Random(params.seed)
    lock = threading.Lock()
    records: list[tuple[str, float, str | None]] = []
    issued = [0]
    started = time.perf_counter()
    deadline = started + float(params.duration)

    def worker() -> None:
        client = send()  # one connection per worker, reused for all its requests
        while time.perf_counter() < deadline:
            with lock:
                if issued[0] >= params.requests:
                    return
                turn = issued[0] % len(batches)
                issued[0] += 1
                label = picker.choices(names, weights)[0]
            begin = time.perf_counter()
            error = client(label, turn)
            with lock:
                records.append((label, time.perf_counter() - begin, error))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(params.concurrency)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        until = time.perf_counter() + PROGRESS_EVERY
        for thread in threads:
            thread.join(timeout=max(0.0, until - time.perf_counter()))
        if progress is not None:
            with lock:
                snapshot = list(records)
            progress(progress_line(snapshot, time.perf_counter() - started))
    elapsed = time.perf_counter() - started
    return summarize(params, port, records, elapsed, noun=task().noun, bodies=len(batches))


def summarize(
    params: BenchParams,
    port: int,
    records: list[tuple[str, float, str | None]],
    elapsed: float,
    *,
    noun: str = "examples",
    bodies: int = 1,
) -> dict[str, Any]:
    """metrics/serve.json: what was sent, QPS, <noun>/s, latency p50/p95/p99 (ms), errors, per
    label."""
    ok = [seconds for _, seconds, error in records if error is None]
    errors = [error for _, _, error in records if error is not None]
    labels = {
        name: {
            "requests": sum(1 for label, _, _ in records if label == name),
            "errors": sum(1 for label, _, error in records if label == name and error),
        }
        for name in params.labels
    }
    latency = np.percentile(np.array(ok) * 1e3, [50, 95, 99]).tolist() if ok else [None] * 3
    return {
        "target": f"{params.protocol}://{params.host}:{port}",
        "params": {**asdict(params), "port": port},
        "requests": len(records),
        "ok": len(ok),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:3],
        "seconds": elapsed,
        "qps": len(ok) / elapsed if elapsed > 0 else 0.0,
        f"{noun}_per_second": len(ok) * params.batch / elapsed if elapsed > 0 else 0.0,
        "distinct_requests": bodies,
        "latency_ms": dict(zip(("p50", "p95", "p99"), latency, strict=True)),
        "labels": labels,
        "stopped_by": "requests" if len(records) >= params.requests else "duration",
    }


def progress_line(records: list[tuple[str, float, str | None]], elapsed: float) -> str:
    ok = [seconds for _, seconds, error in records if error is None]
    p50 = f"{np.median(ok) * 1e3:.1f} ms" if ok else "-"
    errors = len(records) - len(ok)
    return (
        f"{elapsed:6.1f} s  {len(records)} requests  {len(ok) / max(elapsed, 1e-9):.1f} QPS  "
        f"p50 {p50}  errors {errors}"
    )


def rest_sender(params: BenchParams, port: int, batches: list[np.ndarray]) -> Callable[[], Any]:
    """A factory of per-worker REST clients: keep-alive HTTP/1.1 to /labels/<label>:predict,
    each batch's body the task's rest_payload."""
    from ..tasks import current as task

    bodies = [json.dumps(task().export.rest_payload(batch)).encode("utf-8") for batch in batches]
    headers = {"Content-Type": "application/json"}

    def make() -> Callable[[str, int], str | None]:
        state = {"connection": None}

        def send(label: str, turn: int = 0) -> str | None:
            path = f"/v1/models/{params.model_name}/labels/{label}:predict"
            try:
                if state["connection"] is None:
                    state["connection"] = http.client.HTTPConnection(
                        params.host, port, timeout=params.timeout
                    )
                state["connection"].request("POST", path, bodies[turn], headers)
                answer = state["connection"].getresponse()
                text = answer.read()
            except (OSError, http.client.HTTPException) as error:
                if state["connection"] is not None:
                    state["connection"].close()
                state["connection"] = None
                return f"{type(error).__name__}: {error}"[:200]
            if answer.status != 200:
                return f"HTTP {answer.status}: {text[:120].decode('utf-8', 'replace')}"
            return None if b'"outputs"' in text or b'"predictions"' in text else "no outputs"

        return send

    return make


def grpc_request(params: BenchParams, batch: np.ndarray, label: str) -> Any:
    """TF Serving's PredictRequest for one raw batch: serving_default of the model under a
    version label, the batch as one TensorProto (uint8 images: DT_UINT8; texts: DT_STRING, UTF-8)
    under the task's RAW_INPUT."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    from ..tasks import current as task

    request = predict_pb2.PredictRequest()
    request.model_spec.name = params.model_name
    request.model_spec.signature_name = SIGNATURE
    request.model_spec.version_label = label
    names = batch.dtype.names  # a table's rows: one TensorProto per column
    for name in names or (task().export.raw_input,):
        request.inputs[name].CopyFrom(tf.make_tensor_proto(batch[name] if names else batch))
    return request


def grpc_sender(params: BenchParams, port: int, batches: list[np.ndarray]) -> Callable[[], Any]:
    """A factory of per-worker gRPC clients: PredictionService/Predict with a version label."""
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    requests = {label: [grpc_request(params, b, label) for b in batches] for label in params.labels}

    def make() -> Callable[[str, int], str | None]:
        channel = grpc.insecure_channel(f"{params.host}:{port}")
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def send(label: str, turn: int = 0) -> str | None:
            try:
                answer = stub.Predict(requests[label][turn], timeout=params.timeout)
            except grpc.RpcError as error:
                return f"gRPC {error.code().name}: {error.details()}"[:200]
            return None if answer.outputs else "no outputs"

        return send

    return make
