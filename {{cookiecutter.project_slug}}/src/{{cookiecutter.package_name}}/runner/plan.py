"""Which notebooks run, with which values: every value checked before the first notebook starts.

Values are checked against the parameters the notebooks declare (names and annotated types, read
from the cells without papermill or TensorFlow), so a typo in a profile or a `-p key=value` costs
well under a second, not the minutes the chain takes to reach the notebook that reads it. Ranges
and relations are the steps' own checks (steps.preflight), run afterwards.

Where a value comes from, weakest first: the notebook's default, the profile's `shared`, the
profile's `notebooks.<name>`, `-p key=value` (every selected notebook declaring key), and
`-p <notebook>.key=value` (that notebook only). Plan.sources says it for every value.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artifacts import project_root
from ..steps import coerce, fits
from .cells import Declared, check_takes_run_dir, declared_parameters
from .profile import RunnerInputError, load_profile, near

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
DEFAULT = "default"


@dataclass(frozen=True)
class Plan:
    """A validated run: which notebooks run, with which values. Nothing has run yet."""

    project: Path
    profile: str
    description: str
    notebooks: dict[str, Path]
    parameters: dict[str, dict[str, Any]]  # the values given (not the defaults), per notebook
    overrides: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the runner decided and says first
    declared: dict[str, dict[str, Declared]] = field(default_factory=dict)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> key -> where from
    held: dict[str, dict[str, Any]] = field(default_factory=dict)  # the cells' own values


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
                f"Unknown notebook {name!r} in {source} (notebooks){near(name, chain)}: "
                f"the project has {', '.join(chain)}."
            )
        _check(
            values, {name: declared[name]}, f"in {source} (notebooks.{name})", f"{name} declares"
        )
    chosen = {name: declared[name] for name in selected}
    for name in selected:  # the runner passes each its run folder: its tagged cell must take it
        check_takes_run_dir(chain[name], declared[name])
    general, scoped = _split(overrides, chain, selected)
    scope = "the notebooks declare" if only is None else "the selected notebooks declare"
    takers, notes = _takers(general, chosen)
    for key, value in general.items():
        _check(
            {key: value}, {name: chosen[name] for name in takers[key]} or chosen, "from -p", scope
        )
    for name, values in scoped.items():
        for key, value in values.items():
            _check({key: value}, {name: chosen[name]}, f"from -p {name}.{key}", f"{name} declares")

    parameters: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, str]] = {}
    for name in selected:
        own = declared[name]
        layers = [
            ({k: v for k, v in spec["shared"].items() if k in own}, f"profile {profile}"),
            (spec["notebooks"].get(name, {}), f"profile {profile} ({name})"),
            ({k: v for k, v in general.items() if name in takers[k]}, "-p"),
            (scoped.get(name, {}), f"-p {name}."),
        ]
        values, where = {}, {}
        for layer, said in layers:
            values.update(layer)
            where.update({key: said + (key if said.endswith(".") else "") for key in layer})
        parameters[name] = {key: coerce(value, own[key].hint) for key, value in values.items()}
        sources[name] = {key: where.get(key, DEFAULT) for key in own if key != "run_dir"}
    return Plan(
        project=project,
        profile=profile,
        description=spec["description"],
        notebooks={name: chain[name] for name in selected},
        parameters=parameters,
        overrides=overrides,
        notes=notes,
        declared={name: declared[name] for name in selected},
        sources=sources,
        held={name: held_values(declared[name]) for name in selected},
    )


def held_values(declared: dict[str, Declared]) -> dict[str, Any]:
    """Each parameter's value as its cell writes it, where that is a literal (run_dir aside).

    papermill injects only the values a profile or `-p` gives; every other parameter keeps what
    the notebook's cell says (a data_dir saved in JupyterLab runs headless too), so the
    pre-flight check checks these, with the plan's values over them (chain.preflight)."""
    held = {}
    for key, own in declared.items():
        if key == "run_dir":
            continue
        try:
            held[key] = ast.literal_eval(own.default)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # an expression: the step's own default stands in for it, as before
    return held


