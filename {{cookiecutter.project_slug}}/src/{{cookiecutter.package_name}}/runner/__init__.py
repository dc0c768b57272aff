"""Run the notebook chain headlessly with papermill: one run folder per run, recorded and reported.

A profile (configs/<name>.yaml) names parameter values; every value is checked before the first
notebook starts — names and types against the notebooks' parameters cells, ranges and relations
by each step's own checker — so a typo costs a second, not the minutes the chain takes to reach
the notebook that reads it. Each attempt is recorded in run.json; no attempt erases a success.

    profile   configs/<name>.yaml and -p items, read strictly
    plan      the notebooks and values of one run, checked
    chain     run_chain: check, make the folder, execute, record
    execute   one notebook: hidden running copy, success or kept failed copy
    record    run.json: every attempt, each notebook's latest success
    report    report.md
"""

from .chain import (
    RunInterrupted,
    RunResult,
    check_run_dir,
    create_run_dir,
    preflight,
    run_chain,
    run_dir_path,
)
from .execute import KERNEL, NotebookFailed
from .plan import NOTEBOOK_GLOB, Declared, Plan, declared_parameters, discover_notebooks, plan_run
from .profile import PROFILE_KEYS, RunnerInputError, load_profile, parse_overrides
from .report import write_report

__all__ = [
    "KERNEL",
    "NOTEBOOK_GLOB",
    "PROFILE_KEYS",
    "Declared",
    "NotebookFailed",
    "Plan",
    "RunInterrupted",
    "RunResult",
    "RunnerInputError",
    "check_run_dir",
    "create_run_dir",
    "declared_parameters",
    "discover_notebooks",
    "load_profile",
    "parse_overrides",
    "plan_run",
    "preflight",
    "run_chain",
    "run_dir_path",
    "write_report",
]
