"""The committed notebooks are clean, parameterized and valid; the nbstripout hook keeps them so.

Executing them is `make test`'s second command (`pytest --nbval-lax notebooks`); these checks
read the files only and take a second.
"""

from __future__ import annotations

import ast
import copy
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml
from nbstripout import strip_output

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
PARAMETERS = "parameters"


def test_the_environment_notebook_is_there() -> None:
    """The chain starts with 00_environment, so the checks below have something to check."""
    assert ROOT / "notebooks" / "00_environment.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_valid_nbformat_4_5(path: Path) -> None:
    """nbformat validation passes, at version 4.5 or later, with an id on every cell."""
    notebook = _read(path)
    nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) >= (4, 5)
    assert all(cell.get("id") for cell in notebook.cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    """No outputs and no execution counts: diffs show code and prose only."""
    code = [cell for cell in _read(path).cells if cell.cell_type == "code"]
    assert code, "a notebook without code cells calls nothing"
    assert [i for i, cell in enumerate(code) if cell.outputs] == []
    assert [i for i, cell in enumerate(code) if cell.execution_count is not None] == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_has_exactly_one_parameters_cell(path: Path) -> None:
    """papermill injects values after the one code cell tagged `parameters`."""
    tagged = [cell for cell in _read(path).cells if PARAMETERS in _tags(cell)]
    assert len(tagged) == 1, f"{len(tagged)} cells tagged {PARAMETERS!r}"
    assert tagged[0].cell_type == "code"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_every_parameter_is_visible_to_papermill(path: Path) -> None:
    """Each name the parameters cell assigns is one papermill (and so the runner) can set.

    papermill silently drops a line it cannot parse (a comment holding "=" is enough), and the
    runner then refuses that parameter as unknown.
    """
    (cell,) = [cell for cell in _read(path).cells if PARAMETERS in _tags(cell)]
    assigned = {
        target.id
        for node in ast.parse(cell.source).body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert assigned, "the parameters cell assigns nothing"
    assert "run_dir" in assigned, "every notebook takes run_dir"
    assert set(papermill.inspect_notebook(str(path))) == assigned


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_papermill_shows_a_type_for_every_parameter(path: Path) -> None:
    """`papermill --help-notebook` says "Unknown type" for a parameter without an annotation it
    can read (it skips `X | None`: the cells write Optional[X])."""
    found = papermill.inspect_notebook(str(path))
    untyped = [name for name, info in found.items() if info["inferred_type_name"] == "None"]
    assert not untyped, f"{path.name}: no type papermill can read for {', '.join(untyped)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_kernelspec_is_pinned(path: Path) -> None:
    """The python3 kernelspec, so JupyterLab, papermill and nbval all pick the venv's kernel."""
    assert dict(_read(path).metadata.get("kernelspec", {})) == KERNELSPEC


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_no_cell_formats_a_ratio_a_short_benchmark_leaves_null(path: Path) -> None:
    """Issue 42 §1.6: a benchmark too short to compare writes its ratios as null; a cell that
    formats one with a spec (`{metrics['speedup_vs_naive']:.1f}`) fails on it (data.times says)."""
    from {{ cookiecutter.package_name }}.data.report import RATIO_KEYS

    code = "\n".join(cell.source for cell in _read(path).cells if cell.cell_type == "code")
    formatted = [key for key in RATIO_KEYS if re.search(rf"\[[\"']{key}[\"']\]:", code)]
    assert not formatted, f"{path.name} formats {formatted} as numbers"


@pytest.fixture(scope="module")
def stripped_by_the_hook(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """The hook's command line run once (it starts in seconds) on copies of the committed
    notebooks and on executed copies of them, in one call: the copies, as it left them."""
    folder = tmp_path_factory.mktemp("nbstripout")
    copies: dict[str, list[Path]] = {"committed": [], "executed": []}
    for path in NOTEBOOKS:
        for kind, notebook in (("committed", _read(path)), ("executed", None)):
            (folder / kind).mkdir(exist_ok=True)
            copies[kind].append(folder / kind / path.name)
            if notebook is None:
                nbformat.write(_as_if_executed(_read(path)), copies[kind][-1])
            else:
                shutil.copyfile(path, copies[kind][-1])
    completed = _nbstripout(*map(str, copies["committed"] + copies["executed"]))
    assert completed.returncode == 0, completed.stderr
    return copies


def test_notebooks_are_unchanged_by_the_nbstripout_hook(
    stripped_by_the_hook: dict[str, list[Path]],
) -> None:
    """Committed as the pre-commit hook leaves them: the first `git commit` rewrites nothing."""
    for path, kept in zip(NOTEBOOKS, stripped_by_the_hook["committed"], strict=True):
        assert kept.read_bytes() == path.read_bytes(), f"the hook rewrites {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_stripping_an_executed_copy_keeps_the_parameters_tag(path: Path) -> None:
    """nbstripout's Python API removes outputs and counts but not the `parameters` tag."""
    stripped = strip_output(
        _as_if_executed(_read(path)), keep_output=False, keep_count=False, keep_id=True
    )
    _assert_stripped_like(stripped, path)


def test_the_hook_strips_an_executed_copy_and_keeps_the_parameters_tag(
    stripped_by_the_hook: dict[str, list[Path]],
) -> None:
    """The hook's own command line, run on executed copies, leaves clean, tagged notebooks."""
    for path, stripped in zip(NOTEBOOKS, stripped_by_the_hook["executed"], strict=True):
        _assert_stripped_like(nbformat.read(stripped, as_version=nbformat.NO_CONVERT), path)


def _nbstripout(*files: str) -> subprocess.CompletedProcess[str]:
    """nbstripout from this venv, with the entry and args of the hook in .pre-commit-config.yaml."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    (hook,) = [hook for hook in hooks if hook["id"] == "nbstripout"]
    program, *entry_args = shlex.split(hook["entry"])
    executable = Path(sys.executable).with_name(program)
    command = [str(executable), *entry_args, *hook.get("args", []), *files]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def _as_if_executed(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as JupyterLab saves it after a run: counts, outputs, timing metadata."""
    executed = copy.deepcopy(notebook)
    for count, cell in enumerate((c for c in executed.cells if c.cell_type == "code"), start=1):
        cell.execution_count = count
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=f"cell {count}\n"),
            nbformat.v4.new_output(
                "execute_result", data={"text/plain": str(count)}, execution_count=count
            ),
        ]
        cell.metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00.000000Z"}
    executed.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    nbformat.validate(executed)
    return executed


def _assert_stripped_like(stripped: nbformat.NotebookNode, committed: Path) -> None:
    """No outputs or counts left, the one `parameters` cell still tagged, the rest as committed."""
    original = _read(committed)
    nbformat.validate(stripped)
    code = [cell for cell in stripped.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code)
    assert [_tags(cell) for cell in stripped.cells] == [_tags(cell) for cell in original.cells]
    assert sum(PARAMETERS in _tags(cell) for cell in stripped.cells) == 1
    assert [cell.source for cell in stripped.cells] == [cell.source for cell in original.cells]
    assert stripped.metadata.get("kernelspec") == original.metadata.get("kernelspec")


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))
