"""Measured figures against the seed's claims: one verdict per claim, and the table that shows it.

Verdicts: "confirmed", "not confirmed (…)" with the shortfall, or "cannot be measured here (…)"
with the reason. Without a GPU measurement no claim is ever confirmed.
"""

from __future__ import annotations

from typing import Any

from .reference import CLAIMS, MEASURED_ONLY, SOURCE, published_figure

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
CANNOT = "cannot be measured here"
NO_GPU = "no GPU: CPU ratios say nothing about GPUs"


def scaling_efficiency(one_rate: float, many_rate: float, replicas: int) -> float:
    """N-device rate / (N × 1-device rate): 1.0 is perfectly linear scaling."""
    if replicas < 1 or one_rate <= 0:
        raise ValueError(
            f"scaling needs replicas >= 1 and a positive 1-device rate, got {replicas} and "
            f"{one_rate}."
        )
    return many_rate / (replicas * one_rate)


def verdict(claim: dict[str, Any], value: float | None, *, on_gpu: bool, why: str = "") -> str:
    """The verdict on one claim from its measured value (None: not measured, for `why`)."""
    if not on_gpu:
        return f"{CANNOT} ({NO_GPU})"
    if value is None:
        return f"{CANNOT} ({why or 'not measured'})"
    if value >= claim["minimum"]:
        return CONFIRMED
    return f"{NOT_CONFIRMED} ({_shown(value, claim['unit'])}, {_shortfall(claim, value)})"


def judge(
    measured: dict[str, float | None], why: dict[str, str], *, on_gpu: bool, gpu_family: str | None
) -> list[dict[str, Any]]:
    """One row per seed claim: what it says, the published figure, the measured one, the verdict."""
    rows = []
    for claim in CLAIMS:
        value = measured.get(claim["key"])
        rows.append(
            {
                "claim": claim["claim"],
                "says": claim["says"],
                "published": published_figure(claim["claim"], gpu_family),
                "measured": value,
                "measured_shown": _shown(value, claim["unit"]),
                "verdict": verdict(claim, value, on_gpu=on_gpu, why=why.get(claim["key"], "")),
            }
        )
    return rows


def format_table(record: dict[str, Any]) -> str:
    """The claims table, the measured-only ratios, the device and the source, as text."""
    head = ("claim", "the seed says", "published", "measured here", "verdict")
    lines = [
        [row["claim"], row["says"], row["published"], row["measured_shown"], row["verdict"]]
        for row in record["claims"]
    ]
    widths = [max(len(str(cells[i])) for cells in [head, *lines]) for i in range(len(head))]
    text = [f"GPU claims, measured on {record['device']} ({record['mode']}):", ""]
    for cells in [head, ["-" * w for w in widths], *lines]:
        text.append(
            "  ".join(str(cell).ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()
        )
    text.append("")
    for key, meaning in MEASURED_ONLY.items():
        value = record["measured"].get(key)
        shown = _shown(value, "x") if value is not None else record["why"].get(key, "not measured")
        text.append(f"{meaning}: {shown}")
    if not record["on_gpu"]:
        text.append(f"Every GPU claim: {CANNOT} - {NO_GPU}.")
    text.append(f"Published figures: {SOURCE}")
    return "\n".join(text)


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if unit == "x" else f"{value:.0%}"


def _shortfall(claim: dict[str, Any], value: float) -> str:
    minimum = claim["minimum"]
    if claim["unit"] == "x":
        return f"{minimum / value:.2f}x short of {minimum:g}x"
    return f"{(minimum - value) * 100:.0f} points short of {minimum:.0%}"
