"""Run the notebook chain headlessly with papermill: one run folder per run, recorded and reported.

A profile (configs/<name>.yaml) names parameter values; every value is checked against the
parameters the notebooks declare before the first notebook starts, so a typo in a profile or a
`-p key=value` costs a second, not the minutes the chain takes to reach the notebook that reads it.
"""

from __future__ import annotations

import ast
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import papermill
import yaml
from jupyter_client.manager import AsyncKernelManager

from .artifacts import STEPS, project_root, write_json

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
KERNEL = "python3"
PROFILE_KEYS = ("description", "shared", "notebooks")


class RunnerInputError(ValueError):
    """A profile, parameter or notebook selection was refused; no notebook was started."""


class NotebookFailed(RuntimeError):
    """A notebook stopped the chain; its executed copy, with the error, stays in the run folder."""

    def __init__(self, message: str, notebook: str, executed: Path, run_dir: Path) -> None:
        super().__init__(message)
        self.notebook = notebook
        self.executed = executed
        self.run_dir = run_dir


@dataclass(frozen=True)
class Plan:
    """A validated run: which notebooks run, with which values. Nothing has run yet."""

    project: Path
    profile: str
    description: str
    notebooks: dict[str, Path]
    parameters: dict[str, dict[str, Any]]
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    """Where a finished run lives, and its record (the content of run.json)."""

    run_dir: Path
    record: dict[str, Any]


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """Read `key=value` items as YAML values (3 → int, 0.1 → float, true → bool, text → str)."""
    overrides: dict[str, Any] = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RunnerInputError(
                f"Parameter {item!r} is not of the form key=value, e.g. epochs=3."
            )
        try:
            overrides[key] = yaml.load(text, Loader=_Loader)
        except yaml.YAMLError as error:
            raise RunnerInputError(
                f"The value of {item!r} is not a YAML value ({_one_line(error)}); quote text."
            ) from None
    return overrides


def run_chain(
    profile: str = "default",
    overrides: dict[str, Any] | None = None,
    run_dir: str | Path | None = None,
    project_dir: str | Path | None = None,
    only: list[str] | None = None,
) -> RunResult:
    """Validate everything, then execute the notebooks in order into one run folder.

    Writes <run>/notebooks/<name>.ipynb, run.json and report.md, also when a notebook fails
    (NotebookFailed names the notebook, the cell and the executed copy).
    """
    plan = plan_run(profile, overrides, project_dir=project_dir, only=only)
    folder = create_run_dir(plan.project, plan.profile, run_dir)
    entries = [_entry(plan, name, folder) for name in plan.notebooks]
    record: dict[str, Any] = {
        "profile": plan.profile,
        "description": plan.description,
        "overrides": plan.overrides,
        "project_dir": str(plan.project),
        "run_dir": str(folder),
        "started": _now(),
        "finished": None,
        "status": "running",
        # Notebooks run into this folder earlier (say --only 03 after 00-02) stay listed.
        "notebooks": sorted(
            [*_earlier_entries(folder, plan.notebooks), *entries], key=lambda e: e["name"]
        ),
    }
    print(f"Profile {plan.profile}: {len(entries)} notebook(s) into {folder}", flush=True)
    try:
        for number, entry in enumerate(entries, start=1):
            entry["status"] = "running"
            _save(folder, record)  # run.json shows the running notebook, even after a kill
            print(f"[{number}/{len(entries)}] {entry['name']} …", end=" ", flush=True)
            _execute(plan.notebooks[entry["name"]], entry, folder)
        record["status"] = "ok"
    except NotebookFailed:
        record["status"] = "failed"
        raise
    except BaseException:
        record["status"] = "interrupted"
        raise
    finally:
        record["finished"] = _now()
        _save(folder, record)
    return RunResult(run_dir=folder, record=record)


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
    _check(overrides, {name: declared[name] for name in selected}, "from -p", scope)

    parameters = {}
    for name in selected:
        own = declared[name]
        values = {key: value for key, value in spec["shared"].items() if key in own}
        values.update(spec["notebooks"].get(name, {}))
        values.update({key: value for key, value in overrides.items() if key in own})
        parameters[name] = {key: _coerce(value, own[key].expected) for key, value in values.items()}
    return Plan(
        project=project,
        profile=profile,
        description=spec["description"],
        notebooks={name: chain[name] for name in selected},
        parameters=parameters,
        overrides=overrides,
    )


