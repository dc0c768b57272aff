"""What the ONNX backend says about GPU sessions, checked on the CPU with fakes: the provider list
and the task's kind of int8 are monkeypatched, since no GPU runs these tests (the real sessions
run only where 05_optimize meets a GPU)."""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.optimize import core, onnx_backend

needs_ort = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in onnx_backend.PACKAGES),
    reason="the onnx extra is not installed (pip install '.[onnx]')",
)


@needs_ort
@pytest.mark.parametrize(
    "providers",
    [
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
    ],
)
def test_dynamic_int8_is_skipped_on_a_gpu_session(
    monkeypatch: pytest.MonkeyPatch, providers: list[str]
) -> None:
    """Dynamic int8 (text, tables) would run MatMulInteger on the CPU under a GPU provider's
    name: it is skipped with the reason; fp32 and fp16 still run there."""
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: providers)
    monkeypatch.setattr(onnx_backend, "current", lambda: int8_task("dynamic"))
    ok, reason = onnx_backend.onnx_available("int8")
    assert not ok
    assert reason.startswith("dynamic int8 runs MatMulInteger on the CPU inside a GPU session: ")
    assert providers[0] in reason
    assert_one_sentence(reason)
    assert onnx_backend.onnx_available("fp32")[0] and onnx_backend.onnx_available("fp16")[0]


@needs_ort
def test_dynamic_int8_runs_on_the_cpu_provider_and_static_int8_on_a_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the combination is skipped: dynamic int8 on the CPU provider, static Q/DQ int8
    (images) on CUDA."""
    monkeypatch.setattr(onnx_backend, "current", lambda: int8_task("dynamic"))
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["CPUExecutionProvider"])
    assert onnx_backend.onnx_available("int8")[0]
    monkeypatch.setattr(onnx_backend, "current", lambda: int8_task("static"))
    monkeypatch.setattr(
        onnx_backend, "onnx_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    assert onnx_backend.onnx_available("int8")[0]


TEXT_GPU_PLAN = {  # the text task's GPU profile, as params.plan gives it
    "backends": ["onnx", "tensorrt"],
    "precisions": ["fp32", "fp16", "int8"],
    "batch_sizes": [1, 32, 256],
}
BUCKETS = ((1, 8), (9, 16), (17, 32), (33, 64))  # max_tokens 64's length buckets


@needs_ort
def test_the_engines_per_precision_are_counted_before_the_step_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fake plan (text's GPU profile) under a fake TensorRT provider: 3 batch sizes x 4 length
    buckets is 12 engines per precision, said in one line with why; dynamic int8 is not counted
    (it is skipped on a GPU session)."""
    part = SimpleNamespace(
        PROVIDER="TensorrtExecutionProvider", NAME="ONNX Runtime's TensorRT provider"
    )
    monkeypatch.setattr(onnx_backend, "engine", lambda: part)
    monkeypatch.setattr(
        onnx_backend, "onnx_providers", lambda: [part.PROVIDER, "CPUExecutionProvider"]
    )
    monkeypatch.setattr(onnx_backend, "current", lambda: int8_task("dynamic"))
    monkeypatch.setattr(onnx_backend, "length_ranges", lambda run_dir: BUCKETS)
    note = onnx_backend.engine_plan_note(tmp_path, TEXT_GPU_PLAN)
    assert note.startswith(
        "ONNX Runtime's TensorRT provider will build 12 engines per precision (fp32, fp16): one "
        "per batch size (1, 32, 256) times length bucket (up to 8, 16, 32, 64 tokens)"
    )
    assert "first profile" in note
    assert_one_sentence(note)
    # no buckets (images, tables), no engine provider, or ONNX not asked for: nothing to say
    assert not onnx_backend.engine_plan_note(tmp_path, {**TEXT_GPU_PLAN, "backends": ["tensorrt"]})
    monkeypatch.setattr(onnx_backend, "length_ranges", lambda run_dir: None)
    assert not onnx_backend.engine_plan_note(tmp_path, TEXT_GPU_PLAN)
    monkeypatch.setattr(onnx_backend, "length_ranges", lambda run_dir: BUCKETS)
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["CPUExecutionProvider"])
    assert not onnx_backend.engine_plan_note(tmp_path, TEXT_GPU_PLAN)


def test_optimize_prints_the_engine_count_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The step prints the note right after its plan, before it loads anything."""

    class Stop(Exception):
        pass

    def stop(*args: object) -> None:
        raise Stop

    monkeypatch.setattr(core, "check", lambda folder, params: None)
    monkeypatch.setattr(
        core,
        "plan",
        lambda folder, params: {
            **TEXT_GPU_PLAN,
            "export_dir": tmp_path,
            "iterations": 1,
            "seconds": 1.0,
        },
    )
    monkeypatch.setattr(
        core, "engine_plan_note", lambda folder, request: "12 engines per precision."
    )
    monkeypatch.setattr(core, "read_meta", stop)
    quiet_task = contextlib.nullcontext(SimpleNamespace(note=lambda *args, **kwargs: None))
    monkeypatch.setattr(core.progress, "task", lambda *args, **kwargs: quiet_task)
    with pytest.raises(Stop):
        core.optimize(tmp_path, core.Params(), verbose=True)
    assert capsys.readouterr().out.splitlines()[0] == "12 engines per precision."


def int8_task(kind: str) -> SimpleNamespace:
    """A task whose export quantizes int8 `kind`ly ("dynamic" or "static")."""
    return SimpleNamespace(export=SimpleNamespace(int8=kind))
