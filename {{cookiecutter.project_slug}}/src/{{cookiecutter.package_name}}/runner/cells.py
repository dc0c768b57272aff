"""The `parameters` cell of a notebook: what it declares, with which types, read without papermill.

The runner reads the cells to refuse a bad name or type in well under a second (papermill and
TensorFlow take seconds to import). Each line is written with a type annotation papermill can
read (`epochs: int = 5  # help`, `Optional[str]` rather than `str | None`, which papermill's
parser skips), so `papermill --help-notebook` shows a type for every parameter too.

`drift()` names each line whose annotation differs from the step's Params; `annotate()` rewrites
those lines in place. After changing a Params field, run:

    python -m <package>.runner.cells notebooks/*.ipynb          # list drift, exit 1 if any
    python -m <package>.runner.cells --write notebooks/*.ipynb  # fix it
"""

from __future__ import annotations

import ast
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple

from ..steps import type_name
from .profile import RunnerInputError, one_line

TAG = "parameters"
# What a parameters cell may name in an annotation: builtin types and typing's Optional/Union.
_NAMES: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "dict": dict,
    "None": type(None),
    "Any": Any,
    "Optional": typing.Optional,
    "Union": typing.Union,
}
IMPORT = "from typing import Optional, Union"  # what a cell with Optional or Union needs
_LINE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?::\s*(?P<annotation>[^=]+?))?\s*=(?P<rest>.*)$")


class Declared(NamedTuple):
    """A parameter as its notebook declares it: the type its value must have, and its default."""

    hint: Any  # a type, a Union, or Any when neither an annotation nor the default tells
    default: str  # the default as written
    line: int  # line in the cell, from 1
    annotation: str | None  # as written, or None

    @property
    def expected(self) -> str:
        return type_name(self.hint)


def declared_parameters(path: Path) -> dict[str, Declared]:
    """The parameters cell of a notebook: each name with its type and default."""
    _, source = parameters_cell(path)
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise RunnerInputError(
            f"{path}: the parameters cell is not valid Python ({one_line(error)})."
        ) from None
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
            annotation = ast.get_source_segment(source, node.annotation)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name, value, annotation = node.targets[0].id, node.value, None
        else:
            continue
        default = ast.get_source_segment(source, value) if value is not None else "None"
        hint = hint_of(annotation) if annotation else _literal_type(default)
        declared[name] = Declared(hint, default or "None", node.lineno, annotation)
    return declared


def parameters_cell(path: Path) -> tuple[int, str]:
    """(index, source) of the cell tagged `parameters`; one sentence when there is none."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RunnerInputError(f"{path} cannot be read as a notebook: {one_line(error)}.") from None
    for index, cell in enumerate(cells):
        if TAG in cell.get("metadata", {}).get("tags", []):
            source = cell.get("source", "")
            return index, "".join(source) if isinstance(source, list) else source
    raise RunnerInputError(
        f"{path} has no cell tagged {TAG!r}, so the runner could give it neither its values nor "
        f"the run folder (it would write to its own default folder): {restore(path)}."
    )


def check_takes_run_dir(path: Path, declared: dict[str, Declared]) -> None:
    """Refuse a notebook whose tagged cell does not set run_dir: papermill would inject the run
    folder there and the real parameters cell, no longer tagged, would set it back to the
    notebook's default (artifacts/interactive), so the run would say ok with nothing in it."""
    if "run_dir" not in declared:
        raise RunnerInputError(
            f"{path}: the cell tagged {TAG!r} does not set run_dir, so the run folder the runner "
            f"passes would be replaced by the notebook's own default: {restore(path)}."
        )


def restore(path: Path) -> str:
    """How to put the tag back: in JupyterLab, or from git."""
    return (
        f"give the tag {TAG!r} back to the cell that sets run_dir, and to no other (JupyterLab: "
        "select the cell, open the Property Inspector, the gear icon on the right, add the tag), "
        f"or restore the notebook with `git checkout -- notebooks/{Path(path).name}`"
    )


def hint_of(annotation: str) -> Any:
    """A type from an annotation's text ("Optional[str]" → str | None); Any if it is not one of
    the simple types a parameter can have (the value is then not checked here)."""
    try:
        return _hint(ast.parse(annotation, mode="eval").body)
    except (SyntaxError, KeyError, TypeError, ValueError):
        return Any


