"""02's figure: the score of every trial, from metrics/tune.json; the best one marked, each
labelled by the values it changed from the defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..figures import style

LONGEST = 64  # characters of a trial's label: the values beyond are in tuning/trials.json


def plot_trials(metrics: dict[str, Any], path: Path) -> Path | None:
    """One horizontal bar per trial (its values as the label), the best in green; a trial
    that did not complete is a gray, empty row saying so."""
    trials = sorted(metrics.get("trials") or [], key=lambda trial: trial["trial"])
    if not trials:
        return None
    trials = trials[::-1]  # trial 1 at the top
    fig, (ax,) = style.new(10, 1.3 + 0.42 * len(trials))
    untuned = metrics.get("default_hparams") or {}
    labels = [f"#{trial['trial']}  {_values(trial['hparams'], untuned)}" for trial in trials]
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
    if objective.endswith(("accuracy", "auc")):  # both between 0 and 1
        ax.set_xlim(0, min(1.15, ax.get_xlim()[1]))
    ax.set_xlabel(f"{objective} after the trial (higher is better)")
    ax.tick_params(axis="y", labelsize="small")
    epochs = metrics.get("epochs")
    fig.suptitle(
        f"Tuning ({metrics.get('algorithm', '?')}, {len(trials)} trials of up to {epochs} "
        f"epoch{'' if epochs == 1 else 's'}): best {objective} {metrics['best_score']:.4f}"
    )
    return style.write(fig, path)


def _values(hparams: dict[str, Any], untuned: dict[str, Any]) -> str:
    """The values that differ from the defaults, shortly: 'lr 0.00123, cosine, wd 0.001'; a
    trial of the defaults says so."""
    short = {
        "learning_rate": "lr",
        "weight_decay": "wd",
        "label_smoothing": "ls",
        "warmup_epochs": "warmup",
        "freeze_epochs": "freeze",
    }
    parts = []
    for key, value in hparams.items():
        if untuned.get(key, object()) == value:
            continue
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
        parts.append(shown if key == "schedule" else f"{short.get(key, key)} {shown}")
    text = ", ".join(parts) if parts else "the defaults"
    return text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"
