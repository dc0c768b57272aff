"""The package's imports run one way: no module and no floor is part of a circle.

A floor is a top-level module or subpackage (data, figures, train, artifacts …), and a task's
folder (tasks/<folder>/) is a floor of its own, above the seam (tasks/__init__, base, outputs) that
shared code reaches it through. A circle ties its members into one: none can be read, tested or
changed knowing only what lies below it. grimp
builds the graph from the source, imports inside functions and under TYPE_CHECKING included:
deferring an import hides a circle from Python's loader, not from a reader.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import grimp
import pytest

from {{ cookiecutter.package_name }} import parts

PACKAGE = "{{ cookiecutter.package_name }}"

# The floors every step builds on: they hold names, files, figures and lines, and import no step.
LOW_FLOORS = (
    "artifacts",
    "figures",
    "fingerprints",
    "limits",
    "lineage",
    "progress",
    "quiet",
    "steps",
    "writes",
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)


def test_no_module_is_in_an_import_circle(graph: grimp.ImportGraph) -> None:
    found = circles(graph, sorted(graph.modules), as_packages=False)
    assert not found, "import circles between modules:\n" + "\n".join(found)


def test_no_floor_is_in_an_import_circle() -> None:
    """A task's folder may import any shared floor (its training benchmark imports train); the
    shared floors reach it only through the seam, so tasks/ as one floor would be a false circle."""
    graph = task_folders_as_floors(grimp.build_graph(PACKAGE, cache_dir=None))
    assert any(m.endswith("_task") for m in floors(graph)), "no task folder found as a floor"
    found = circles(graph, floors(graph), as_packages=True)
    assert not found, "import circles between floors:\n" + "\n".join(found)


def test_the_low_floors_import_no_step(graph: grimp.ImportGraph) -> None:
    """figures draw from arrays and paths, artifacts and lineage name files: none runs a step."""
    steps = sorted({module.rsplit(".", 1)[0] for module in graph.modules if _is_step(module)})
    assert steps, "no step module found: the rule below would hold vacuously"
    found = [
        " -> ".join(graph.find_shortest_chain(f"{PACKAGE}.{low}", step, as_packages=True) or ())
        for low in LOW_FLOORS
        for step in steps
        if graph.chain_exists(f"{PACKAGE}.{low}", step, as_packages=True)
    ]
    assert not found, "a low floor reaches a step:\n" + "\n".join(found)


# What shared code may import of tasks/: current() (tasks/__init__.py), the Task class and its
# groups (tasks/base.py), and the outputs every task's export gives (tasks/outputs.py).
SEAM = ("tasks", "tasks.base", "tasks.outputs")


def test_shared_code_reaches_a_task_only_through_the_seam(graph: grimp.ImportGraph) -> None:
    """No module outside tasks/ imports a task's folder (tasks/<folder>/...): it asks
    tasks.current(), so the shared code runs the same for every task and a fourth task is one
    folder. (The task's own modules may import shared code: arrows run into the seam, not out.)"""
    seam = {f"{PACKAGE}.{name}" for name in SEAM}
    shared = [m for m in sorted(graph.modules) if not m.startswith(f"{PACKAGE}.tasks")]
    assert len(shared) > 20, "too few shared modules found: the rule below would hold vacuously"
    found = [
        f"{_short(module)} -> {_short(imported)}"
        for module in shared
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if imported.startswith(f"{PACKAGE}.tasks.") and imported not in seam
    ]
    assert not found, "shared code imports a task's folder:\n" + "\n".join(found)


def test_the_data_package_forwards_to_no_task(graph: grimp.ImportGraph) -> None:
    """data/ is shared code below the tasks: the task's step 1 is reached through the seam
    (tasks.current().build_inputs, steps.module("data")), never through data.<name>. So no module
    of data/ imports a task, the seam or the step registry, and none looks a name up at run time
    (a module __getattr__, importlib): an import grimp cannot see is an arrow this file cannot
    check."""
    package = f"{PACKAGE}.data"
    members = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    assert len(members) > 3, "too few data modules found: the rule below would hold vacuously"
    above = (f"{PACKAGE}.tasks", f"{PACKAGE}.seam", f"{PACKAGE}.steps")
    found = [
        f"{_short(module)} -> {_short(imported)}"
        for module in members
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if any(imported == name or imported.startswith(name + ".") for name in above)
    ]
    for module in members:
        tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
        found += [
            f"{_short(module)} defines {node.name}"
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__")
        ]
        found += [
            f"{_short(module)} imports importlib"
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            and "importlib" in {getattr(node, "module", None), *(a.name for a in node.names)}
        ]
    assert not found, "the data package forwards to a task:\n" + "\n".join(found)


def test_every_hook_of_a_part_names_a_function() -> None:
    """A parts.Hook is the registry's one call upward, invisible to the graph: it must resolve."""
    hooks = [
        (part.__name__, value)
        for part in parts.present()
        for value in vars(part).values()
        if isinstance(value, parts.Hook)
    ]
    if not hooks:
        pytest.skip("this project holds no optional part with a hook (all were declined)")
    for owner, hook in hooks:
        module = importlib.import_module(f"{PACKAGE}.{hook.module}")
        assert callable(getattr(module, hook.function, None)), f"{owner}: {hook} names nothing"


def floors(graph: grimp.ImportGraph) -> list[str]:
    """The package's children: its top-level modules and subpackages."""
    return sorted(graph.find_children(PACKAGE))


def task_folders_as_floors(graph: grimp.ImportGraph) -> grimp.ImportGraph:
    """The graph with each task folder's modules merged into one top-level module, `<folder>_task`,
    holding all their imports; tasks/ keeps the seam's modules (changes the graph given)."""
    for folder in sorted(graph.find_children(f"{PACKAGE}.tasks")):
        members = {folder, *graph.find_descendants(folder)}
        if len(members) == 1:
            continue  # a module of the seam (base, outputs), not a folder
        floor = f"{folder.replace('.tasks.', '.')}_task"
        graph.add_module(floor)
        for module in members:
            for imported in graph.find_modules_directly_imported_by(module) - members:
                graph.add_import(importer=floor, imported=imported)
            for importer in graph.find_modules_that_directly_import(module) - members:
                graph.add_import(importer=importer, imported=floor)
        for module in members:
            graph.remove_module(module)
    return graph


def circles(graph: grimp.ImportGraph, nodes: list[str], *, as_packages: bool) -> list[str]:
    """One line per circle, `a -> b -> … -> a`, found from each import a -> b whose target
    reaches back (each circle named once, from its smallest member)."""
    named: dict[frozenset[str], str] = {}
    for importer in nodes:
        for imported in nodes:
            if importer == imported or not _imports(graph, importer, imported, as_packages):
                continue
            back = graph.find_shortest_chain(imported, importer, as_packages=as_packages)
            if back:
                chain = [importer, *back]
                members = frozenset(_on(chain, nodes) if as_packages else chain)
                named.setdefault(members, " -> ".join(_short(m) for m in chain))
    return sorted(named.values())


def _imports(graph: grimp.ImportGraph, importer: str, imported: str, as_packages: bool) -> bool:
    if not as_packages:
        return graph.direct_import_exists(importer=importer, imported=imported)
    return graph.direct_import_exists(importer=importer, imported=imported, as_packages=True)


def _on(chain: list[str], nodes: list[str]) -> list[str]:
    """The floors a chain of modules passes through."""
    return [next(n for n in nodes if m == n or m.startswith(n + ".")) for m in chain]


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def _is_step(module: str) -> bool:
    parts = module.split(".")
    return len(parts) == 3 and parts[2] == "entry"
