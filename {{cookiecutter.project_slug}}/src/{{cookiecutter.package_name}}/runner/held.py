"""The values a notebook's own parameters cell holds, for the runner's pre-flight check.

papermill injects only the values a profile or `-p` gives; every other parameter keeps what the
notebook's cell says, and a value saved there in JupyterLab (data_dir set in 01, then saved) runs
headless too. The pre-flight check therefore checks what each notebook will run with: the values
its cell holds, with the profile's and -p's over them; and a refusal caused by a value saved in a
notebook names the notebook and says how to clear it from the command line.
"""

from __future__ import annotations

import ast
from typing import Any

from .cells import Declared

Plan = Any  # plan.Plan, which imports this module: named here only as a type


def held_values(declared: dict[str, Declared]) -> dict[str, Any]:
    """Each parameter's value as its cell writes it, where that is a literal (run_dir aside)."""
    held = {}
    for key, own in declared.items():
        if key == "run_dir":
            continue
        try:
            held[key] = ast.literal_eval(own.default)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # an expression: the step's own default stands in for it, as before
    return held


def checked_values(plan: Plan) -> dict[str, dict[str, Any]]:
    """What each selected notebook runs with: its cell's values, the plan's given ones over them."""
    return {name: {**plan.held.get(name, {}), **plan.parameters[name]} for name in plan.notebooks}


def saved_note(plan: Plan, refusal: str) -> str:
    """The refusal, and for each value it names that only the notebook's cell sets (no profile
    or -p gives it), where it comes from and how to clear it; the refusal alone otherwise."""
    name = refusal.partition(" refuses to start:")[0]
    if name not in plan.notebooks or " refuses to start:" not in refusal:
        return refusal
    given = plan.parameters[name]
    notes = []
    for key, value in plan.held.get(name, {}).items():
        if key in given or value in ("", None) or f"{key}=" not in refusal:
            continue
        clear = f"-p {key}= (an empty value)" if isinstance(value, str) else f"-p {key}=…"
        notes.append(
            f"that {key} is saved in notebooks/{name}.ipynb's parameters cell (no profile or "
            f"-p sets it): clear it with {clear}, or set it back in the notebook"
        )
    return refusal if not notes else f"{refusal.rstrip('.')}; " + "; ".join(notes) + "."