def load_profile(project: Path, name: str) -> dict[str, Any]:
    """configs/<name>.yaml as {description, shared, notebooks}; a malformed file is refused."""
    available = sorted(path.stem for path in (project / "configs").glob("*.yaml"))
    if name not in available:
        raise RunnerInputError(
            f"Unknown profile {name!r}: configs/ holds {', '.join(available) or 'no profiles'}."
        )
    path = project / "configs" / f"{name}.yaml"
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    except yaml.YAMLError as error:
        raise RunnerInputError(f"{path} is not valid YAML: {_one_line(error)}.") from None
    if not isinstance(data, dict) or set(data) - set(PROFILE_KEYS):
        extra = sorted(map(str, set(data) - set(PROFILE_KEYS))) if isinstance(data, dict) else []
        raise RunnerInputError(
            f"{path} must be a mapping with the keys {', '.join(PROFILE_KEYS)}"
            + (f", not {', '.join(map(repr, extra))}." if extra else ".")
        )
    shared = data.get("shared") or {}
    notebooks = data.get("notebooks") or {}
    sections = [shared, *notebooks.values()] if isinstance(notebooks, dict) else [notebooks]
    if not isinstance(shared, dict) or not all(isinstance(s, dict | None) for s in sections):
        raise RunnerInputError(
            f"{path}: shared must map names to values, and notebooks must map each notebook "
            "name to such a mapping."
        )
    return {
        "description": str(data.get("description") or ""),
        "shared": {str(key): value for key, value in shared.items()},
        "notebooks": {
            str(name): {str(key): value for key, value in (values or {}).items()}
            for name, values in notebooks.items()
        },
    }


def discover_notebooks(project: Path) -> dict[str, Path]:
    """The chain: notebooks/NN_*.ipynb in name order, so a new step joins by being there."""
    found = {path.stem: path for path in sorted((project / "notebooks").glob(NOTEBOOK_GLOB))}
    if not found:
        raise RunnerInputError(f"No notebooks match {project / 'notebooks' / NOTEBOOK_GLOB}.")
    return found


class Declared(NamedTuple):
    """A parameter as a notebook declares it: the type its value must have (None: any)."""

    expected: str | None
    default: str


def declared_parameters(path: Path) -> dict[str, Declared]:
    """The parameters cell of a notebook, as papermill reads it, with the type of each default."""
    try:
        found = papermill.inspect_notebook(_literal(path))
    except Exception as error:  # nbformat and papermill raise several kinds for a broken file
        raise RunnerInputError(
            f"{path} cannot be read as a notebook: {_one_line(error)}."
        ) from None
    return {name: _declared(info) for name, info in found.items()}


def create_run_dir(project: Path, profile: str, run_dir: str | Path | None = None) -> Path:
    """The given folder (made if needed), or a new artifacts/<time>-<profile> no run has used."""
    if run_dir is not None:
        folder = Path(run_dir).expanduser().resolve()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunnerInputError(f"--run-dir {run_dir} cannot be used: {error}.") from None
        return folder
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = project / "artifacts" / f"{stamp}-{profile}"
    for suffix in range(1, 1000):
        folder = base if suffix == 1 else base.with_name(f"{base.name}-{suffix}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise RunnerInputError(f"{base} and 999 suffixed names exist already; pass --run-dir.")


def write_report(run_dir: Path, record: dict[str, Any]) -> Path:
    """report.md: the notebooks with status and time, then each metrics file's scalar values."""
    lines = [
        f"# Run {run_dir.name}",
        "",
        f"Profile **{record['profile']}**: {record.get('description') or 'no description'}  ",
        f"Status: **{record['status']}**, started {record['started']}, "
        f"finished {record.get('finished') or '-'}  ",
        f"Overrides: {_cell(record.get('overrides') or 'none')}",
        "",
        "| notebook | status | seconds | executed notebook |",
        "|---|---|---:|---|",
    ]
    for entry in record["notebooks"]:
        seconds = "-" if entry.get("seconds") is None else f"{entry['seconds']:.1f}"
        executed = entry.get("executed", "")
        link = f"[{executed}]({executed})" if (run_dir / executed).is_file() else "-"
        lines.append(f"| {entry['name']} | {entry['status']} | {seconds} | {link} |")
    lines += ["", "## Metrics", ""]
    files = sorted((run_dir / "metrics").glob("*.json"), key=_step_order)
    if not files:
        lines.append("No notebook wrote metrics/*.json in this run folder.")
    for path in files:
        lines += [f"### {path.stem}", "", f"From `metrics/{path.name}`.", ""]
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            lines += [f"Could not be read: {_one_line(error)}.", ""]
            continue
        scalars = {
            key: value
            for key, value in (metrics.items() if isinstance(metrics, dict) else [])
            if value is None or isinstance(value, str | int | float | bool)
        }
        if scalars:
            lines += ["| key | value |", "|---|---|"]
            lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in sorted(scalars.items())]
        else:
            lines.append("No top-level scalar values; see the JSON file.")
        lines.append("")
    path = run_dir / "report.md"
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


# --- execution ------------------------------------------------------------------------------------


