"""NVIDIA's published ResNet-50 figures, kept as data with their source: the image task's GPU
reference (gpu-bench trains Keras ResNet50 at 224x224 in an image project). Only image projects
hold this module; gpubench/reference.py asks the task for it (seam.task_module) and, in the
others, says none is published.
"""

from __future__ import annotations

SOURCE = (
    "NVIDIA DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5 README, "
    "'Training performance results' (ResNet-50 v1.5, TensorFlow 20.06-tf1-py3 NGC container, "
    "DGX A100 40GB (8x A100 40GB) and DGX-1 (8x V100 16GB), images/s averaged over a training "
    "epoch, XLA on in every column): https://github.com/NVIDIA/DeepLearningExamples"
)

# Training images/s of one GPU, as published: float32 (TF32 on A100) + XLA against mixed
# precision (AMP) + XLA, with the batch per GPU of each; the AMP speed-up at 1 and 8 GPUs; and
# the weak scaling of 8 GPUs (8-GPU rate over the 1-GPU rate) per precision.
PUBLISHED = {
    "A100": {
        "system": "DGX A100 40GB",
        "fp32_name": "TF32 + XLA",
        "fp32_img_s": 909.0,
        "fp32_batch": 256,
        "amp_img_s": 2375.0,
        "amp_batch": 256,
        "amp_speedup": (2.48, 2.60),  # 8 GPUs, 1 GPU
        "scaling_8gpu": {"float32": 7.70, "mixed": 7.32},
    },
    "V100": {
        "system": "DGX-1 V100 16GB",
        "fp32_name": "FP32 + XLA",
        "fp32_img_s": 412.0,
        "fp32_batch": 128,
        "amp_img_s": 1270.0,
        "amp_batch": 256,
        "amp_speedup": (3.00, 3.08),
        "scaling_8gpu": {"float32": 7.69, "mixed": 7.48},
    },
}


def family(device_name: str | None) -> str | None:
    """The published family a GPU's name belongs to ("NVIDIA A100-SXM4-80GB" → "A100")."""
    name = (device_name or "").upper()
    return next((key for key in PUBLISHED if key in name), None)


def published_figure(claim: str, gpu_family: str | None) -> str:
    """The published figure for `claim` on that family, in words, or why there is none."""
    row = PUBLISHED.get(gpu_family or "")
    if claim == "amp_speedup" and row:
        low, high = row["amp_speedup"]
        return (
            f"{gpu_family} ({row['system']}): {row['fp32_name']} {row['fp32_img_s']:g} img/s at "
            f"{row['fp32_batch']}/GPU -> AMP + XLA {row['amp_img_s']:g} at {row['amp_batch']}/GPU: "
            f"{high:.2f}x on 1 GPU, {low:.2f}x on 8"
        )
    if claim == "multi_gpu_scaling" and row:
        fp32, amp = row["scaling_8gpu"]["float32"], row["scaling_8gpu"]["mixed"]
        return (
            f"{gpu_family}: 8 GPUs {min(fp32, amp) / 8:.0%}-{max(fp32, amp) / 8:.0%} "
            f"({fp32:.2f}x {row['fp32_name']}, {amp:.2f}x AMP + XLA)"
        )
    if row:
        return f"{gpu_family}: none published in the source"
    return "no published figure for this device (A100, V100 only)"
