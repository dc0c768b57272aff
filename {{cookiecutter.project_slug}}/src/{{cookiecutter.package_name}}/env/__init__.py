"""Step 0, the environment check: what this machine offers TensorFlow, measured rather than assumed.

A GPU project fails in dull ways: a driver too old for the CUDA that TensorFlow was built with, a
Python the wheel does not support, one process reserving all GPU memory. This package finds those
before training does. On a machine without a GPU it says so and measures the CPU instead.

    devices     memory growth, the GPUs and their compute capability
    versions    build info, the NVIDIA driver, the TensorFlow/CUDA compatibility table
    precision   which precision each device runs fast, the one policy for a run
    timing      an XLA compile and a matmul timing per device
    report      the whole report, its text for `doctor`, the verdict
    entry       the step contract: Params, check, run

Order matters: call `configure_memory_growth()` before anything else runs a TensorFlow op.
"""

from .devices import configure_memory_growth, list_gpus
from .entry import Params, check, run
from .precision import (
    mixed_precision_support,
    precision_support,
    recommended_policy,
)
from .report import collect_report, format_report, verdict
from .timing import EnvError, check_matmul_parameters, describe_matmul
from .versions import (
    COMPATIBILITY,
    check_compatibility,
    compatibility_table_markdown,
    driver_info,
    parse_nvidia_smi,
)

__all__ = [
    "COMPATIBILITY",
    "EnvError",
    "Params",
    "check",
    "check_compatibility",
    "check_matmul_parameters",
    "collect_report",
    "compatibility_table_markdown",
    "configure_memory_growth",
    "describe_matmul",
    "driver_info",
    "format_report",
    "list_gpus",
    "mixed_precision_support",
    "parse_nvidia_smi",
    "precision_support",
    "recommended_policy",
    "run",
    "verdict",
]
