"""The seed's claims, kept as data, and the published figures of the task's reference model.

A claim is confirmed only by a measurement on a GPU: on a CPU every ratio is still measured and
shown (it proves the code path), but it says nothing about what a GPU does.
"""

from __future__ import annotations

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


try:  # NVIDIA's figures are ResNet-50's on images: only an image project holds them
    from .resnet50 import SOURCE, family, published_figure
except ImportError:  # a text or table project: its reference models have no published figures
    SOURCE = (
        "none for this task's models: NVIDIA DeepLearningExamples publishes these figures for "
        "ResNet-50 on images"
    )

    def family(device_name: str | None) -> str | None:
        """No published family: there are no published figures for this task's models."""
        return None

    def published_figure(claim: str, gpu_family: str | None) -> str:
        """Why there is no published figure beside the measured one."""
        return "none published for this task's model (NVIDIA's are ResNet-50's, on images)"
