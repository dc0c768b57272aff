"""02's figure: the score of every trial, from metrics/tune.json; the best one marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..figures import style


def plot_trials(metrics: dict[str, Any], path: Path) -> Path | None:
    """One horizontal bar per trial (its values as the label), the best in green; a trial
    that did not complete is a gray, empty row saying so."""
    trials = sorted(metrics.get("trials") or [], key=lambda trial: trial["trial"])
    if not trials:
        return None
    trials = trials[::-1]  # trial 1 at the top
    fig, (ax,) = style.new(8, 1.3 + 0.42 * len(trials))
    labels = [f"#{trial['trial']}  {_values(trial['hparams'])}" for trial in trials]
    scores = [trial["score"] or 0.0 for trial in trials]
    best = metrics.get("best_trial")
    colors = [
        style.BEST
        if trial["trial"] == best
        else "tab:blue"
        if trial["score"] is not None
        else style.MUTED
        for trial in trials
    ]
    bars = ax.barh(labels, scores, color=colors)
    texts = [
        f"{trial['score']:.4f}" + ("  best" if trial["trial"] == best else "")
        if trial["score"] is not None
        else f"{trial['status'].lower()}"
        for trial in trials
    ]
    style.bar_labels(ax, bars, texts)
    objective = metrics.get("objective", "score")
    if objective.endswith("accuracy"):
        ax.set_xlim(0, min(1.15, ax.get_xlim()[1]))
    ax.set_xlabel(f"{objective} after the trial (higher is better)")
    ax.tick_params(axis="y", labelsize="small")
    epochs = metrics.get("epochs")
    fig.suptitle(
        f"Tuning ({metrics.get('algorithm', '?')}, {len(trials)} trials of up to {epochs} "
        f"epoch{'' if epochs == 1 else 's'}): best {objective} {metrics['best_score']:.4f}"
    )
    return style.write(fig, path)


def _values(hparams: dict[str, Any]) -> str:
    """learning_rate=0.00123 width=32 dropout=0.25 as 'lr 0.00123, width 32, dropout 0.25'."""
    short = {"learning_rate": "lr"}
    parts = []
    for key, value in hparams.items():
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
        parts.append(f"{short.get(key, key)} {shown}")
    return ", ".join(parts)
