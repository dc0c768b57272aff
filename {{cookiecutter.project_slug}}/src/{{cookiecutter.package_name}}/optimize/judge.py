"""Whether a backend computes what the SavedModel does: the same model, or not counted.

fp32 and fp16 are judged by how far any probability moves, within the tolerance of the precision
the backend computes in. int8 moves probabilities by a few hundredths by design, so it is judged
by its answers (INT8_RULE), as NVIDIA's and MLPerf's int8 results are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..export.parity import TOLERANCE

# Largest allowed |backend - SavedModel| probability per precision the backend computes in; fp32
# reuses the export's float32 tolerance, fp16 its mixed-precision one, int8 keeps ~2 digits.
# "tf32": fp32 that a backend computes in TF32 with no switch to turn it off (the ONNX backend's
# engine provider says where: its tf32_tolerance); TF32 rounds matmul and convolution inputs to
# fp16's 10-bit mantissa, so that fp32 is held to the fp16 tolerance, and says so.
PRECISION_TOLERANCE = {
    "fp32": TOLERANCE["float32"],
    "fp16": TOLERANCE["mixed"],
    "int8": 5e-2,
    "tf32": TOLERANCE["mixed"],
}
# int8 is judged as NVIDIA's and MLPerf's int8 results are: by the answers, not by how far one
# probability moves. It must give the SavedModel's top class on nearly every validation example
# and lose at most one point of validation accuracy; its largest probability difference is
# reported beside, as information.
INT8_RULE = {"min_top1_agreement": 0.99, "max_accuracy_drop": 0.01}


def parity(
    expected: np.ndarray,
    got: np.ndarray,
    tolerance: float,
    labels: np.ndarray | None = None,
    rule: dict[str, float] | None = None,
) -> dict[str, Any]:
    """max_abs_diff, top1_agreement, accuracy_drop (with labels) and parity_ok with a verdict.

    Without a rule, parity_ok is max_abs_diff within tolerance. With one (int8), it is top-1
    agreement and accuracy drop within the rule's limits; labels are then required.
    """
    if got.shape != expected.shape:
        diff, agreement, drop = float("inf"), 0.0, None if labels is None else 1.0
    else:
        diff = float(np.max(np.abs(expected - got)))
        agreement = float(np.mean(np.argmax(expected, -1) == np.argmax(got, -1)))
        drop = None if labels is None else accuracy(expected, labels) - accuracy(got, labels)
    numbers = {"max_abs_diff": diff, "top1_agreement": agreement, "accuracy_drop": drop}
    if rule is not None:
        return {**numbers, **rule_verdict(diff, agreement, drop, rule)}
    ok = bool(diff <= tolerance)
    verdict = (
        f"Largest probability difference {diff:.2g} against the SavedModel (allowed {tolerance:g})."
        if ok
        else f"Probabilities differ from the SavedModel by up to {diff:.2g}, more than the "
        f"{tolerance:g} allowed: not the same model, so not counted."
    )
    return {**numbers, "parity_ok": ok, "verdict": verdict}


def accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The share of examples whose top class is the label."""
    return float(np.mean(np.argmax(probabilities, -1) == np.asarray(labels).reshape(-1)))


def rule_verdict(
    diff: float, agreement: float, drop: float | None, rule: dict[str, float]
) -> dict[str, Any]:
    """parity_ok and a verdict by the rule: top-1 agreement and accuracy drop within limits."""
    if drop is None:
        raise ValueError("an int8 verdict needs the validation labels (the accuracy drop)")
    least, most = rule["min_top1_agreement"], rule["max_accuracy_drop"]
    ok = bool(agreement >= least and drop <= most + 1e-12)
    said = (
        f"top-1 agreement {agreement:.1%} (at least {least:.0%} required), accuracy drop "
        f"{drop * 100:.2f} points (at most {most * 100:g} allowed)"
    )
    verdict = (
        f"Same answers: {said}; largest probability difference {diff:.2g}, reported, not judged."
        if ok
        else f"Not the same answers: {said}; largest probability difference {diff:.2g}: "
        "not counted."
    )
    return {"parity_ok": ok, "verdict": verdict}


def int8_sentences(metrics: dict[str, Any]) -> list[str]:
    """One line per int8 backend that was tried: the format chosen for this machine and why,
    then its verdict by the rule."""
    return [
        f"{line['name']} (int8): {line['int8_format']['reason']} {line.get('verdict') or ''}"
        for line in metrics["backends"]
        if line["precision"] == "int8" and line.get("int8_format")
    ]
