"""The seed's claims and the published reference figures, kept as data (with their source).

A claim is confirmed only by a measurement on a GPU: on a CPU every ratio is still measured and
shown (it proves the code path), but it says nothing about what a GPU does.
"""

from __future__ import annotations

SOURCE = (
    "NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5 README, "
    "'Training performance' (ResNet-50 v1.5, synthetic 224x224x3 data, DGX A100 80GB / DGX-1 "
    "V100 16GB), as quoted in issue 17: https://github.com/NVIDIA/DeepLearningExamples"
)

# Training images/s of one GPU, float32 (TF32 on A100) and with AMP, and multi-GPU scaling.
PUBLISHED = {
    "A100": {"fp32_img_s": 909.0, "amp_img_s": 2375.0, "scaling_8gpu": (0.91, 0.96)},
    "V100": {"fp32_img_s": 412.0, "amp_img_s": 1270.0, "scaling_8gpu": (0.91, 0.96)},
}
# A model that gains far less from AMP: the claim is about convolution-heavy models.
PUBLISHED_NOTES = {"V100": "EfficientNet-B0 gains only 1.15x with AMP on V100."}

# Every seed claim: what is measured, the smallest figure that confirms it, and its unit.
#   key         the measured figure in gpu_bench.json's "measured"
#   minimum     the claim holds when measured >= minimum
CLAIMS = (
    {
        "claim": "amp_speedup",
        "says": "mixed precision trains 2-3x faster",
        "key": "mixed_float16_vs_float32",
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
    "xla_vs_no_xla": "XLA on vs off, float32",
    "mixed_bfloat16_vs_float32": "mixed_bfloat16 vs float32 (Ampere and newer)",
}


def family(device_name: str | None) -> str | None:
    """The published family a GPU's name belongs to ("NVIDIA A100-SXM4-80GB" → "A100")."""
    name = (device_name or "").upper()
    return next((key for key in PUBLISHED if key in name), None)


def published_figure(claim: str, gpu_family: str | None) -> str:
    """The published figure for `claim` on that family, in words, or why there is none."""
    row = PUBLISHED.get(gpu_family or "")
    if claim == "amp_speedup" and row:
        ratio = row["amp_img_s"] / row["fp32_img_s"]
        return f"{gpu_family}: {row['fp32_img_s']:g} -> {row['amp_img_s']:g} img/s ({ratio:.2f}x)"
    if claim == "multi_gpu_scaling" and row:
        low, high = row["scaling_8gpu"]
        return f"{gpu_family}: 8 GPUs {low:.0%}-{high:.0%}"
    if row:
        return f"{gpu_family}: none published in the source"
    return "no published figure for this device (A100, V100 only)"
