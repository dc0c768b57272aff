"""Optimized inference: ONNX Runtime everywhere, TensorRT where the machine can, measured honestly.

Every backend converts the trained model into run_dir/optimized/, predicts the validation images
and is compared with the SavedModel signature of 04_export (the reference a server would use). A
backend whose probabilities differ by more than its precision allows is `failed` and is never
counted as a win; a backend the machine cannot run is `skipped` with one sentence saying why. The
benchmark times `model.predict`, the SavedModel signature called directly and each backend that
ran: warm-up first, then batch-1 latency (p50, p99) and throughput at larger batches.

Modules: `core` (the step), `base` (the interface), `calibration` (int8 data), and one module per
backend: `onnx_backend`, `tensorrt_engine`, `tf_trt`.
"""

from .base import (
    CALIBRATION_EXAMPLES,
    OPTIMIZED_FOLDER,
    PRECISIONS,
    Backend,
    Job,
    OptimizeError,
    Predict,
    latest_export,
)
from .core import (
    BACKEND_TABLE,
    BACKENDS,
    PRECISION_TOLERANCE,
    benchmark,
    best_ratios,
    check_optimize,
    optimize,
    parity,
    predict_all,
    results_table,
    skip_sentences,
)

__all__ = [
    "BACKENDS",
    "BACKEND_TABLE",
    "CALIBRATION_EXAMPLES",
    "OPTIMIZED_FOLDER",
    "PRECISIONS",
    "PRECISION_TOLERANCE",
    "Backend",
    "Job",
    "OptimizeError",
    "Predict",
    "benchmark",
    "best_ratios",
    "check_optimize",
    "latest_export",
    "optimize",
    "parity",
    "predict_all",
    "results_table",
    "skip_sentences",
]
