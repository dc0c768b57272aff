"""Which precision each device runs fast, and the one policy a whole run uses.

Tensor Cores do float16 from compute capability 7.0 (Volta) and bfloat16 from 8.0 (Ampere); on a
CPU float32 is fastest. Training (step 3) applies one policy to every replica, so the weakest GPU
decides.
"""

from __future__ import annotations

from typing import Any

from .devices import parse_capability

CPU_POLICY = "float32"
CPU_POLICY_NOTE = (
    "float32 (mixed precision is slower on CPU; mixed_bfloat16 runs but only to test code paths)"
)
_POLICY_ORDER = ("float32", "mixed_float16", "mixed_bfloat16")


def precision_support(compute_capability: str | tuple[int, int] | None) -> dict[str, Any]:
    """Which reduced precisions a GPU runs fast, and the Keras policy to use on it.

    The recommended policy is the one training's precision="auto" picks: mixed_float16 from 7.0.
    bfloat16 keeps float32's range and needs no loss scaling: from 8.0 it is named as the option.
    """
    capability = parse_capability(compute_capability)
    if capability is None:
        return {
            "float16": False,
            "bfloat16": False,
            "policy": "float32",
            "note": "float32 (compute capability unknown)",
        }
    float16, bfloat16 = capability >= (7, 0), capability >= (8, 0)
    if bfloat16:
        policy = "mixed_float16"
        why = "float16 Tensor Cores, loss scaled automatically; mixed_bfloat16 also fast, unscaled"
    elif float16:
        policy, why = "mixed_float16", "float16 Tensor Cores; Keras scales the loss automatically"
    else:
        policy, why = "float32", "no Tensor Cores, so mixed precision would not be faster"
    return {"float16": float16, "bfloat16": bfloat16, "policy": policy, "note": f"{policy} ({why})"}


def mixed_precision_support(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The precision rule applied to the CPU and to each GPU."""
    cpu = {
        "device": "CPU:0",
        "compute_capability": None,
        "float16": False,
        "bfloat16": False,
        "policy": CPU_POLICY,
        "note": CPU_POLICY_NOTE,
    }
    return [cpu] + [
        {
            "device": gpu["device"],
            "compute_capability": gpu["compute_capability"],
            **precision_support(gpu["compute_capability"]),
        }
        for gpu in gpus
    ]


def recommended_policy(mixed_precision: list[dict[str, Any]], gpu_available: bool) -> str:
    """One policy for the whole run: the weakest GPU decides, since all replicas share it."""
    if not gpu_available:
        return CPU_POLICY
    policies = [row["policy"] for row in mixed_precision if row["device"].startswith("GPU")]
    return min(policies, key=_POLICY_ORDER.index)
