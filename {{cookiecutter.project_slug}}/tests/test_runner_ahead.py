"""The next notebook's kernel starts, and loads TensorFlow, while the current notebook runs."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import nbformat
import psutil
import pytest
from test_runner import KERNELSPEC

from {{ cookiecutter.package_name }} import kernel, runner
from {{ cookiecutter.package_name }}.runner import chain

PROFILE = "description: ahead\nshared: {}\nnotebooks: {}\n"
HEAD = f"""\
import json, os
from pathlib import Path
import psutil
folder = Path(run_dir)
runner = psutil.Process(os.getppid())
kernels = [p.pid for p in runner.children() if "{kernel.PACKAGE}.kernel" in p.cmdline()]
(folder / f"kernels_@NAME@.json").write_text(json.dumps([os.getpid(), kernels]))
(folder / f"env_@NAME@.json").write_text(json.dumps(dict(os.environ)))
os.write(2, b"stderr of @NAME@\\n")  # as TensorFlow's C++ log does
"""
CELLS = {  # each notebook records its kernel, the runner's kernels and its environment
    "00_first": "",
    "01_second": "if fail:\n    raise ValueError('boom from 01_second')",
    "02_third": "(folder / 'third_ran').write_text('yes')",
}


@pytest.fixture(autouse=True)
def own_kernel(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    """This project's kernel as python3 (a shared environment may hold another project's)."""
    prefix = tmp_path_factory.mktemp("kernels")
    kernel.install(prefix=str(prefix))
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))


def make_project(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "tiny"\n')
    (root / "configs" / "test.yaml").write_text(PROFILE)
    for name, source in CELLS.items():
        parameters = nbformat.v4.new_code_cell('run_dir = "artifacts/interactive"\nfail = False')
        parameters.metadata["tags"] = ["parameters"]
        notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
        code = HEAD.replace("@NAME@", name) + source
        notebook.cells = [parameters, nbformat.v4.new_code_cell(code)]
        nbformat.write(notebook, root / "notebooks" / f"{name}.ipynb")
    return root


def kernels_left() -> list[str]:
    """This process's children that are the project's kernels."""
    children = psutil.Process().children(recursive=True)
    return [" ".join(p.cmdline()) for p in children if f"{kernel.PACKAGE}.kernel" in p.cmdline()]


def seen(folder: Path, what: str, name: str) -> list | dict:
    return json.loads((folder / f"{what}_{name}.json").read_text())


def test_each_kernel_starts_while_the_notebook_before_it_runs(tmp_path: Path, monkeypatch) -> None:
    """The first notebook's kernel is up while the checks run (they load TensorFlow in the
    runner), its stderr still reaching its kernel log; while 00 runs, 01's kernel runs beside it
    (and then runs 01); the last notebook has none beside it; none is left at the end."""
    root = make_project(tmp_path / "project")
    during: list[list[str]] = []
    checks = chain.preflight

    def preflight(plan, folder) -> None:
        during.append(kernels_left())
        checks(plan, folder)

    monkeypatch.setattr(chain, "preflight", preflight)
    result = runner.run_chain("test", run_dir=tmp_path / "run", project_dir=root)
    folder = result.run_dir
    assert len(during) == 1 and len(during[0]) == 1
    assert "stderr of 00_first" in (folder / "notebooks" / "00_first.kernel.log").read_text()
    first, beside = seen(folder, "kernels", "00_first")
    second, _ = seen(folder, "kernels", "01_second")
    assert sorted(beside) == sorted([first, second])
    assert seen(folder, "kernels", "02_third")[1] == [seen(folder, "kernels", "02_third")[0]]
    # The kernel took the request to load ahead and removed it: nothing it starts inherits it.
    assert kernel.PRELOAD_ENV not in seen(folder, "env", "01_second")
    assert [a["status"] for a in result.record["attempts"]] == ["ok", "ok", "ok"]
    assert kernels_left() == []


def test_a_failing_notebook_stops_the_kernel_started_for_the_next(tmp_path: Path) -> None:
    """The chain stops at 01; 02's kernel, started while 01 ran, does not outlive the run."""
    root = make_project(tmp_path / "project")
    with pytest.raises(runner.NotebookFailed):
        runner.run_chain("test", {"fail": True}, run_dir=tmp_path / "run", project_dir=root)
    assert not (tmp_path / "run" / "third_ran").exists()
    assert kernels_left() == []


def test_preload_loads_in_a_low_priority_thread_only_when_asked(monkeypatch) -> None:
    """PRELOAD_ENV=1: TensorFlow loads in a thread at nice PRELOAD_NICE; unset: nothing starts."""
    seen: list[tuple[str, int]] = []

    def fake_import() -> None:
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen.append((threading.current_thread().name, nice))

    monkeypatch.setattr(kernel.quiet, "import_tensorflow", fake_import)
    assert kernel.preload({}) is None
    environ = {kernel.PRELOAD_ENV: "1"}
    thread = kernel.preload(environ)
    assert thread is not None
    thread.join(10)
    assert environ == {}
    assert seen == [("load-tensorflow-ahead", kernel.PRELOAD_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, 0) < kernel.PRELOAD_NICE  # the process keeps its own


def test_a_cell_needing_tensorflow_says_so_then_waits_for_the_load_ahead(
    monkeypatch, capsys
) -> None:
    """A cell says it waits for TensorFlow loading ahead before it waits (any cell: the load
    holds descriptor 2, where a cell's output would be lost)."""
    release = threading.Event()
    said: list[str] = []

    def loading() -> None:
        release.wait(10)

    thread = threading.Thread(target=loading, daemon=True)
    thread.start()
    monkeypatch.setattr(kernel, "_preload", [thread])
    monkeypatch.setenv(kernel.progress.PROGRESS_ENV, "bar")  # as in JupyterLab

    class Info:
        raw_cell = "print(1)"

    def released() -> None:
        said.append(capsys.readouterr().out)
        release.set()

    threading.Timer(0.3, released).start()
    kernel._before_cell(Info())
    assert not thread.is_alive()
    assert "Loading TensorFlow" in said[0]
