"""Which notebooks run, with which values: every value checked before the first notebook starts.

Values are checked against the parameters the notebooks declare (names and types), so a typo in a
profile or a `-p key=value` costs a second, not the minutes the chain takes to reach the notebook
that reads it. Ranges and relations are the steps' own checks (steps.preflight), run afterwards.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import papermill

from .. import steps
from ..artifacts import project_root
from .profile import RunnerInputError, load_profile, one_line

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


@dataclass(frozen=True)
class Plan:
    """A validated run: which notebooks run, with which values. Nothing has run yet."""

    project: Path
    profile: str
    description: str
    notebooks: dict[str, Path]
    parameters: dict[str, dict[str, Any]]
    overrides: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the runner decided and says first


class Declared(NamedTuple):
    """A parameter as a notebook declares it: the type its value must have (None: any)."""

    expected: str | None
    default: str


def plan_run(
    profile: str = "default",
    overrides: dict[str, Any] | None = None,
    project_dir: str | Path | None = None,
    only: list[str] | None = None,
) -> Plan:
    """Check the profile, the overrides and the selection against the notebooks' parameters.

    Profile values are checked against every notebook of the project (a profile serves any
    --only selection); overrides against the notebooks selected, since they would do nothing else.
    """
    overrides = dict(overrides or {})
    project = _find_project(project_dir)
    spec = load_profile(project, profile)
    chain = discover_notebooks(project)
    declared = {name: declared_parameters(path) for name, path in chain.items()}
    selected = _select(chain, only)
    source = f"configs/{profile}.yaml"

    _check(spec["shared"], declared, f"in {source} (shared)", "the notebooks declare")
    for name, values in spec["notebooks"].items():
        if name not in chain:
            raise RunnerInputError(
                f"Unknown notebook {name!r} in {source} (notebooks): "
                f"the project has {', '.join(chain)}."
            )
        where = f"in {source} (notebooks.{name})"
        _check(values, {name: declared[name]}, where, f"{name} declares")
    scope = "the notebooks declare" if only is None else "the selected notebooks declare"
    chosen = {name: declared[name] for name in selected}
    takers, notes = _takers(overrides, chosen)
    for key, value in overrides.items():
        to = {name: chosen[name] for name in takers[key]} or chosen
        _check({key: value}, to, "from -p", scope)

    parameters = {}
    for name in selected:
        own = declared[name]
        values = {key: value for key, value in spec["shared"].items() if key in own}
        values.update(spec["notebooks"].get(name, {}))
        values.update({key: value for key, value in overrides.items() if name in takers[key]})
        parameters[name] = {key: _coerce(value, own[key].expected) for key, value in values.items()}
    return Plan(
        project=project,
        profile=profile,
        description=spec["description"],
        notebooks={name: chain[name] for name in selected},
        parameters=parameters,
        overrides=overrides,
        notes=notes,
    )


def _takers(
    overrides: dict[str, Any], declared: dict[str, dict[str, Declared]]
) -> tuple[dict[str, list[str]], list[str]]:
    """The notebooks each -p value goes to: those whose parameter takes a value of its type.

    `-p batch_size=auto` reaches 03_train, whose batch_size takes auto, and leaves 01_data's
    whole-number batch_size (and any other notebook's) as the profile has them; a note says so.
    A value that no notebook declaring the name takes goes to all of them, and _check refuses it.
    """
    takers, notes = {}, []
    for key, value in overrides.items():
        declaring = [name for name, own in declared.items() if key in own]
        fitting = [name for name in declaring if _accepts(name, key, value, declared)]
        takers[key] = fitting or declaring
        left = [name for name in declaring if name not in takers[key]]
        if left:
            kinds = sorted({declared[name][key].expected or "any" for name in left})
            notes.append(
                f"-p {key}={value!r} goes to {', '.join(takers[key])}; {', '.join(left)} "
                f"take {' or '.join(kinds)} and keep their own {key}."
            )
    return takers, notes


def discover_notebooks(project: Path) -> dict[str, Path]:
    """The chain: notebooks/NN_*.ipynb in name order, so a new step joins by being there."""
    found = {path.stem: path for path in sorted((project / "notebooks").glob(NOTEBOOK_GLOB))}
    if not found:
        raise RunnerInputError(f"No notebooks match {project / 'notebooks' / NOTEBOOK_GLOB}.")
    return found


def declared_parameters(path: Path) -> dict[str, Declared]:
    """The parameters cell of a notebook, as papermill reads it, with the type of each default."""
    try:
        found = papermill.inspect_notebook(literal(path))
    except Exception as error:  # nbformat and papermill raise several kinds for a broken file
        raise RunnerInputError(f"{path} cannot be read as a notebook: {one_line(error)}.") from None
    return {name: _declared(info) for name, info in found.items()}


def literal(path: Path) -> str:
    """A path papermill will not treat as a format string (it calls str.format on paths)."""
    return str(path).replace("{", "{{").replace("}", "}}")


_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "str": str,
    "bool": bool,
    "list": list,
    "dict": dict,
}


def _check(
    values: dict[str, Any], declared: dict[str, dict[str, Declared]], where: str, scope: str
) -> None:
    """Refuse run_dir, a key no notebook declares, or a value unlike the notebook's default."""
    allowed = sorted({key for own in declared.values() for key in own} - {"run_dir"})
    for key, value in values.items():
        if key == "run_dir":
            raise RunnerInputError(
                f"run_dir {where} is refused: the runner gives every run its own folder; "
                "use --run-dir DIR to choose it."
            )
        takers = [name for name, own in declared.items() if key in own]
        if not takers:
            raise RunnerInputError(
                f"Unknown parameter {key!r} {where}: {scope} "
                f"{', '.join(allowed) or 'no parameters'}."
            )
        for name in takers:
            expected = declared[name][key].expected
            if not _accepts(name, key, value, declared):
                hint = "; quote it to keep it text" if expected == "str" else ""
                raise RunnerInputError(
                    f"Parameter {key}={value!r} {where} is {type(value).__name__}, but {name} "
                    f"expects {expected} (default {declared[name][key].default}){hint}."
                )


def _declared(info: dict[str, str]) -> Declared:
    """The expected type: the annotation if papermill found one, else the default's literal type."""
    annotation = info["inferred_type_name"]
    if annotation != "None":  # papermill writes the string "None" when there is no annotation
        base = annotation.split("[")[0].strip()
        return Declared(base if base in _TYPES else None, info["default"])
    try:
        default = ast.literal_eval(info["default"])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Declared(None, info["default"])
    kind = type(default).__name__
    return Declared(kind if kind in _TYPES else None, info["default"])


def _accepts(stem: str, key: str, value: Any, declared: dict[str, dict[str, Declared]]) -> bool:
    """The step's own type for the parameter when the notebook has a step (its Params may take
    more than the default's type: batch_size "auto"), else the type of the notebook's default."""
    verdict = steps.takes(stem, key, value)
    return _fits(value, declared[stem][key].expected) if verdict is None else verdict


def _fits(value: Any, expected: str | None) -> bool:
    """True when value may replace a default of the expected type; bool is not a number here."""
    if expected is None:
        return True
    if isinstance(value, bool) and expected != "bool":
        return False
    return isinstance(value, _TYPES[expected])


def _coerce(value: Any, expected: str | None) -> Any:
    """An int given for a float parameter reaches the notebook as a float."""
    if expected == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _select(chain: dict[str, Path], only: list[str] | None) -> list[str]:
    """The notebooks whose names start with one of the prefixes, in chain order."""
    if only is None:
        return list(chain)
    prefixes = [prefix.strip() for prefix in only if prefix.strip()]
    if not prefixes:
        raise RunnerInputError(f"--only names no notebook: give prefixes of {', '.join(chain)}.")
    for prefix in prefixes:
        if not any(name.startswith(prefix) for name in chain):
            raise RunnerInputError(
                f"--only {prefix!r} matches no notebook: the project has {', '.join(chain)}."
            )
    return [name for name in chain if any(name.startswith(prefix) for prefix in prefixes)]


def _find_project(project_dir: str | Path | None) -> Path:
    try:
        return project_root(Path(project_dir) if project_dir is not None else None)
    except FileNotFoundError as error:
        raise RunnerInputError(str(error)) from None
