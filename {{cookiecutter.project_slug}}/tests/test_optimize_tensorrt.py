"""The TensorRT backends: what runs on any machine, the sentences when they cannot run, and the
real engine build where a GPU and the trt extra are present.

The ONNX that TensorRT is given (float32 input; Q/DQ int8 with symmetric scales) is checked on CPU
with ONNX Runtime, so a wrong graph is caught before a GPU ever sees it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import onnx
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import optimize, tasks
from {{ cookiecutter.package_name }}.optimize import core, onnx_backend, registry, tensorrt_engine, tf_trt
from {{ cookiecutter.package_name }}.optimize.onnx_backend import onnx_load, provider_options
from {{ cookiecutter.package_name }}.optimize.tensorrt_engine import (
    batch_profiles,
    builder_flags,
    engine_source,
    profile_index,
    tensorrt_load,
)

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
HAS_TRT = all(importlib.util.find_spec(name) for name in ("tensorrt", "polygraphy"))
HAS_GPU = bool(tf.config.list_physical_devices("GPU"))
TRT_BUILD = bool(tf.sysconfig.get_build_info().get("is_tensorrt_build", False))
needs_ort = pytest.mark.skipif(
    not HAS_ORT, reason="onnxruntime is not installed (pip install '.[onnx]')"
)


def test_each_batch_size_gets_a_profile_built_for_it() -> None:
    """One profile per batch size timed (and parity's 256), each with opt at its own batch."""
    shape = (8, 8, 1)
    profiles = batch_profiles(optimize.Job(Path("."), "fp32", (1, 32)), shape)
    assert [(p["min"][0], p["opt"][0], p["max"][0]) for p in profiles] == [
        (1, 1, 1),
        (1, 32, 32),
        (1, 256, 256),
    ]
    assert batch_profiles(optimize.Job(Path("."), "fp32", (1, 1024)), shape)[-1]["max"] == (
        1024,
        8,
        8,
        1,
    )
    assert [profile_index((1, 32, 256), batch) for batch in (1, 2, 32, 33, 256)] == [0, 1, 1, 2, 2]


@pytest.fixture
def fake_polygraphy(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[int], list[tuple[tuple[int, ...], np.dtype]]]:
    """polygraphy's TensorRT runner, stood in for: the profiles it is switched to and the shape
    and dtype of each batch it is fed, in order (it answers zeros for 3 classes)."""
    switched: list[int] = []
    fed: list[tuple[tuple[int, ...], np.dtype]] = []

    class Runner:
        def __init__(self, engine: object) -> None:
            pass

        def activate(self) -> None:
            pass

        def deactivate(self) -> None:
            pass

        def set_profile(self, index: int) -> None:
            switched.append(index)

        def infer(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            batch = next(iter(feed.values()))
            fed.append((batch.shape, batch.dtype))
            return {"probabilities": np.zeros((len(batch), 3), np.float32)}

    trt = ModuleType("polygraphy.backend.trt")
    trt.TrtRunner, trt.EngineFromBytes = Runner, lambda data: data  # type: ignore[attr-defined]
    common = ModuleType("polygraphy.backend.common")
    common.BytesFromPath = lambda path: path  # type: ignore[attr-defined]
    for name, module in {
        "polygraphy": ModuleType("polygraphy"),
        "polygraphy.backend": ModuleType("polygraphy.backend"),
        "polygraphy.backend.trt": trt,
        "polygraphy.backend.common": common,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    return switched, fed


def test_the_engine_runs_each_batch_on_its_own_profile(
    fake_polygraphy: tuple[list[int], list], tmp_path: Path
) -> None:
    """predict switches the runner to the profile built for the batch before inferring."""
    switched, fed = fake_polygraphy
    predict = tensorrt_load(tmp_path / "model.engine", optimize.Job(tmp_path, "fp32", (1, 32)))
    for size in (1, 32, 32, 256, 1):
        assert predict(np.zeros((size, 8, 8, 1), np.uint8)).shape == (size, 3)
    assert [shape for shape, _ in fed] == [(size, 8, 8, 1) for size in (1, 32, 32, 256, 1)]
    assert switched == [1, 2, 0]  # profile 0 (batch 1) is the runner's own at the start


@pytest.mark.parametrize(
    ("precision", "flags"),
    [
        ("fp32", {"fp16": False, "int8": False}),
        ("fp16", {"fp16": True, "int8": False}),
        ("int8", {"fp16": False, "int8": True}),
    ],
)
def test_builder_flags_follow_the_precision(precision: str, flags: dict[str, bool]) -> None:
    assert builder_flags(precision) == flags


@needs_ort
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_engine_source_computes_what_the_savedmodel_does(
    exported_run: Path, precision: str
) -> None:
    """The ONNX the engine is built from takes float32 and agrees with the SavedModel. It is run
    node by node in float (no fusion into ONNX Runtime's integer CPU kernels, whose rounding
    differs between CPUs): this checks the graph TensorRT is given, on any CPU."""
    import onnxruntime

    source = engine_source(optimize.Job(exported_run, precision))
    graph = onnx.load(str(source)).graph
    assert graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    images = tasks.current().examples(exported_run, "validation", 64, form="model")[0]
    expected = onnx_load(
        exported_run / "optimized" / "model_fp32.onnx", optimize.Job(exported_run, "fp32")
    )(images)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(source), options, ["CPUExecutionProvider"])
    got = session.run(None, {graph.input[0].name: images.astype(np.float32)})[0]
    tolerance = optimize.PRECISION_TOLERANCE[precision]
    assert float(np.abs(got - expected).max()) <= tolerance
    assert np.mean(got.argmax(-1) == expected.argmax(-1)) == 1.0


@needs_ort
def test_int8_engine_source_is_symmetric_signed(exported_run: Path) -> None:
    """TensorRT takes only symmetric int8 Q/DQ: every zero point is an int8 zero."""
    zeros = zero_points(engine_source(optimize.Job(exported_run, "int8")))
    assert zeros and all(zero.dtype == np.int8 and not zero.any() for zero in zeros)


@needs_ort
def test_int8_engine_source_dequantizes_only_8_bit_values(exported_run: Path) -> None:
    """TensorRT's ONNX parser takes DequantizeLinear only on 8-bit (or narrower) inputs: biases
    stay float32, not the quantizer's default int32 (onnx-tensorrt operator support)."""
    job = optimize.Job(exported_run, "int8", calibration_examples=64)
    model = onnx.load(str(engine_source(job)))
    types = {init.name: init.data_type for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear":
            types[node.output[0]] = types[node.input[2]]
    dequantize = [node for node in model.graph.node if node.op_type == "DequantizeLinear"]
    inputs = [types.get(node.input[0]) for node in dequantize]
    assert inputs and set(inputs) <= {onnx.TensorProto.INT8, onnx.TensorProto.UINT8}, inputs


def zero_points(path: Path) -> list[np.ndarray]:
    """The zero points of every QuantizeLinear node of an ONNX graph."""
    model = onnx.load(str(path))
    weights = {init.name: init for init in model.graph.initializer}
    return [
        onnx.numpy_helper.to_array(weights[node.input[2]])
        for node in model.graph.node
        if node.op_type == "QuantizeLinear" and len(node.input) > 2
    ]


@needs_ort
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_onnx_runtime_tensorrt_provider_is_told_the_precision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, precision: str
) -> None:
    """Where onnxruntime-gpu has TensorRT, its provider gets the precision and an engine cache."""
    providers = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: providers)
    job = optimize.Job(tmp_path, precision)
    job.out_dir.mkdir()
    (job.out_dir / f"model_{precision}.onnx").write_bytes(b"weights")
    chosen = provider_options(job)
    assert chosen[1][0] == providers[1] and chosen[2] == providers[2]
    name, options = chosen[0]
    assert name == "TensorrtExecutionProvider"
    assert options["trt_fp16_enable"] == (precision == "fp16")
    assert options["trt_int8_enable"] == (precision == "int8")
    cache = Path(str(options["trt_engine_cache_path"]))
    assert cache.parent == tmp_path / "optimized" / "ort_trt_cache"


@needs_ort
def test_tensorrt_engine_cache_follows_the_weights(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A retrained model keeps its file name; its engines must not be the old model's."""
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["TensorrtExecutionProvider"])
    job = optimize.Job(tmp_path, "fp32")
    job.out_dir.mkdir()
    model = job.out_dir / "model_fp32.onnx"

    def cache_for(weights: bytes) -> object:
        model.write_bytes(weights)
        return provider_options(job, model)[0][1]["trt_engine_cache_path"]

    first = cache_for(b"weights before retraining")
    assert cache_for(b"weights after retraining") != first
    assert cache_for(b"weights before retraining") == first


def tiny_onnx(path: Path) -> Path:
    """An ONNX graph taking uint8 images [N, 8, 8, 1] named like the export's input."""
    node = onnx.helper.make_node("Identity", ["images"], ["probabilities"])
    graph = onnx.helper.make_graph(
        [node],
        "tiny",
        [onnx.helper.make_tensor_value_info("images", onnx.TensorProto.UINT8, ["N", 8, 8, 1])],
        [onnx.helper.make_tensor_value_info("probabilities", onnx.TensorProto.UINT8, None)],
    )
    onnx.save(onnx.helper.make_model(graph), str(path))
    return path


class RecordingSession:
    """onnxruntime.InferenceSession as far as onnx_load uses it. Like the TensorRT provider's
    constructor, it creates only the last folder of trt_engine_cache_path (fs::create_directory)
    and falls back to the next provider when that fails."""

    made: list[RecordingSession] = []

    def __init__(self, path: str, providers: list) -> None:
        self.providers, self.ran = providers, 0
        self.running = [p if isinstance(p, str) else p[0] for p in providers]
        for name, options in (p for p in providers if not isinstance(p, str)):
            cache = options.get("trt_engine_cache_path")
            if name == "TensorrtExecutionProvider" and cache:
                try:
                    Path(str(cache)).mkdir(exist_ok=True)  # no parents=True, like the provider
                except FileNotFoundError:
                    self.running.remove(name)
        RecordingSession.made.append(self)

    def get_inputs(self) -> list:
        return [SimpleNamespace(name="images")]

    def get_providers(self) -> list[str]:
        return self.running

    def run(self, outputs: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.ran += 1
        return [feed["images"]]


@pytest.fixture
def recorded_sessions(monkeypatch: pytest.MonkeyPatch) -> list[RecordingSession]:
    providers = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: providers)
    fake = ModuleType("onnxruntime")
    fake.InferenceSession = RecordingSession  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    monkeypatch.setattr(RecordingSession, "made", [])
    return RecordingSession.made


def test_tensorrt_provider_loads_with_its_engine_cache_folder(
    recorded_sessions: list[RecordingSession], tmp_path: Path
) -> None:
    """The cache folder is two levels below optimized/: made before the session, or the
    provider throws and ONNX Runtime falls back to CUDA."""
    job = optimize.Job(tmp_path, "fp32", (1,))
    model = tiny_onnx(tmp_path / "model_fp32.onnx")
    predict = onnx_load(model, job)
    assert all("TensorrtExecutionProvider" in s.get_providers() for s in recorded_sessions)
    assert predict.reason.startswith("ONNX Runtime on TensorrtExecutionProvider, ")
    for session in recorded_sessions:
        assert Path(session.providers[0][1]["trt_engine_cache_path"]).is_dir()


def test_onnx_runtime_times_each_batch_on_a_profile_built_for_it(
    recorded_sessions: list[RecordingSession], tmp_path: Path
) -> None:
    """One session per batch size, each with an explicit TensorRT profile whose opt is that batch
    and an engine cache of its own; a batch runs on the smallest profile that holds it."""
    job = optimize.Job(tmp_path, "fp32", (1, 32))
    predict = onnx_load(tiny_onnx(tmp_path / "model_fp32.onnx"), job)
    options = [session.providers[0][1] for session in recorded_sessions]
    assert [o["trt_profile_opt_shapes"] for o in options] == [
        "images:1x8x8x1",
        "images:32x8x8x1",
        "images:256x8x8x1",
    ]
    assert {o["trt_profile_min_shapes"] for o in options} == {"images:1x8x8x1"}
    assert [o["trt_profile_max_shapes"] for o in options] == [
        o["trt_profile_opt_shapes"] for o in options
    ]
    assert len({o["trt_engine_cache_path"] for o in options}) == 3
    for size in (1, 32, 20, 256):
        predict(np.zeros((size, 8, 8, 1), np.uint8))
    assert [session.ran for session in recorded_sessions] == [1, 2, 1]


RANGES = ((1, 8), (9, 16))  # two length buckets of token ids, as a text task's length_ranges


def test_token_ids_get_a_profile_per_batch_size_and_length_bucket(
    monkeypatch: pytest.MonkeyPatch, recorded_sessions: list[RecordingSession], tmp_path: Path
) -> None:
    """A task with length buckets: the engine gets a profile per batch size and bucket (fewest
    tokens at min, most at opt and max), ONNX Runtime's provider a session per pair with its own
    engine cache, and a batch runs cut to its bucket on the smallest size that holds it."""
    job = optimize.Job(tmp_path, "fp32", (1, 32))
    profiles = [(p["min"], p["opt"], p["max"]) for p in batch_profiles(job, (0,), RANGES)]
    assert profiles == [
        ((1, 1), (size, 8), (size, 8)) if first else ((1, 9), (size, 16), (size, 16))
        for size in (1, 32, 256)
        for first in (True, False)
    ]
    assert [
        profile_index((1, 32, 256), n, bucket, 2) for n, bucket in ((1, 1), (20, 0), (300, 1))
    ] == [1, 2, 5]
    monkeypatch.setattr(onnx_backend, "length_ranges", lambda run_dir: RANGES)
    predict = onnx_load(tiny_onnx(tmp_path / "model_fp32.onnx"), job)
    options = [session.providers[0][1] for session in recorded_sessions]
    shapes = [(o["trt_profile_min_shapes"], o["trt_profile_opt_shapes"]) for o in options]
    assert shapes[2:4] == [("images:1x1", "images:32x8"), ("images:1x9", "images:32x16")]
    assert [o["trt_profile_max_shapes"] for o in options] == [
        o["trt_profile_opt_shapes"] for o in options
    ]
    assert len({o["trt_engine_cache_path"] for o in options}) == 6
    ids = np.zeros((20, 16), np.int64)
    ids[:, :3] = 5
    assert predict(ids).shape == (20, 8)  # the session is given the ids cut to 8 tokens
    ids[0, 12] = 7
    assert predict(ids).shape == (20, 16)
    assert [session.ran for session in recorded_sessions] == [0, 0, 1, 1, 0, 0]


def test_the_engine_runs_token_ids_cut_to_their_buckets_profile(
    monkeypatch: pytest.MonkeyPatch, fake_polygraphy: tuple[list[int], list], tmp_path: Path
) -> None:
    """Ids keep their int64 (no float cast as for images) and each batch switches the runner to
    the profile of its size and bucket."""
    switched, fed = fake_polygraphy
    monkeypatch.setattr(tensorrt_engine, "length_ranges", lambda run_dir: RANGES)
    predict = tensorrt_load(tmp_path / "model.engine", optimize.Job(tmp_path, "fp32", (1, 32)))
    short, long = np.zeros((1, 16), np.int32), np.zeros((32, 16), np.int32)
    short[0, :4], long[3, :11] = 9, 9
    for batch in (short, long, short):
        assert predict(batch).shape == (len(batch), 3)
    assert fed == [((1, 8), np.int64), ((32, 16), np.int64), ((1, 8), np.int64)]
    assert switched == [3, 0]  # 32 ids of up to 11 tokens: size 1 of 3, bucket 1 of 2; then 0


def test_a_token_ids_engine_is_not_built_in_int8_and_tf_trt_not_on_strings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """int8 of an ids engine is refused in one sentence before anything is looked for; TF-TRT,
    which converts serving_default, says it cannot take a signature of strings."""
    ids_task = SimpleNamespace(
        export=SimpleNamespace(length_ranges=lambda meta: RANGES, raw_strings=True)
    )
    monkeypatch.setattr(tensorrt_engine, "current", lambda: ids_task)
    ok, reason = optimize.BACKEND_TABLE["tensorrt"].available("int8")
    assert not ok and reason.startswith("int8 of a token-ids engine is not built")
    assert_one_sentence(reason)
    ok, reason = optimize.BACKEND_TABLE["tensorrt"].available("fp16")
    assert not reason.startswith("int8")  # fp16 goes on to the packages and the GPU
    monkeypatch.setattr(tf_trt, "current", lambda: ids_task)
    ok, reason = optimize.BACKEND_TABLE["tf_trt"].available("fp32")
    assert not ok and reason.startswith("TF-TRT would convert serving_default, which takes strings")


@pytest.mark.parametrize(("precision", "tf32"), [("fp32", 0), ("fp16", 1), ("int8", 1)])
def test_cuda_provider_keeps_tf32_off_for_fp32(
    recorded_sessions: list[RecordingSession], tmp_path: Path, precision: str, tf32: int
) -> None:
    """fp32 is compared with the SavedModel at float32's tolerance: TF32 would exceed it."""
    job = optimize.Job(tmp_path, precision, (1,))
    onnx_load(tiny_onnx(tmp_path / f"model_{precision}.onnx"), job)
    assert recorded_sessions[0].providers[1] == ("CUDAExecutionProvider", {"use_tf32": tf32})


@needs_ort
def test_a_provider_that_fell_back_is_reported_not_claimed(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry names session.get_providers(), and a provider asked for that did not load."""
    asked = ["CUDAExecutionProvider", "CPUExecutionProvider"]  # CUDA cannot load on this CPU
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: asked)
    images = tasks.current().examples(exported_run, "validation", 8, form="model")[0]
    job = optimize.Job(exported_run, "fp32")
    expected = onnx_load(onnx_backend.export_onnx(exported_run, job.out_dir), job)(images)
    labels = np.zeros(len(images), np.int64)
    entry = core.run_backend(optimize.BACKEND_TABLE["onnx"], job, images, (expected, labels), 1e-6)
    assert entry["status"] == "ran"
    assert entry["reason"] == (
        "ONNX Runtime on CPUExecutionProvider; CUDAExecutionProvider was asked for but did not "
        "load, so ONNX Runtime fell back (its log says why)."
    )


@needs_ort
def test_onnx_int8_is_symmetric_when_tensorrt_runs_it(
    exported_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime's CPU provider gets unsigned activations; its TensorRT provider signed ones."""
    job = optimize.Job(exported_run, "int8", calibration_examples=64)
    cpu = zero_points(onnx_backend.onnx_convert(job))
    assert any(zero.dtype == np.uint8 for zero in cpu)
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["TensorrtExecutionProvider"])
    trt = zero_points(onnx_backend.onnx_convert(job))
    assert trt and all(zero.dtype == np.int8 and not zero.any() for zero in trt)


@pytest.mark.skipif(HAS_TRT and HAS_GPU, reason="TensorRT and a GPU are here: the engine builds")
def test_tensorrt_skips_with_one_sentence() -> None:
    """Without the trt extra or a GPU the tensorrt backend is skipped, saying which."""
    ok, reason = optimize.BACKEND_TABLE["tensorrt"].available("fp32")
    assert not ok
    if not HAS_TRT:
        assert reason.endswith("is not installed (pip install '.[trt]').")
    else:
        assert reason == "no GPU visible."


@pytest.mark.skipif(TRT_BUILD, reason="this TensorFlow is a TensorRT build")
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_tf_trt_skips_without_a_tensorrt_build(precision: str) -> None:
    """pip TensorFlow >= 2.18 has no TensorRT: tf_trt says exactly that."""
    ok, reason = optimize.BACKEND_TABLE["tf_trt"].available(precision)
    assert (ok, reason) == (False, "this TensorFlow was built without TensorRT.")


def test_both_tensorrt_backends_are_offered() -> None:
    """Baked with TensorRT, the package has both modules, so both backends are offered."""
    assert {"tensorrt_engine", "tf_trt"} <= set(registry.backend_modules())
    assert set(registry.backend_table()) == set(optimize.BACKENDS) == {"onnx", "tensorrt", "tf_trt"}
    assert optimize.Params().backends == "onnx,tensorrt,tf_trt"  # the notebook's default


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRT, reason="the trt extra is not installed (pip install '.[trt]')")
def test_tensorrt_engine_builds_runs_and_agrees(exported_run: Path) -> None:
    """On a GPU with the trt extra: fp32, fp16 and int8 engines build, serialize and agree."""
    params = optimize.Params("tensorrt", "fp32,fp16,int8", "1,4", iterations=5)
    result = optimize.optimize(exported_run, params)
    for line in result["backends"]:
        assert line["status"] == "ran", line["reason"]
        engine = exported_run / "optimized" / f"model_{line['precision']}.engine"
        assert Path(line["artifact"]) == engine and engine.stat().st_size > 0
        assert line["parity_ok"], line["verdict"]


