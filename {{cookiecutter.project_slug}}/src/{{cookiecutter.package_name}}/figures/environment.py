"""00's figure: the float32 matmul speed of each device, from metrics/environment.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import style


def plot_matmul(metrics: dict[str, Any], path: Path) -> Path | None:
    """GFLOP/s per device (horizontal bars), each labelled with its value and ratio to the CPU."""
    rows = metrics.get("matmul") or []
    if not rows:
        return None
    fig, (ax,) = style.new(8, 1.6 + 0.5 * len(rows))
    names = [row["device"] for row in rows][::-1]
    speeds = [row["gflops"] for row in rows][::-1]
    colors = [style.MUTED if name.startswith("CPU") else style.BEST for name in names]
    bars = ax.barh(names, speeds, color=colors)
    labels = []
    for row in rows[::-1]:
        ratio = row.get("speedup_vs_cpu")
        versus = f" ({ratio:.1f}× the CPU)" if ratio and not row["device"].startswith("CPU") else ""
        labels.append(f"{row['gflops']:,.1f} GFLOP/s{versus}")
    style.bar_labels(ax, bars, labels)
    size = rows[0]["size"]
    ax.set_xlabel("GFLOP/s (higher is faster)")
    fig.suptitle(f"float32 matrix multiply, {size}×{size}, on each device (measured in this run)")
    return style.write(fig, path)
