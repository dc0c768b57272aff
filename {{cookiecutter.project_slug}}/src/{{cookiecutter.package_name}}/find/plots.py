"""The finders' figures, from their records (metrics/batch_finder.json, metrics/lr_finder.json).

Drawn with matplotlib's Figure directly (no pyplot, no backend state), so they are written the
same from a notebook, the command line or a test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from .lr import centered


def plot_batch(record: dict[str, Any], path: Path) -> Path:
    """examples/s (and peak GPU memory, when measured) per probed batch; the choice marked."""
    probes = record["probes"]
    fig = Figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.add_subplot()
    fitted = [p for p in probes if p["ok"]]
    failed = [p for p in probes if not p["ok"]]
    ax.plot(
        [p["batch"] for p in fitted],
        [p["examples_per_sec"] for p in fitted],
        "o-",
        label="examples/s",
    )
    for probe in failed:
        ax.axvline(probe["batch"], color="tab:red", linestyle=":", alpha=0.7)
    if failed:
        ax.plot(
            [],
            [],
            color="tab:red",
            linestyle=":",
            label="did not fit ("
            + ", ".join(sorted({p["note"] or "failed" for p in failed}))
            + ")",
        )
    ax.axvline(record["batch"], color="tab:green", label=f"chosen: {record['batch']}")
    ax.set_xscale("log", base=2)
    probed = sorted({p["batch"] for p in probes})
    ax.set_xticks(probed, [str(batch) for batch in probed])  # the batches probed, not 2^n
    ax.minorticks_off()
    ax.set_xlabel("global batch size")
    ax.set_ylabel("training examples/s")
    peaks = [(p["batch"], p["peak_bytes"]) for p in fitted if p.get("peak_bytes")]
    if peaks:
        memory = ax.twinx()
        memory.plot([b for b, _ in peaks], [m / 2**30 for _, m in peaks], "s--", color="tab:gray")
        memory.set_ylabel("peak GPU memory (GiB)")
    limit = record["limited_by"].replace("_", " ")
    ax.set_title(f"Batch-size finder ({record['device'].upper()}): limited by {limit}")
    ax.legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=100)
    return path


def plot_lr(record: dict[str, Any], path: Path) -> Path:
    """Loss (raw and smoothed) against the learning rate, on a log axis; the suggestion marked."""
    fig = Figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.add_subplot()
    rates = record["learning_rates"]
    ax.plot(rates, record["losses"], color="tab:blue", alpha=0.3, label="loss")
    beta = (record.get("settings") or {}).get("beta")
    if beta:  # the curve the suggestion is read from (lr.centered): no lag behind the loss
        both = centered(record["losses"], beta)
        ax.plot(rates, both, color="tab:blue", label="smoothed both ways")
        ax.plot(
            rates, record["smoothed"], color="tab:gray", lw=0.8, ls="--", label="moving average"
        )
    else:
        ax.plot(rates, record["smoothed"], color="tab:blue", label="smoothed")
    ax.axvline(
        record["suggestion"], color="tab:green", label=f"suggested: {record['suggestion']:.2g}"
    )
    ax.set_xscale("log")
    finite = [value for value in record["smoothed"] if value == value]  # NaN is not == itself
    if finite:
        low, start = min(finite), finite[0]
        ax.set_ylim(low - 0.1 * abs(start - low), start + 0.5 * abs(start - low) + 1e-6)
    ax.set_xlabel("learning rate (at the probed global batch)")
    ax.set_ylabel("training loss")
    ax.set_title(f"Learning-rate range test (stopped: {record['stopped'].replace('_', ' ')})")
    ax.legend(loc="best", fontsize="small")
    fig.savefig(path, dpi=100)
    return path
