"""Whether the gap between the model and a baseline on the test split is within noise.

A rule simple enough to state in the headline: a gap under two standard errors of the better
score, on the rows of this test split, is within noise, and the headline says so instead of
naming a winner (a "win by 0.0069 ROC AUC" on 34 rows is one pair of rows ordered otherwise).

- accuracy: the binomial standard error sqrt(p (1 - p) / n) over the n test rows;
- ROC AUC: Hanley & McNeil's (1982) standard error from the positives and negatives of the split
  (for more than two classes, the smallest class against the rest).

The error is at least 1/n, one row's worth, so a perfect score is not taken for certainty. The
two scores come from the same rows, so a paired test would be sharper; this one errs towards
"within noise", never towards a win that is not there.
"""

from __future__ import annotations

import math
from typing import Any


def standard_error(metric: str, score: float, m: dict[str, Any]) -> float | None:
    """The standard error of `score` ("accuracy" or "roc_auc") on the test split that the train
    metrics `m` describe (test_examples, test_per_class), or None where they do not say."""
    supports = [row.get("support", 0) for row in (m.get("test_per_class") or {}).values()]
    rows = int(m.get("test_examples") or sum(supports))
    if rows < 2:
        return None
    score = min(max(score, 0.0), 1.0)
    if metric == "accuracy":
        return max(math.sqrt(score * (1 - score) / rows), 1 / rows)
    small = min((s for s in supports if s > 0), default=0)
    large = rows - small
    if small < 1 or large < 1:
        return None
    q1, q2 = score / (2 - score), 2 * score**2 / (1 + score)
    variance = (
        score * (1 - score) + (small - 1) * (q1 - score**2) + (large - 1) * (q2 - score**2)
    ) / (small * large)
    return max(math.sqrt(max(variance, 0.0)), 1 / rows)


def verdict(metric: str, model: float, best: float, best_name: str, m: dict[str, Any]) -> str:
    """'the model wins by 0.0123', 'X wins by …', or 'within noise: …' for a gap under two
    standard errors of the better score (`metric` as the sentence names it: 'ROC AUC', '')."""
    gap = model - best
    error = standard_error("roc_auc" if metric else "accuracy", max(model, best), m)
    unit = f" {metric}" if metric else ""
    if error is not None and abs(gap) < 2 * error:
        rows = int(m.get("test_examples") or 0)
        return (
            f"within noise: they differ by {abs(gap):.4f}{unit}, under two standard errors "
            f"({2 * error:.4f}) on {rows:,} test rows"
        )
    who = "the model wins" if gap > 0 else f"{best_name} wins" if gap < 0 else "a tie"
    return f"{who} by {abs(gap):.4f}{unit}"


def contenders(m: dict[str, Any]) -> list[dict[str, Any]]:
    """Everything else scored on the same test rows as the model: the models trained beside it
    (tables: compare_models, not exported), then the scikit-learn baseline(s)."""
    base = m.get("baseline") or {}
    return [*(m.get("compared") or []), *([base, *base.get("others", [])] if base else [])]


def best_verdict(metric: str, key: str, score: float, others: list[dict], m: dict) -> str:
    """verdict() against the best of `others` by `key`; within noise, it names the best of all
    first (the model, by m's "model", or the other), as a win does."""
    best = max(others, key=lambda other: other[key])
    said = verdict(metric, score, best[key], best["name"], m)
    if said.startswith("within noise"):
        top = (m.get("model") or "the model") if score >= best[key] else best["name"]
        return f"{top} scores highest, {said}"
    return said
