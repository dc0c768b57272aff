"""The runner's record of a run folder: checks before anything is written, every attempt kept,
no success ever erased, Ctrl-C recorded — on tiny notebooks, and once on the project's own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from helpers import assert_one_sentence
from test_runner import make_project, one_notebook_project, start_run

from {{ cookiecutter.package_name }} import runner, steps
from {{ cookiecutter.package_name }}.artifacts import StepError

PACKAGE = "{{ cookiecutter.package_name }}"
ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", PACKAGE, "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def record_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def errors_in(path: Path) -> list[str]:
    notebook = nbformat.read(path, as_version=4)
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    return [o.evalue for o in outputs if o.output_type == "error"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def one_line_error(stderr: str, only: bool = True) -> str:
    """The CLI's answer: one line on stderr, `<package>: <sentence>`, and no traceback.

    only=False allows other lines around it: TensorFlow's C++ log writes some when it loads.
    """
    prefix = f"{PACKAGE}: "
    lines = stderr.strip().splitlines()
    ours = [line for line in lines if line.startswith(prefix)]
    assert len(ours) == 1 and "Traceback" not in stderr, stderr
    assert not only or lines == ours, stderr
    return ours[0][len(prefix) :]


# --- no attempt erases a success ------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One folder, three invocations: all ok, then 01 failing twice (--only 01, fail=true)."""
    project = make_project(tmp_path_factory.mktemp("history") / "project")
    run_dir = project.parent / "run"
    runner.run_chain("test", run_dir=run_dir, project_dir=project)
    messages = []
    for _ in range(2):
        with pytest.raises(runner.NotebookFailed) as failed:
            runner.run_chain(
                "test", {"fail": True}, run_dir=run_dir, project_dir=project, only=["01"]
            )
        messages.append(str(failed.value))
    return run_dir, messages


def test_failed_attempts_are_kept_beside_the_success(history: tuple[Path, list[str]]) -> None:
    """A failing re-run keeps <name>.failed-<n>.ipynb and leaves the successful <name>.ipynb."""
    run_dir, messages = history
    notebooks = run_dir / "notebooks"
    assert errors_in(notebooks / "01_second.ipynb") == []
    for number in (1, 2):
        failed = notebooks / f"01_second.failed-{number}.ipynb"
        assert errors_in(failed) == ["boom from 01_second"]
        assert nbformat.read(failed, as_version=4).metadata.papermill.parameters["fail"] is True
    assert not list(notebooks.glob(".*.running.ipynb"))
    assert str(notebooks / "01_second.failed-2.ipynb") in messages[1]
    assert f"the earlier success is still at {notebooks / '01_second.ipynb'}" in messages[1]


def test_run_json_keeps_every_attempt_and_the_latest_success(
    history: tuple[Path, list[str]],
) -> None:
    """run.json lists all attempts of all invocations, and per notebook the latest success."""
    run_dir, _ = history
    record = record_of(run_dir)
    assert record["status"] == "failed"
    assert [i["status"] for i in record["invocations"]] == ["ok", "failed", "failed"]
    assert [i["notebooks"] for i in record["invocations"]][1:] == [["01_second"]] * 2
    attempts = [(a["notebook"], a["status"]) for a in record["attempts"]]
    assert attempts == [
        ("00_first", "ok"),
        ("01_second", "ok"),
        ("02_third", "ok"),
        ("01_second", "failed"),
        ("01_second", "failed"),
    ]
    first, failed = record["attempts"][1], record["attempts"][4]
    assert failed["executed"] == "notebooks/01_second.failed-2.ipynb"
    assert failed["parameters"] == {"size": 3, "fail": True, "run_dir": str(run_dir)}
    assert failed["error"] == {
        "cell": 4,
        "cell_index": 4,  # papermill's injected parameters cell counts too
        "ename": "ValueError",
        "evalue": "boom from 01_second",
    }
    assert failed["started"] <= failed["finished"] and failed["seconds"] > 0
    assert first["error"] is None and first["executed"] == "notebooks/01_second.ipynb"

    entries = {entry["name"]: entry for entry in record["notebooks"]}
    assert list(entries) == ["00_first", "01_second", "02_third"]
    second = entries["01_second"]
    assert second["status"] == "failed" and second["executed"] == failed["executed"]
    assert second["latest_success"]["executed"] == "notebooks/01_second.ipynb"
    assert errors_in(run_dir / second["latest_success"]["executed"]) == []
    assert second["latest_success"]["started"] == first["started"]
    assert "fail" not in second["latest_success"]["parameters"]
    assert entries["00_first"]["status"] == "ok"
    assert entries["00_first"]["latest_success"]["executed"] == "notebooks/00_first.ipynb"


