"""05's figures, from metrics/optimize.json: batch-1 latency distributions and throughput.

Drawn for the two baselines (model.predict, the SavedModel signature) and every backend that ran
with parity; a backend skipped or failed has no timings and is named in the step's table instead.
The figures say what the table and the headline say: p50 is the median call, throughput is the
batch over the median call, p99 is written only where 100 calls or more were timed, and each
backend's number of calls is written next to its figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import seam
from . import style


def plot_latency(metrics: dict[str, Any], path: Path) -> Path | None:
    """Every timed batch-1 call per backend, as a box (quartiles, whiskers to 1.5 IQR, the slow
    outliers as dots) on a log axis; p50 and p99 written on the right."""
    lines = [line for line in _shown(metrics) if (line.get("timings_ms") or {}).get("1")]
    if not lines:
        return None
    lines = lines[::-1]  # the first baseline at the top
    fig, (ax,) = style.new(9, 1.4 + 0.55 * len(lines))
    ax.boxplot(
        [line["timings_ms"]["1"] for line in lines],
        orientation="horizontal",
        tick_labels=[_label(line) for line in lines],
        widths=0.6,
        flierprops={"marker": ".", "markersize": 3, "alpha": 0.5},
        medianprops={"color": style.BEST, "linewidth": 2},
    )
    ax.set_xscale("log")
    numbers = ax.secondary_yaxis("right")  # p50 and p99 in a column of their own, right of the plot
    numbers.set_yticks(
        range(1, len(lines) + 1), [_numbers(line) for line in lines], fontsize="small"
    )
    numbers.tick_params(length=0)
    ax.set_xlabel("batch-1 latency per call (ms, log scale; lower is faster)")
    best = metrics.get("best_backend")
    ratio = metrics.get("best_vs_savedmodel_batch1")
    verdict = (
        f": best {best}, p50 {ratio:.1f}× faster than the SavedModel" if best and ratio else ""
    )
    if best and ratio and metrics.get("comparison") == "end_to_end":  # like with like
        verdict = f"\nbest end to end {best}, {ratio:.2f}× serving_default on raw input"
    fig.suptitle(f"Batch-1 latency per call{verdict}")
    return style.write(fig, path)


def plot_throughput(metrics: dict[str, Any], path: Path) -> Path | None:
    """Examples/s per batch size and backend: log2 batch axis (sizes at their true distances)."""
    lines = [line for line in _shown(metrics) if line.get("throughput")]
    if not lines:
        return None
    fig, (ax,) = style.new(8, 4)
    for line in lines:
        sizes = [int(size) for size in line["throughput"]]  # JSON keys are text
        ax.plot(sizes, list(line["throughput"].values()), "o-", label=_label(line))
    sizes = sorted({int(size) for line in lines for size in line["throughput"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(size) for size in sizes])
    ax.minorticks_off()
    ax.set_yscale("log")
    noun = seam.noun()
    ax.set_xlabel(f"batch size ({noun} per call)")
    ax.set_ylabel(f"{noun}/s (log scale), from the median call")
    top = max(lines, key=lambda line: line["throughput"].get(str(sizes[-1]), 0.0))
    rate = top["throughput"].get(str(sizes[-1]))
    best = (
        f": best at batch {sizes[-1]}, {_label(top)}, {style.short(rate)} {noun}/s" if rate else ""
    )
    fig.suptitle(f"Inference throughput per batch size{best}")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))  # inside, it hid lines
    return style.write(fig, path)


def _shown(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The baselines, then every backend that ran with parity."""
    ran = [line for line in metrics.get("backends", []) if line.get("status") == "ran"]
    return [*metrics.get("baselines", []), *ran, *end_to_end_lines(metrics)]


def end_to_end_lines(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Each backend timed on raw input too (the client's encoding in front), as a line of its
    own: "onnx end to end (fp32)"."""
    return [
        {**line["end_to_end"], "name": f"{line['name']} end to end", "precision": line["precision"]}
        for line in metrics.get("backends", [])
        if line.get("status") == "ran" and line.get("end_to_end")
    ]


def _label(line: dict[str, Any]) -> str:
    label = line["name"] + (f" ({line['precision']})" if "precision" in line else "")
    return label + ("\n(Keras per-call overhead)" if line["name"] == "model.predict" else "")


def _numbers(line: dict[str, Any]) -> str:
    """p50, p99 where 100 calls or more were timed, and the number of calls."""
    count = (line.get("calls") or {}).get("1") or len(line["timings_ms"]["1"])
    p99 = f"p99 {line['p99_ms']:.3g} ms" if line.get("p99_ms") is not None else "no p99"
    return f"p50 {line['p50_ms']:.3g} ms, {p99}\n{count} calls"
