"""The seed's claims, kept as data, and the published figures of the task's reference model.

A claim is confirmed only by a measurement on a GPU: on a CPU every ratio is still measured and
shown (it proves the code path), but it says nothing about what a GPU does.
"""

from __future__ import annotations

from ..seam import task_module

# Every seed claim: what is measured, the smallest figure that confirms it, and its unit.
#   key         the measured figure in gpu_bench.json's "measured"
#   minimum     the claim holds when measured >= minimum
CLAIMS = (
    {
        "claim": "amp_speedup",
        "says": "mixed precision trains 2-3x faster",
        # Like the published figures: XLA on both sides (mixed_float16 + XLA / float32 + XLA).
        "key": "mixed_float16_xla_vs_float32_xla",
        "minimum": 2.0,
        "unit": "x",
    },
    {
        "claim": "amp_memory",
        "says": "mixed precision uses ~40 % less memory",
        "key": "memory_saving",
        "minimum": 0.35,  # ~40 %, five points of tolerance
        "unit": "share",
    },
    {
        "claim": "multi_gpu_scaling",
        "says": "MirroredStrategy reaches 90 %+ linear scaling (8 A100s)",
        # float32 + XLA on N GPUs against float32 + XLA on one, as the published weak scaling.
        "key": "scaling_efficiency",
        "minimum": 0.90,
        "unit": "share",
    },
    {
        "claim": "tensorrt_throughput",
        "says": "TensorRT adds 3-5x inference throughput",
        "key": "optimized_vs_savedmodel_throughput",
        "minimum": 3.0,
        "unit": "x",
    },
    {
        "claim": "tensorrt_latency",
        "says": "TensorRT cuts batch-1 latency by 30-60 %",
        "key": "optimized_latency_cut_batch1",
        "minimum": 0.30,
        "unit": "share",
    },
)

# Measured and reported, but no seed claim to judge them by.
MEASURED_ONLY = {
    "mixed_float16_vs_float32": "mixed_float16 vs float32, both without XLA",
    "xla_vs_no_xla": "XLA on vs off, float32",
    "mixed_bfloat16_vs_float32": "mixed_bfloat16 vs float32 (Ampere and newer)",
}


# The task's published figures (its own module, found through the seam): NVIDIA's are ResNet-50's
# on images, so only an image project holds them; a text or table project has none.
_PUBLISHED = task_module("gpu_reference")
SOURCE = (
    _PUBLISHED.SOURCE
    if _PUBLISHED
    else "none for this task's models: NVIDIA DeepLearningExamples publishes these figures for "
    "ResNet-50 on images"
)


def family(device_name: str | None) -> str | None:
    """The published family a GPU's name belongs to ("NVIDIA A100-SXM4-80GB" → "A100"), or None
    where the task has no published figures."""
    return _PUBLISHED.family(device_name) if _PUBLISHED else None


def published_figure(claim: str, gpu_family: str | None) -> str:
    """The published figure for `claim` on that family, in words, or why there is none."""
    if not _PUBLISHED:
        return "none published for this task's model (NVIDIA's are ResNet-50's, on images)"
    return _PUBLISHED.published_figure(claim, gpu_family)