@pytest.mark.gpu
@pytest.mark.skipif(not TRT_BUILD, reason="this TensorFlow was built without TensorRT")
def test_tf_trt_converts_and_agrees(exported_run: Path) -> None:
    """On a TensorRT build of TensorFlow with a GPU: TF-TRT fp32, fp16 and int8 agree."""
    params = optimize.Params("tf_trt", "fp32,fp16,int8", "1,4", iterations=5)
    result = optimize.optimize(exported_run, params)
    for line in result["backends"]:
        assert line["status"] == "ran" and line["parity_ok"], line["reason"]


def test_tensorrts_fp32_under_onnx_runtime_is_held_to_the_tf32_tolerance() -> None:
    """ONNX Runtime's TensorRT provider computes fp32 in TF32 with no switch to turn it off
    (onnxruntime#26029), so 1e-5 would fail every run there: its fp32 gets the fp16 tolerance
    and the run's tolerance says it; CUDA's and the CPU's fp32 keep 1e-5. The logic only: no GPU
    has run the TensorRT provider here."""
    from {{ cookiecutter.package_name }}.optimize.base import Backend, Job
    from {{ cookiecutter.package_name }}.optimize.ort_engine import tf32_tolerance

    trt = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    assert tf32_tolerance("fp32", trt) == optimize.PRECISION_TOLERANCE["fp16"] == 1e-2
    assert tf32_tolerance("fp32", trt[1:]) == tf32_tolerance("fp16", trt) == 0

    expected = np.full((4, 10), 0.1, np.float32)

    def load(path: Path, job: Job):
        def predict(batch: np.ndarray) -> np.ndarray:
            return expected[: len(batch)] + 3e-3  # as far as TF32 moves the smoke model

        predict.tolerance = tf32_tolerance(job.precision, trt)  # type: ignore[attr-defined]
        return predict

    backend = Backend("onnx", lambda precision: (True, ""), lambda job: Path("m.onnx"), load)
    images, labels = np.zeros((4, 8, 8, 1), np.uint8), np.zeros(4, np.int64)
    entry = core.run_backend(backend, Job(Path("."), "fp32"), images, (expected, labels), 1e-5)
    assert entry["status"] == "ran", entry["reason"]
    assert entry["tolerance"] == 1e-2 and entry["parity_ok"]
