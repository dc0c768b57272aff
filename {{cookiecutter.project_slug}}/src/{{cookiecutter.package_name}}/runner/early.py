"""A step's values judged before TensorFlow loads: the names, types and shared ranges (limits) of
`<package> <step> -p key=value`, against the step's notebook parameters cell, without importing the
step (cli's `_refuse_early`; the step's own checks follow when it runs)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import limits, steps
from ..artifacts import project_root
from .cells import declared_parameters
from .profile import RunnerInputError


def check_early(step: steps.Step | str, values: Mapping[str, Any]) -> None:
    """Refuse, in the sentences steps.params_from and the step's checker say, a value whose name,
    type or shared range is wrong. Judges nothing where the notebooks are not beside the package
    (a non-editable install)."""
    step = steps.BY_NAME[step] if isinstance(step, str) else step
    try:
        root = project_root(Path(__file__).parent)
        declared = declared_parameters(root / "notebooks" / f"{step.notebook}.ipynb")
    except (FileNotFoundError, RunnerInputError):
        return
    fields = {
        name: steps.literal(own.default) for name, own in declared.items() if name != "run_dir"
    }
    hints = {name: declared[name].hint for name in fields}
    limits.check(steps.chosen(step, values, fields, hints))
