"""What the ONNX backend says about GPU sessions, checked on the CPU with fakes: the provider list
and the task's kind of int8 are monkeypatched, since no GPU runs these tests (the real sessions
run only where 05_optimize meets a GPU)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }}.optimize import onnx_backend

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
    monkeypatch.setattr(onnx_backend, "current", lambda: SimpleNamespace(INT8="dynamic"))
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
    monkeypatch.setattr(onnx_backend, "current", lambda: SimpleNamespace(INT8="dynamic"))
    monkeypatch.setattr(onnx_backend, "onnx_providers", lambda: ["CPUExecutionProvider"])
    assert onnx_backend.onnx_available("int8")[0]
    monkeypatch.setattr(onnx_backend, "current", lambda: SimpleNamespace(INT8="static"))
    monkeypatch.setattr(
        onnx_backend, "onnx_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    assert onnx_backend.onnx_available("int8")[0]
