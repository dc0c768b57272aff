"""Quiet notebooks and live progress: TensorFlow's chatter stays out; logs get whole lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from {{ cookiecutter.package_name }} import kernel, progress, quiet
from {{ cookiecutter.package_name }}.runner import live as live_module
from {{ cookiecutter.package_name }}.runner.live import SLOW_CELL, NotebookProgress

PACKAGE = "{{ cookiecutter.package_name }}"


def test_quiet_env_keeps_a_users_level_and_verbose_keeps_everything() -> None:
    assert quiet.quiet_env({})["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert quiet.quiet_env({"TF_CPP_MIN_LOG_LEVEL": "0"})["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert "TF_CPP_MIN_LOG_LEVEL" not in quiet.quiet_env({quiet.VERBOSE_ENV: "1"})
    assert quiet.verbose({quiet.VERBOSE_ENV: "yes"}) and not quiet.verbose({quiet.VERBOSE_ENV: "0"})


def _fresh_python(code: str, **env: str) -> subprocess.CompletedProcess:
    drop = {"TF_CPP_MIN_LOG_LEVEL", quiet.VERBOSE_ENV}
    base = {key: value for key, value in os.environ.items() if key not in drop}
    command = [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, env={**base, **env}, timeout=300)


def test_import_tensorflow_drops_its_load_time_lines_and_verbose_keeps_them() -> None:
    """TensorFlow 2.21 prints C++ lines before any log level applies; only the descriptor redirect
    keeps them out. The verbose switch brings them back (the same lines, so the test can fail)."""
    code = (
        f"from {PACKAGE} import quiet; quiet.import_tensorflow(); "
        "import tensorflow as tf; print(float(tf.reduce_sum(tf.ones([2]))))"
    )
    quiet_run = _fresh_python(code)
    loud_run = _fresh_python(code, **{quiet.VERBOSE_ENV: "1"})
    assert quiet_run.returncode == 0 and quiet_run.stdout.strip() == "2.0", quiet_run.stderr
    assert quiet_run.stderr == ""
    assert loud_run.returncode == 0 and loud_run.stderr.strip(), "TensorFlow printed nothing at all"


@pytest.mark.skipif(quiet.has_gpu_driver(), reason="this machine has a GPU driver: cuInit works")
def test_level_2_users_get_no_cuinit_line_without_a_gpu_driver() -> None:
    """TF_CPP_MIN_LOG_LEVEL=2 (common advice) still prints TensorFlow's ERROR that cuInit failed
    on a machine without a driver; the quiet import drops that line, and only that line."""
    code = (
        f"from {PACKAGE} import quiet; quiet.import_tensorflow(); "
        "import tensorflow as tf; tf.config.list_physical_devices(); print(float(tf.ones([])))"
    )
    done = _fresh_python(code, TF_CPP_MIN_LOG_LEVEL="2")
    assert done.returncode == 0 and done.stdout.strip() == "1.0", done.stderr
    assert "cuInit" not in done.stderr and done.stderr == ""


def test_a_machine_with_a_driver_keeps_its_cuinit_line() -> None:
    """There a failing cuInit is a broken driver: the line is passed on."""
    text = "E0000 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\nW other\n"
    assert quiet.device_lines(text, driver=True) == text
    assert quiet.device_lines(text, driver=False) == "W other\n"


def test_kernel_loads_tensorflow_only_for_cells_that_import_it() -> None:
    find = kernel.NEEDS_TENSORFLOW.search
    assert find("import os\nimport tensorflow as tf") and find(f"from {PACKAGE} import env")
    assert find("from keras import layers")
    assert not find("model = None  # the default model, or another name")
    assert not find(f"import {PACKAGE}_extra")


def test_kernel_shows_tensorflow_loading_as_a_task(monkeypatch, capsys) -> None:
    """The 5-15 s TensorFlow load before a notebook's first cell is a task: lines or a bar."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    monkeypatch.setattr(quiet, "import_tensorflow", lambda: time.sleep(0.05))

    class Cell:
        raw_cell = "import tensorflow as tf"

    kernel._before_cell(Cell())
    assert capsys.readouterr().out.startswith(f"{progress.MARK}Loading TensorFlow: done in ")


def test_kernel_spec_runs_the_quiet_kernel(tmp_path: Path) -> None:
    where = kernel.install(prefix=str(tmp_path))
    spec = json.loads((where / "kernel.json").read_text())
    assert spec["argv"][1:3] == ["-m", f"{PACKAGE}.kernel"] and "{connection_file}" in spec["argv"]
    assert where.name == "python3"  # the name every notebook asks for


def test_track_in_line_mode_prints_whole_lines(monkeypatch, capsys) -> None:
    """Where a log reads it (CI): no carriage returns, no bar; every line carries the mark."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    assert list(progress.track(range(3), what="Shards", unit="shard")) == [0, 1, 2]
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert lines and all(line.startswith(progress.MARK) for line in lines)
    assert lines[-1].startswith(f"{progress.MARK}Shards: 3/3 shard(s) in ")


def test_a_long_item_still_gets_lines_but_at_most_one_per_interval(monkeypatch, capsys) -> None:
    """One item that runs long (a training chunk, a conversion) keeps a log moving: the clock
    prints a line each LINE_EVERY seconds, with the count, the time left and what runs now."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.setattr(progress, "LINE_EVERY", 0.1)
    started = time.perf_counter()
    with progress.task("Epoch 1/2", total=4, unit="step") as work:
        work.update(1)
        work.note("chunk 2")
        time.sleep(0.55)
    seconds = time.perf_counter() - started
    lines = capsys.readouterr().out.splitlines()
    clock = [text for text in lines if ", ~" in text]
    assert clock and clock[0] == f"{progress.MARK}Epoch 1/2: 1/4 step(s), 0 s, ~0 s left (chunk 2)"
    assert len(lines) - 1 <= seconds / 0.1 + 1  # the clock's lines, at most one per interval
    assert lines[-1].startswith(f"{progress.MARK}Epoch 1/2: 1/4 step(s) in ")


