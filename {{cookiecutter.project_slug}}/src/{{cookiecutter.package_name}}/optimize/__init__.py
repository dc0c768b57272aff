"""Optimized inference: ONNX Runtime everywhere, other backends where present, measured honestly.

Every backend converts the trained model into run_dir/optimized/, predicts the validation examples
and is compared with the SavedModel signature of 04_export (the reference a server would use). A
backend whose probabilities differ by more than its precision allows is `failed` and is never
counted as a win; a backend the machine cannot run is `skipped` with one sentence saying why. The
benchmark times `model.predict`, the SavedModel signature called directly and each backend that
ran: warm-up first, then timed calls for a number of calls or a time budget: batch-1 latency (p50;
p99 from 100 calls up) and throughput from the median call at every batch size.

    from <package> import optimize
    params = optimize.Params(backends="onnx", precisions="fp32,int8")
    optimize.check(run_dir, params)            # values, inputs, a stale export: one sentence
    metrics = optimize.run(run_dir, params)    # measures, writes metrics/optimize.json

Modules: `params` (Params, check: the contract), `core` (the step), `base` (the interface),
`registry` (the backends present), `timing` (the benchmark and what its figures may claim),
`calibration` (int8 data, its format for this machine, quantization), `judge` (parity: the
same model or not counted), and one module per backend (`onnx_backend`, and
those of the optional parts this project holds).
"""

from ..env.devices import configure_memory_growth
from .base import (
    CALIBRATION_EXAMPLES,
    Job,
    OptimizeError,
    Predict,
)
from .core import (
    optimize,
    overhead_sentence,
    results_table,
    run,
    skip_sentences,
)
from .judge import INT8_RULE, PRECISION_TOLERANCE, int8_sentences, parity
from .params import Params, check, plan
from .registry import BACKEND_TABLE, BACKENDS
from .timing import benchmark, preprocess_sentences

# This step's TensorFlow shares the GPU with ONNX Runtime and the other backends: grow GPU
# memory as needed, not reserve nearly all of it at the first op. On import, so before any op
# of a notebook or the CLI (TF_FORCE_GPU_ALLOW_GROWTH does it only where it is set).
MEMORY_GROWTH = configure_memory_growth()

__all__ = [
    "BACKENDS",
    "BACKEND_TABLE",
    "CALIBRATION_EXAMPLES",
    "INT8_RULE",
    "PRECISION_TOLERANCE",
    "Job",
    "OptimizeError",
    "Params",
    "Predict",
    "benchmark",
    "check",
    "int8_sentences",
    "optimize",
    "overhead_sentence",
    "preprocess_sentences",
    "parity",
    "plan",
    "results_table",
    "run",
    "skip_sentences",
]
