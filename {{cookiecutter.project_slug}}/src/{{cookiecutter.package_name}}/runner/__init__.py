"""Run the notebook chain headlessly with papermill: one run folder per run, recorded and reported.

A profile (configs/<name>.yaml) names parameter values; every value is checked before the first
notebook starts — names and types against the notebooks' parameters cells, ranges and relations
by each step's own checker — so a typo costs a second, not the minutes the chain takes to reach
the notebook that reads it. Each attempt is recorded in run.json; no attempt erases a success.

    profile   configs/<name>.yaml and -p items, read strictly
    cells     the notebooks' parameters cells: names, annotated types, defaults
    plan      the notebooks and values of one run, checked, and where each value came from
    chain     run_chain: check, make the folder, execute, record
    execute   one notebook: hidden running copy, success or kept failed copy
    record    run.json: every attempt, each notebook's latest success
    report    report.md;  html: report.html;  console: what `run` prints first and last
"""

from importlib import import_module
from typing import Any

# Where each public name lives. Loaded on first use (PEP 562), so that checking a plan imports
# neither papermill nor TensorFlow: a refusal takes a fraction of a second, not ten.
_HOMES = {
    "RunInterrupted": "chain",
    "RunResult": "chain",
    "check_run_dir": "chain",
    "create_run_dir": "chain",
    "preflight": "chain",
    "run_chain": "chain",
    "run_dir_path": "chain",
    "KERNEL": "execute",
    "NotebookFailed": "execute",
    "NOTEBOOK_GLOB": "plan",
    "Plan": "plan",
    "discover_notebooks": "plan",
    "plan_run": "plan",
    "show": "console",
    "Declared": "cells",
    "declared_parameters": "cells",
    "PROFILE_KEYS": "profile",
    "RunnerInputError": "profile",
    "load_profile": "profile",
    "parse_overrides": "profile",
    "write_report": "report",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_HOMES[name]}", __name__), name)