def _split(
    overrides: dict[str, Any], chain: dict[str, Path], selected: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """-p values for every notebook declaring the name, and `<notebook>.name` ones, by notebook.
    A notebook is named in full or by a prefix that only it has (03.epochs)."""
    general: dict[str, Any] = {}
    scoped: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        prefix, dot, name = key.rpartition(".")
        if not dot:
            general[key] = value
            continue
        matches = [stem for stem in chain if stem == prefix] or [
            stem for stem in chain if stem.startswith(prefix)
        ]
        if len(matches) != 1 or not name:
            raise RunnerInputError(
                f"-p {key}: {prefix!r} names no single notebook{near(prefix, chain)}; "
                f"the project has {', '.join(chain)}."
            )
        if matches[0] not in selected:
            raise RunnerInputError(
                f"-p {key} is for {matches[0]}, which this run does not select (--only)."
            )
        scoped.setdefault(matches[0], {})[name] = value
    return general, scoped


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
        fitting = [name for name in declaring if _fits(value, declared[name][key].hint)]
        takers[key] = fitting or declaring
        left = [name for name in declaring if name not in takers[key]]
        if left:
            kinds = sorted({declared[name][key].expected for name in left})
            notes.append(
                f"-p {key}={value!r} goes to {', '.join(takers[key])}; {', '.join(left)} "
                f"take {' or '.join(kinds)} and keep their own {key}."
            )
        elif len(declaring) > 1:
            notes.append(
                f"-p {key}={value!r} goes to {', '.join(declaring)}; -p <notebook>.{key}=… "
                "sets one of them."
            )
    return takers, notes


def discover_notebooks(project: Path) -> dict[str, Path]:
    """The chain: notebooks/NN_*.ipynb in name order, so a new step joins by being there."""
    found = {path.stem: path for path in sorted((project / "notebooks").glob(NOTEBOOK_GLOB))}
    if not found:
        raise RunnerInputError(f"No notebooks match {project / 'notebooks' / NOTEBOOK_GLOB}.")
    return found


def literal(path: Path) -> str:
    """A path papermill will not treat as a format string (it calls str.format on paths)."""
    return str(path).replace("{", "{{").replace("}", "}}")


def _check(
    values: dict[str, Any], declared: dict[str, dict[str, Declared]], where: str, scope: str
) -> None:
    """Refuse run_dir, a key no notebook declares, or a value the notebook's type does not take."""
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
                f"Unknown parameter {key!r} {where}{near(key, allowed)}; {scope} "
                f"{', '.join(allowed) or 'no parameters'}."
            )
        for name in takers:
            own = declared[name][key]
            if not _fits(value, own.hint):
                hint = "; quote it to keep it text" if own.expected == "str" else ""
                raise RunnerInputError(
                    f"Parameter {key}={value!r} {where} is {type(value).__name__}, but {name} "
                    f"expects {own.expected} (default {own.default}){hint}."
                )


def _fits(value: Any, hint: Any) -> bool:
    return fits(coerce(value, hint), hint)


def _select(chain: dict[str, Path], only: list[str] | None) -> list[str]:
    """The notebooks whose names start with one of the prefixes, in chain order. A notebook's
    file name or path (`03_train.ipynb`, `notebooks/03_train.ipynb`, as a shell completes it)
    counts as its name; any other dotted word is a prefix that matches no notebook."""
    if only is None:
        return list(chain)
    prefixes = [Path(p.strip()).name.removesuffix(".ipynb") for p in only if p.strip()]
    if not prefixes:
        raise RunnerInputError(f"--only names no notebook: give prefixes of {', '.join(chain)}.")
    for prefix in prefixes:
        if not any(name.startswith(prefix) for name in chain):
            raise RunnerInputError(
                f"--only {prefix!r} matches no notebook{near(prefix, chain)}: the project has "
                f"{', '.join(chain)}."
            )
    return [name for name in chain if any(name.startswith(prefix) for prefix in prefixes)]


def _find_project(project_dir: str | Path | None) -> Path:
    try:
        return project_root(Path(project_dir) if project_dir is not None else None)
    except FileNotFoundError as error:
        raise RunnerInputError(str(error)) from None
