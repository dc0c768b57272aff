"""What the training benchmark reports: each run's best rate, the two ratios, the table.

Kept apart from the measuring so the record (metrics/train_benchmark.json) and its table are read
in one place: a rate is the best of a run's rounds, each ratio is the package's rate over a
cheaper baseline's, and each is judged against GOAL.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from ...artifacts import DATA_DIR
from ...train.params import Params
from .train_benchmark_runs import RUNS, SETUP_KEYS

GOAL = 0.95
# Watching a run (the endpoint, live reports, the input-wait timer) may cost 3 % at most.
WATCH_GOAL = 0.97


def summary(
    results: dict[str, list[dict[str, Any]]],
    params: Params,
    meta: dict[str, Any],
    source: Path | None,
    devices: dict[str, Any],
    found: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The benchmark's result from each run's outcome per round (train_benchmark_runs.take_turns).

    `source` is the run folder whose data/ was used, or None for the digits prepared aside.
    """
    runs = {}
    for key, trainer, fed_by in RUNS:
        rates = [outcome["examples_per_sec"] for outcome in results[key]]
        first = results[key][0]
        runs[key] = {
            "trainer": trainer,
            "fed_by": fed_by,
            "examples_per_sec": max(rates),
            "rounds": rates,
            "val_accuracy": results[key][-1]["val_accuracy"],
            **{k: first[k] for k in SETUP_KEYS},
        }
    loop_vs_fit = _ratio(runs["package"]["examples_per_sec"], runs["fit"]["examples_per_sec"])
    pipeline_vs_memory = _ratio(
        runs["package"]["examples_per_sec"], runs["memory"]["examples_per_sec"]
    )
    watched_vs_unwatched = _ratio(
        runs["watched"]["examples_per_sec"], runs["unwatched"]["examples_per_sec"]
    )
    rounds, epochs = len(results["package"]), params.epochs
    return {
        "model": params.model,
        "dataset": meta["dataset"],
        "data": str(source / DATA_DIR) if source else "digits, prepared for the benchmark",
        "train_examples": int(meta["splits"]["train"]["count"]),
        "batch_size": params.batch_size,
        "epochs": epochs,
        "rounds": rounds,
        **{key: runs["package"][key] for key in SETUP_KEYS},
        "devices": devices,
        "cpu_count": os.cpu_count(),
        "basis": (
            f"best of {rounds} round(s) per run, each over epochs 2 to {epochs} (the first "
            "epoch traces and fills the cache), measured in this process on this machine"
        ),
        "runs": runs,
        "goal": GOAL,
        "loop_vs_fit": loop_vs_fit,
        "pipeline_vs_memory": pipeline_vs_memory,
        "loop_vs_fit_meets_goal": loop_vs_fit >= GOAL,
        "pipeline_vs_memory_meets_goal": pipeline_vs_memory >= GOAL,
        "watched_vs_unwatched": watched_vs_unwatched,
        "watch_goal": WATCH_GOAL,
        "watched_vs_unwatched_meets_goal": watched_vs_unwatched >= WATCH_GOAL,
        "finders": _finders(found, runs["package"]["val_accuracy"], params),
        "tensorflow_version": tf.__version__,
        "keras_version": keras.__version__,
    }


def format_table(result: dict[str, Any]) -> str:
    """The rates as a small table, then the two ratios against their goal."""
    rows = [
        ("training", "fed by", "examples/s (best)", "rounds (examples/s)"),
        *(
            (
                run["trainer"],
                run["fed_by"],
                f"{run['examples_per_sec']:,.0f}",
                " / ".join(f"{rate:,.0f}" for rate in run["rounds"]),
            )
            for run in result["runs"].values()
        ),
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines += [
        "",
        _ratio_line("loop_vs_fit", result, "train.train / bare model.fit"),
        _ratio_line("pipeline_vs_memory", result, "pipeline-fed / memory-fed"),
        _ratio_line(
            "watched_vs_unwatched", result, "endpoint and timer on / off", goal=result["watch_goal"]
        ),
        f"Basis: {result['basis']}.",
    ]
    if result.get("finders"):
        lines.append(result["finders"]["sentence"])
    return "\n".join(lines)


def _finders(found: dict[str, Any] | None, default_accuracy: float, params: Params) -> Any:
    """The finders' run against the defaults: validation accuracy after the same epochs."""
    if found is None:
        return None
    better = found["val_accuracy"] >= default_accuracy
    sentence = (
        f"Finders: batch {found['batch_size']}, learning rate "
        f"{found['effective_learning_rate']:.3g} (at that batch) reach val_accuracy "
        f"{found['val_accuracy']:.4f} after {params.epochs} epochs, against "
        f"{default_accuracy:.4f} with batch {params.batch_size} and {params.learning_rate:g}: "
        f"{'at least as good' if better else 'BELOW the defaults'}."
    )
    return {
        **found,
        "default_val_accuracy": default_accuracy,
        "at_least_default": better,
        "sentence": sentence,
    }


def _ratio_line(key: str, result: dict[str, Any], meaning: str, goal: float | None = None) -> str:
    value, goal = result[key], result["goal"] if goal is None else goal
    verdict = "meets the goal" if value >= goal else "BELOW the goal"
    return f"{key}: {value:.2f} ({meaning}; goal >= {goal}): {verdict}"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator and math.isfinite(denominator) else math.nan