def annotation_of(hint: Any) -> str:
    """The annotation papermill reads for a type: int, Optional[str], Union[int, str]."""
    args = (
        typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else ()
    )
    if not args:
        return getattr(hint, "__name__", str(hint))
    names = [annotation_of(arg) for arg in args if arg is not type(None)]
    if len(names) == 1:
        return f"Optional[{names[0]}]" if type(None) in args else names[0]
    return f"Union[{', '.join(names + ['None'] * (type(None) in args))}]"


def drift(path: Path, hints: dict[str, Any]) -> list[str]:
    """One line per parameter whose annotation is missing or differs from `hints` (the step's
    Params types): the notebook, the cell, the line, and what it should say."""
    index, _ = parameters_cell(path)
    found = []
    for name, declared in declared_parameters(path).items():
        if name not in hints:
            continue
        wanted = annotation_of(hints[name])
        if declared.annotation is None or hint_of(declared.annotation) != hints[name]:
            found.append(
                f"{Path(path).name}: cell {index} line {declared.line}: {name} is annotated "
                f"{declared.annotation or 'not at all'}; the step's Params say {wanted}"
            )
    return found


def annotate(path: Path, hints: dict[str, Any]) -> int:
    """Rewrite the parameters cell so that each name in `hints` carries its annotation; keeps the
    values and comments as written (also template syntax in them). Returns the lines changed."""
    index, source = parameters_cell(path)
    lines, changed = source.split("\n"), 0
    for number, text in enumerate(lines):
        match = _LINE.match(text)
        if not match or match["name"] not in hints:
            continue
        wanted = annotation_of(hints[match["name"]])
        if match["annotation"] and match["annotation"].strip() == wanted:
            continue
        lines[number] = f"{match['name']}: {wanted} ={match['rest']}"
        changed += 1
    text = "\n".join(lines)
    needs = any(word in text for word in ("Optional[", "Union["))
    if needs and IMPORT not in text:
        text, changed = f"{IMPORT}\n\n{text}", changed + 1
    if changed:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
        notebook["cells"][index]["source"] = text.splitlines(keepends=True)
        body = json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True)
        Path(path).write_text(body + "\n", encoding="utf-8")
    return changed


def step_hints(stem: str) -> dict[str, Any] | None:
    """The types of the parameters of the step notebook `stem`: run_dir and its Params (this
    imports the step's module, so TensorFlow; quietly)."""
    from .. import quiet, steps

    quiet.import_tensorflow()
    step = steps.for_notebook(stem)
    if step is None or step not in steps.available():
        return None
    return {"run_dir": str, **typing.get_type_hints(steps.module(step).Params)}


def main(argv: list[str] | None = None) -> int:
    """List (or with --write, fix) the parameters cells that drifted from their steps' Params."""
    args = sys.argv[1:] if argv is None else argv
    write = "--write" in args
    drifted = 0
    for path in (Path(arg) for arg in args if arg != "--write"):
        hints = step_hints(path.stem)
        if hints is None:
            continue
        if write:
            changed = annotate(path, hints)
            if changed:
                print(f"{path}: {changed} line(s) rewritten")
        for line in drift(path, hints):
            print(line)
            drifted += 1
    return 1 if drifted else 0


def _hint(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and node.value is None:
        return type(None)
    if isinstance(node, ast.Name):
        return _NAMES[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return typing.Union[_hint(node.left), _hint(node.right)]  # noqa: UP007
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        args = tuple(_hint(arg) for arg in inner)
        if node.value.id in ("Optional", "Union"):
            return _NAMES[node.value.id][args if len(args) > 1 else args[0]]
        return _NAMES[node.value.id][args]
    raise ValueError("not a simple type")


def _literal_type(default: str | None) -> Any:
    """Without an annotation: the type of the default (None or a non-literal: any)."""
    try:
        value = ast.literal_eval(default or "None")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Any
    kind = type(value)
    return kind if kind in (int, float, str, bool, list, dict) else Any


if __name__ == "__main__":
    sys.exit(main())