def test_a_bar_is_redrawn_while_an_item_runs(monkeypatch, capsys) -> None:
    """In a notebook the bar's elapsed time moves though no item finished."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    monkeypatch.setattr(progress, "REDRAW_EVERY", 0.05)
    with progress.task("Convert", total=1):
        time.sleep(0.4)
    assert capsys.readouterr().out.count("\r") >= 4


def test_track_on_a_terminal_draws_a_bar(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    assert list(progress.track(range(3), what="Shards", unit="shard")) == [0, 1, 2]
    out = capsys.readouterr().out
    assert "\r" in out and out.rstrip().splitlines()[-1].startswith(f"{progress.MARK}Shards: 3/3")


def test_runner_progress_without_a_terminal_is_line_based() -> None:
    """The runner forwards the notebook's progress lines and slow cells, one whole line each."""
    out = io.StringIO()  # not a TTY
    live = NotebookProgress(2, 6, "01_data", out)
    live.start(cells=3)
    live.cell_start("import os")
    live.cell_complete("import os")  # fast: no line
    live.cell_start("metrics = entry.run(run_dir, params)")
    live.write(f"plain output\n{progress.MARK}TFRecords, train: 1/2 sha")
    live.write(f"rd(s), 0.4 s\r{progress.MARK}TFRecords, train: 2/2 shard(s) in 0.8 s\n")
    live.cell_started -= SLOW_CELL  # the cell took longer than SLOW_CELL
    live.cell_complete("metrics = entry.run(run_dir, params)")
    live.finish("ok", 12.34)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "[2/6] 01_data …"
    assert lines[1] == f"    {progress.MARK}TFRecords, train: 2/2 shard(s) in 0.8 s"
    assert lines[2].startswith("    cell 2/3 (")
    assert lines[2].endswith("metrics = entry.run(run_dir, params)")
    assert lines[3] == "[2/6] 01_data … ok (12.3 s)"
    assert len(lines) == 4  # "plain output" and the fast cell are not forwarded


def test_a_silent_cell_gets_a_line_in_line_mode(monkeypatch) -> None:
    """A cell that prints nothing (TensorFlow loading, a kernel starting) still shows in a log,
    at most one line per SILENT seconds; a cell that prints progress gets no extra line."""
    monkeypatch.setattr(live_module, "SILENT", 0.3)
    out = io.StringIO()  # not a TTY
    live = NotebookProgress(1, 6, "00_environment", out)
    live.start(cells=2)
    live.cell_start("import tensorflow as tf")
    time.sleep(1.0)
    live.cell_complete("import tensorflow as tf")
    live.finish("ok", 1.0)
    lines = out.getvalue().splitlines()
    silent = [text for text in lines if "still running" in text]
    assert silent and silent[0].startswith("    cell 1/2 still running (")
    assert silent[0].endswith("): import tensorflow as tf")
    assert 2 <= len(silent) <= 4, lines


@pytest.mark.slow
def test_executed_notebook_holds_no_stderr(tmp_path: Path, monkeypatch) -> None:
    """A notebook importing TensorFlow and the package, run by the runner's kernel, shows no
    stderr output; the same notebook under <PACKAGE>_VERBOSE=1 does (so the check can fail)."""
    # ipykernel copies what C++ writes to file descriptor 2 into the notebook, except under pytest
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    from {{ cookiecutter.package_name }}.runner.execute import execute

    notebook = tmp_path / "quiet.ipynb"
    lines = ["import tensorflow as tf", f"from {PACKAGE} import env", "tf.constant(1)"]
    code = "\n".join(lines)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    nbformat.write(nb, notebook)
    counts = {}
    for verbose in ("", "1"):
        os.environ[quiet.VERBOSE_ENV] = verbose
        try:
            folder = tmp_path / f"run{verbose or 0}"
            attempt = {"notebook": "quiet", "parameters": {}, "kernel_log": "quiet.kernel.log"}
            folder.mkdir()
            execute(notebook, attempt, folder, NotebookProgress(1, 1, "quiet", io.StringIO()))
        finally:
            del os.environ[quiet.VERBOSE_ENV]
        executed = nbformat.read(folder / "notebooks" / "quiet.ipynb", as_version=4)
        outputs = executed.cells[0].outputs
        counts[verbose] = sum(output.get("name") == "stderr" for output in outputs)
    assert counts == {"": 0, "1": counts["1"]} and counts["1"] >= 1, counts


def test_importing_ipython_alone_is_not_a_notebook(monkeypatch) -> None:
    """A process that merely imported IPython (pytest, papermill) prints lines, not bars."""
    import IPython  # noqa: F401

    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert not progress.bars()
