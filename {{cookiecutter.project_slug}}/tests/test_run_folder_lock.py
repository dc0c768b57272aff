"""One run at a time in a run folder: a second `run` into it is refused at once, naming the first.

Two runs into one folder both said ok while run.json kept one of them as interrupted, and their
notebooks overwrote each other's files. The runner holds an fcntl lock on <run>/.run.lock from its
checks to its last record; the kernel drops it when its holder dies, so a killed run never blocks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import assert_one_sentence
from test_runner import KERNELSPEC, make_project

from {{ cookiecutter.package_name }} import runner

LOCK = ".run.lock"
# Another process holding the lock as a run does: fcntl on <run>/.run.lock, its pid inside.
HOLDER = """\
import fcntl, os, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle, fcntl.LOCK_EX)
handle.truncate(0)
handle.write(f"{os.getpid()}\\n")
handle.flush()
print("held", flush=True)
time.sleep(300)
"""
# A notebook that looks, from its kernel (another process), whether its run folder is locked.
PROBE = """\
import fcntl, json, pathlib
lock = pathlib.Path(run_dir) / ".run.lock"
seen = {"exists": lock.exists()}
if lock.exists():
    with open(lock) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen["busy"] = False
        except BlockingIOError:
            seen["busy"] = True
        seen["pid"] = lock.read_text().split()[0]
(pathlib.Path(run_dir) / "lock_seen.json").write_text(json.dumps(seen))
"""


def hold(lock: Path) -> subprocess.Popen:
    """Start a process holding `lock`; return once it holds it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_run_into_a_busy_folder_is_refused_naming_the_folder_and_the_pid(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "project")
    folder = tmp_path / "run"
    holder = hold(folder / LOCK)
    try:
        with pytest.raises(runner.RunnerInputError) as refused:
            runner.run_chain("test", run_dir=folder, project_dir=project, only=["02"])
    finally:
        holder.kill()
        holder.wait()
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"{folder} is in use by another run (pid {holder.pid}), ")
    assert not (folder / "run.json").exists() and not (folder / "order.txt").exists()


def test_a_lock_left_by_a_killed_run_does_not_block_the_next(tmp_path: Path) -> None:
    """kill -9 leaves .run.lock behind, with the dead pid in it: the next run goes ahead."""
    project = make_project(tmp_path / "project")
    folder = tmp_path / "run"
    holder = hold(folder / LOCK)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (folder / LOCK).read_text().split() == [str(holder.pid)]
    result = runner.run_chain("test", run_dir=folder, project_dir=project, only=["02"])
    assert result.record["status"] == "ok"


def test_the_run_holds_its_folders_lock_while_its_notebooks_run(tmp_path: Path) -> None:
    """Seen from the kernel: the lock is taken, by the runner's pid, during the notebook."""
    project = make_project(tmp_path / "project")
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
    parameters = nbformat.v4.new_code_cell('run_dir = "artifacts/interactive"')
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [parameters, nbformat.v4.new_code_cell(PROBE)]
    nbformat.write(notebook, project / "notebooks" / "03_probe.ipynb")
    folder = tmp_path / "run"
    runner.run_chain("test", run_dir=folder, project_dir=project, only=["03"])
    seen = json.loads((folder / "lock_seen.json").read_text())
    assert seen == {"exists": True, "busy": True, "pid": str(os.getpid())}
    # and it is free once the run has ended
    free = subprocess.run([sys.executable, "-c", PROBE.replace("run_dir", repr(str(folder)))])
    assert free.returncode == 0
    assert json.loads((folder / "lock_seen.json").read_text())["busy"] is False