def _entry(plan: Plan, name: str, folder: Path) -> dict[str, Any]:
    """The run.json entry of one notebook, before it runs: updated in place as it does."""
    return {
        "name": name,
        "profile": plan.profile,
        "status": "not run",
        "seconds": None,
        "parameters": {**plan.parameters[name], "run_dir": str(folder)},
        "executed": f"notebooks/{name}.ipynb",
        "kernel_log": f"notebooks/{name}.kernel.log",
    }


def _execute(source: Path, entry: dict[str, Any], folder: Path) -> None:
    """Run one notebook with papermill into the run folder and update its entry in place.

    The kernel's stderr (TensorFlow's C++ log, a crash report) goes to <name>.kernel.log rather
    than between the progress lines; ipykernel also copies what cells write there into the notebook.
    """
    executed = folder / entry["executed"]
    executed.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        with (folder / entry["kernel_log"]).open("ab") as kernel_log:
            papermill.execute_notebook(
                _literal(source),
                _literal(executed),
                parameters=entry["parameters"],
                kernel_name=KERNEL,
                cwd=str(source.parent),
                progress_bar=False,
                kernel_manager_class=_kernel_manager(kernel_log),
            )
    except Exception as error:
        entry.update(status="failed", seconds=_since(started), error=_describe(error))
        print(f"FAILED ({entry['seconds']:.1f} s)", flush=True)
        message = _failure_message(entry["name"], error, executed, folder / entry["kernel_log"])
        raise NotebookFailed(message, entry["name"], executed, folder) from error
    except BaseException:
        entry.update(status="interrupted", seconds=_since(started))
        print(f"interrupted ({entry['seconds']:.1f} s)", flush=True)
        raise
    entry.update(status="ok", seconds=_since(started))
    print(f"ok ({entry['seconds']:.1f} s)", flush=True)


def _failure_message(name: str, error: Exception, executed: Path, kernel_log: Path) -> str:
    """One or two sentences: which notebook, which cell, what was raised, where the copy is."""
    kept = (
        f"The executed notebook is kept at {executed}."
        if executed.is_file()
        else f"No executed notebook was written; the kernel's messages are in {kernel_log}."
    )
    if isinstance(error, papermill.PapermillExecutionError):
        first = next((line for line in error.source.splitlines() if line.strip()), "")
        cell = f"[{error.exec_count}]" if error.exec_count is not None else f"#{error.cell_index}"
        return (
            f"{name} failed in cell {cell} `{_short(first, 60)}` with "
            f"{error.ename}: {_sentence(_short(_one_line(error.evalue), 300))} {kept}"
        )
    return (
        f"{name} stopped: {type(error).__name__}: {_sentence(_short(_one_line(error), 300))} {kept}"
    )


def _describe(error: Exception) -> dict[str, Any]:
    """The error, for run.json."""
    if isinstance(error, papermill.PapermillExecutionError):
        return {
            "cell": error.exec_count,
            "cell_index": error.cell_index,
            "ename": error.ename,
            "evalue": error.evalue,
        }
    return {"ename": type(error).__name__, "evalue": str(error)}


def _kernel_manager(stderr: BinaryIO) -> type[AsyncKernelManager]:
    """A kernel manager class (nbclient's kernel_manager_class) whose kernel writes to `stderr`."""

    class KernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:  # kw ends up in subprocess.Popen
            await super().start_kernel(**{**kw, "stderr": stderr})

    return KernelManager


def _save(folder: Path, record: dict[str, Any]) -> None:
    write_json(folder / "run.json", record)
    write_report(folder, record)


def _earlier_entries(folder: Path, names: dict[str, Path]) -> list[dict[str, Any]]:
    """Entries of run.json from earlier runs into this folder, for notebooks not run now."""
    try:
        earlier = json.loads((folder / "run.json").read_text(encoding="utf-8"))["notebooks"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [e for e in earlier if isinstance(e, dict) and e.get("name") not in names]


# --- validation -----------------------------------------------------------------------------------

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
            if not _fits(value, expected):
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


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads 1e-3 as a float (as YAML 1.2 does), the way rates are written."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


# --- small helpers --------------------------------------------------------------------------------


def _literal(path: Path) -> str:
    """A path papermill will not treat as a format string (it calls str.format on paths)."""
    return str(path).replace("{", "{{").replace("}", "}}")


def _step_order(path: Path) -> tuple[int, str]:
    return (STEPS.index(path.stem) if path.stem in STEPS else len(STEPS), path.stem)


def _cell(value: Any) -> str:
    """A value as a markdown table cell."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, dict):
        text = ", ".join(f"{key}={item!r}" for key, item in value.items())
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _one_line(error: object) -> str:
    return " ".join(str(error).split())


def _sentence(text: str) -> str:
    """Text ending in one full stop, whether or not it had one."""
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