def test_report_shows_latest_success_newer_failure_and_attempts(
    history: tuple[Path, list[str]],
) -> None:
    """report.md: per notebook the failure and the success it did not erase; every attempt."""
    run_dir, _ = history
    report = (run_dir / "report.md").read_text()
    rows = {line.split(" | ")[0]: line for line in report.splitlines() if line.startswith("| 0")}
    second = rows["| 01_second"]
    assert "| failed |" in second
    assert "[notebooks/01_second.failed-2.ipynb](notebooks/01_second.failed-2.ipynb)" in second
    latest_success = second.rstrip(" |").split(" | ")[-1]
    assert latest_success.startswith("[notebooks/01_second.ipynb](notebooks/01_second.ipynb), ")
    assert rows["| 00_first"].endswith("| this attempt |")
    attempts = report.split("## Attempts")[1].split("## Metrics")[0]
    failed = [line for line in attempts.splitlines() if "| 01_second | failed |" in line]
    assert len(failed) == 2
    # report.md escapes error text, so Markdown shows `01_second` as written, not in italics
    assert all("| [4] | ValueError: boom from 01\\_second |" in line for line in failed)
    assert attempts.count("| ok |") == 3


def test_corrupt_run_json_is_set_aside_not_dropped(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreadable run.json is kept as run.json.corrupt-<n>, said so, and a new record begins."""
    run_dir = project / "run"
    run_dir.mkdir()
    for number in (1, 2):
        (run_dir / "run.json").write_text(f"half a record {number}")
        runner.run_chain("test", run_dir=run_dir, project_dir=project, only=["02"])
        kept = run_dir / f"run.json.corrupt-{number}"
        assert kept.read_text() == f"half a record {number}"
        assert f"it is kept as run.json.corrupt-{number}" in capsys.readouterr().out
        record = record_of(run_dir)
        assert [a["notebook"] for a in record["attempts"]] == ["02_third"]
        assert record["invocations"][-1]["set_aside"] == f"run.json.corrupt-{number}"


def test_run_json_of_the_earlier_runner_is_read_back(project: Path) -> None:
    """A run.json without attempts (written before attempts existed) turns into attempts."""
    run_dir = project / "run"
    runner.run_chain("test", run_dir=run_dir, project_dir=project, only=["00"])
    old = record_of(run_dir)
    old["notebooks"] = [{k: v for k, v in old["notebooks"][0].items() if k != "latest_success"}]
    old["notebooks"][0]["name"] = old["attempts"][0]["notebook"]
    del old["attempts"], old["invocations"]
    (run_dir / "run.json").write_text(json.dumps(old))
    runner.run_chain("test", run_dir=run_dir, project_dir=project, only=["02"])
    record = record_of(run_dir)
    assert [(a["notebook"], a["status"]) for a in record["attempts"]] == [
        ("00_first", "ok"),
        ("02_third", "ok"),
    ]
    assert len(record["invocations"]) == 2


# --- everything checked before anything is written ------------------------------------------------


def test_steps_preflight_runs_before_the_run_folder_is_made(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step's own checker sees what each notebook runs with: its cell's values, the plan's
    over them (plan.held_values); its refusal leaves no folder behind."""
    calls = []

    def refuse(run_dir: Path, selected: dict) -> None:
        calls.append((run_dir, selected, run_dir.exists()))
        raise StepError("epochs=0 is refused: train needs at least 1 epoch.")

    monkeypatch.setattr(steps, "preflight", refuse)
    run_dir = project / "run"
    with pytest.raises(runner.RunnerInputError, match="epochs=0 is refused"):
        runner.run_chain("test", {"size": 5}, run_dir=run_dir, project_dir=project)
    assert calls == [
        (
            run_dir,
            {
                "00_first": {"size": 5, "label": "from-profile", "rate": 0.25},
                "01_second": {"size": 5, "fail": False},
                "02_third": {"note": None},
            },
            False,
        )
    ]
    assert not run_dir.exists()
    with pytest.raises(runner.RunnerInputError):
        runner.run_chain("test", project_dir=project)  # the default folder under artifacts/
    assert not (project / "artifacts").exists() and not calls[1][2]


@pytest.mark.parametrize("inside", [False, True], ids=["the-file", "under-the-file"])
def test_run_dir_that_is_a_file_refused(project: Path, inside: bool) -> None:
    """--run-dir naming a file, or a path through one, is refused in one sentence; no writes."""
    blocker = project / "taken"
    blocker.write_text("not a folder")
    run_dir = blocker / "run" if inside else blocker
    done = run_cli("--profile", "test", "--project-dir", str(project), "--run-dir", str(run_dir))
    assert done.returncode == 2, done.stdout + done.stderr
    message = one_line_error(done.stderr)
    assert f"{blocker} is a file, not a folder" in message
    assert_one_sentence(message)
    assert blocker.read_text() == "not a folder"
    assert not (project / "artifacts").exists()


def test_read_only_run_dir_refused_before_anything_runs(tmp_path: Path) -> None:
    """A run folder this user cannot write is refused in one sentence, exit 2, nothing written.

    root writes through chmod, so as root the CLI runs as `nobody`, or as root without the
    capability to override file modes; without the check it would die writing run.json.
    """
    base = Path(tempfile.mkdtemp(prefix="runner-ro-", dir="/tmp"))  # tmp_path is root's alone
    run_dir = base / "read-only"
    try:
        base.chmod(0o755)
        project = make_project(base / "project")
        run_dir.mkdir(mode=0o555)
        run_dir.chmod(0o555)
        prefix, options = unprivileged(base)
        done = subprocess.run(
            [*prefix, sys.executable, "-m", PACKAGE, "run", "--profile", "test",
             "--project-dir", str(project), "--run-dir", str(run_dir)],
            capture_output=True, text=True, timeout=300, **options,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        message = one_line_error(done.stderr)
        assert f"--run-dir {run_dir} cannot be written" in message
        assert_one_sentence(message)
        assert list(run_dir.iterdir()) == []
    finally:
        run_dir.chmod(0o755)
        shutil.rmtree(base)


def unprivileged(scratch: Path) -> tuple[list[str], dict]:
    """How to run a command that file modes bind: as is, as nobody, or as root without the
    capabilities that override them (setpriv); skips the test when none of these works."""
    if os.geteuid() != 0:
        return [], {}
    home = scratch / "home"
    home.mkdir(mode=0o777, exist_ok=True)
    home.chmod(0o777)
    probe = [sys.executable, "-c", f"import {PACKAGE}.runner"]
    ways = [([], {"user": "nobody", "env": {**os.environ, "HOME": str(home)}})]
    if shutil.which("setpriv"):
        ways.append((["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"], {}))
    for prefix, options in ways:
        try:
            if subprocess.run([*prefix, *probe], capture_output=True, **options).returncode == 0:
                return prefix, options
        except OSError:
            continue
    pytest.skip("Neither nobody nor root without CAP_DAC_OVERRIDE can run this Python here.")


@pytest.mark.parametrize("value", ["epochs=0", "batch_size=-5"])
def test_project_notebooks_refuse_a_bad_value_before_any_notebook(
    tmp_path: Path, value: str
) -> None:
    """The project's own chain: a value a step's checker refuses exits 2 in seconds, no folder."""
    run_dir = tmp_path / "run"
    started = time.perf_counter()
    done = run_cli("--profile", "smoke", "-p", value, "--run-dir", str(run_dir), cwd=ROOT)
    seconds = time.perf_counter() - started
    assert done.returncode == 2, done.stdout + done.stderr
    message = one_line_error(done.stderr, only=False)
    assert value in message
    assert_one_sentence(message)
    assert not run_dir.exists(), done.stdout  # the values were shown, no notebook started
    assert "Run folder" not in done.stdout and "[1/" not in done.stdout, done.stdout
    assert seconds < 60, f"the refusal took {seconds:.0f} s"


# --- Ctrl-C --------------------------------------------------------------------------------------


def test_ctrl_c_records_interrupted_and_exits_130(tmp_path: Path) -> None:
    """SIGINT during a notebook: exit 130, one line and no traceback, run.json says interrupted,
    the unfinished copy is kept as failed-1, and the kernel is shut down."""
    project = one_notebook_project(
        tmp_path / "project",
        "00_sleep",
        "sleeps",
        "import os, time\nfrom pathlib import Path\n"
        "Path(run_dir, 'kernel.pid').write_text(str(os.getpid()))\ntime.sleep(120)",
    )
    run_dir = tmp_path / "run"
    pid_file = run_dir / "kernel.pid"
    # Ctrl-C as a terminal delivers it: a test suite started in the background (`make test &`,
    # nohup) passes SIGINT on ignored, and a process that starts so keeps ignoring it.
    process = start_run(
        project, run_dir, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    try:
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=300)  # a safety net: a busy machine is slow
    finally:
        process.kill()
    assert process.returncode == 130, stdout + stderr
    message = one_line_error(stderr)
    assert "interrupted during 00_sleep" in message and str(run_dir / "run.json") in message
    record = record_of(run_dir)
    assert record["status"] == "interrupted"
    (attempt,) = record["attempts"]
    assert attempt["status"] == "interrupted" and attempt["error"]["ename"] == "KeyboardInterrupt"
    assert (attempt["error"]["cell"], attempt["error"]["cell_index"]) == (3, 2)  # the sleep
    assert attempt["executed"] == "notebooks/00_sleep.failed-1.ipynb"
    assert (run_dir / attempt["executed"]).is_file()
    assert not (run_dir / "notebooks" / "00_sleep.ipynb").exists()
    assert "| 00_sleep | interrupted |" in (run_dir / "report.md").read_text()
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(kernel):
        time.sleep(0.2)
    assert not alive(kernel), "the kernel outlived the run"
