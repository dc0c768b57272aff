"""The papermill runner on tiny notebooks: checks before any work, run folder, record, report."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import runner
from {{ cookiecutter.package_name }}.progress import MARK
from {{ cookiecutter.package_name }}.runner.live import NotebookProgress

PACKAGE = "{{ cookiecutter.package_name }}"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
PROFILE = """\
description: tiny test profile
shared:
  size: 3
notebooks:
  00_first:
    label: from-profile
    rate: 0.25
"""
# name -> (parameters cell, extra cells). Each notebook appends its name to order.txt and writes
# the parameter values and working directory it saw to seen_<name>.json in the run folder.
NOTEBOOKS = {
    "00_first": (
        'run_dir = "artifacts/interactive"\nsize = 2\nrate = 0.5\nlabel = "x"',
        [
            "from pathlib import Path\n"
            "metrics = Path(run_dir) / 'metrics'\n"
            "metrics.mkdir(parents=True, exist_ok=True)\n"
            "report = dict(gpu_available=False, score=0.25, nested=dict(a=1))\n"
            "(metrics / 'environment.json').write_text(json.dumps(report))",
            "os.write(2, b'kernel stderr of 00_first\\n')  # as TensorFlow's C++ log does",
        ],
    ),
    "01_second": (
        'run_dir = "artifacts/interactive"\nsize = 2\nfail = False',
        ["if fail:\n    raise ValueError('boom from 01_second')"],
    ),
    "02_third": ('run_dir = "artifacts/interactive"\nnote = None', []),
}
RECORD = """\
import json
import os
from pathlib import Path

folder = Path(run_dir)
folder.mkdir(parents=True, exist_ok=True)
with open(folder / "order.txt", "a") as handle:
    handle.write(NAME + "\\n")
seen = dict((key, globals()[key]) for key in KEYS)
seen["cwd"] = os.getcwd()
(folder / f"seen_{NAME}.json").write_text(json.dumps(seen))
"""


def make_project(root: Path) -> Path:
    """A minimal project: pyproject.toml, three tiny notebooks and configs/test.yaml."""
    (root / "notebooks").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "tiny"\n')
    (root / "configs" / "test.yaml").write_text(PROFILE)
    for name, (parameters, extra) in NOTEBOOKS.items():
        keys = [line.split("=")[0].strip() for line in parameters.splitlines()]
        record = RECORD.replace("NAME", repr(name)).replace("KEYS", repr(keys))
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
        notebook.cells = [
            nbformat.v4.new_markdown_cell(f"# {name}"),
            cell,
            nbformat.v4.new_code_cell(record),
            *(nbformat.v4.new_code_cell(source) for source in extra),
        ]
        nbformat.write(notebook, root / "notebooks" / f"{name}.ipynb")
    return root


def one_notebook_project(root: Path, name: str, description: str, source: str) -> Path:
    """A project of one notebook, `name` (its parameters cell, then `source`), and its profile
    configs/test.yaml: the runner's signal tests stop `<package> run` while `source` runs."""
    (root / "notebooks").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "tiny"\n')
    (root / "configs" / "test.yaml").write_text(f"description: {description}\n")
    parameters = nbformat.v4.new_code_cell('run_dir = "artifacts/interactive"')
    parameters.metadata["tags"] = ["parameters"]
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
    notebook.cells = [parameters, nbformat.v4.new_code_cell(source)]
    nbformat.write(notebook, root / "notebooks" / f"{name}.ipynb")
    return root


def start_run(project: Path, run_dir: Path, **popen: object) -> subprocess.Popen:
    """`<package> run --profile test` of `project` into `run_dir`, started, and the file that its
    notebook's kernel writes its pid to once it runs (waited for: at most 120 s)."""
    process = subprocess.Popen(
        [sys.executable, "-m", PACKAGE, "run", "--profile", "test", "--project-dir", str(project),
         "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )  # fmt: skip
    pid_file = run_dir / "kernel.pid"
    deadline = time.monotonic() + 120
    while not pid_file.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    if not pid_file.exists():
        process.kill()
        pytest.fail(f"the notebook never started: {process.communicate()}")
    return process


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> runner.RunResult:
    """One real run of the tiny chain with overrides, shared by the tests that read its results."""
    root = make_project(tmp_path_factory.mktemp("chain") / "project")
    return runner.run_chain(
        profile="test",
        overrides={"size": 7, "rate": 1},
        run_dir=root.parent / "run",
        project_dir=root,
    )


def seen(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / f"seen_{name}.json").read_text())


def test_chain_runs_in_name_order_into_one_run_folder(finished: runner.RunResult) -> None:
    """Notebooks run in name order, each given the same absolute run_dir and notebooks/ as cwd."""
    run_dir = finished.run_dir
    assert (run_dir / "order.txt").read_text().split() == list(NOTEBOOKS)
    for name in NOTEBOOKS:
        assert seen(run_dir, name)["run_dir"] == str(run_dir)
        assert Path(seen(run_dir, name)["cwd"]).name == "notebooks"
        assert (run_dir / "notebooks" / f"{name}.ipynb").is_file()


def test_kernel_stderr_goes_to_a_log_not_the_terminal(finished: runner.RunResult) -> None:
    """What the kernel writes to its stderr lands in <run>/notebooks/<name>.kernel.log."""
    log = finished.run_dir / "notebooks" / "00_first.kernel.log"
    assert "kernel stderr of 00_first" in log.read_text()


def test_notebooks_get_profile_values_and_overrides_win(finished: runner.RunResult) -> None:
    """Overrides beat the profile, a notebook's section beats shared, undeclared names stay out."""
    first = seen(finished.run_dir, "00_first")
    assert first["size"] == 7  # -p size=7 over shared size: 3
    assert first["rate"] == 1.0 and isinstance(first["rate"], float)  # int given for a float
    assert first["label"] == "from-profile"
    assert seen(finished.run_dir, "01_second") == {
        "run_dir": str(finished.run_dir),
        "size": 7,
        "fail": False,
        "cwd": first["cwd"],
    }
    assert seen(finished.run_dir, "02_third")["note"] is None


def test_run_json_and_report_record_the_run(finished: runner.RunResult) -> None:
    """run.json holds the status and time of each notebook; report.md shows them and the metrics."""
    record = json.loads((finished.run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["profile"] == "test"
    assert [entry["name"] for entry in record["notebooks"]] == list(NOTEBOOKS)
    report = (finished.run_dir / "report.md").read_text()
    # Each notebook's time: at least what papermill timed its cells, within the run's own span
    # (its two time stamps are whole seconds), and the time report.md shows.
    span = datetime.fromisoformat(record["finished"]) - datetime.fromisoformat(record["started"])
    wall = span.total_seconds() + 2
    for entry in record["notebooks"]:
        executed = nbformat.read(finished.run_dir / "notebooks" / f"{entry['name']}.ipynb", 4)
        cells = executed.metadata["papermill"]["duration"]
        assert entry["status"] == "ok" and 0 < cells <= entry["seconds"] <= wall, (entry, cells)
        assert f"| {entry['name']} | ok | {entry['seconds']:.1f} |" in report
    assert sum(entry["seconds"] for entry in record["notebooks"]) <= wall
    assert record["notebooks"][0]["parameters"]["label"] == "from-profile"
    assert "| 01_second | ok |" in report
    assert "### environment" in report
    assert "| gpu_available | false |" in report and "| score | 0.25 |" in report
    assert "nested" not in report  # only top-level scalars go into the report


def test_plan_precedence_shared_then_notebook_then_override(project: Path) -> None:
    """Shared values reach every notebook declaring them; a notebook section and -p win in turn."""
    plan = runner.plan_run("test", project_dir=project)
    assert plan.parameters["00_first"] == {"size": 3, "label": "from-profile", "rate": 0.25}
    assert plan.parameters["01_second"] == {"size": 3}
    assert plan.parameters["02_third"] == {}
    plan = runner.plan_run("test", {"label": "cli", "fail": True}, project_dir=project)
    assert plan.parameters["00_first"]["label"] == "cli"
    assert plan.parameters["01_second"] == {"size": 3, "fail": True}


@pytest.mark.parametrize(
    ("profile_text", "overrides", "bad"),
    [
        ("shared:\n  sise: 3\n", {}, "sise"),
        ("notebooks:\n  00_first:\n    fail: true\n", {}, "fail"),
        ("", {"sise": 3}, "sise"),
    ],
    ids=["profile-shared", "profile-notebook-section", "override"],
)
def test_unknown_parameter_refused_before_any_notebook_runs(
    project: Path, profile_text: str, overrides: dict, bad: str
) -> None:
    """A name no notebook declares is refused with the allowed names, and nothing is written."""
    (project / "configs" / "test.yaml").write_text(profile_text)
    run_dir = project / "run"
    with pytest.raises(runner.RunnerInputError, match=repr(bad)) as refused:
        runner.run_chain("test", overrides, run_dir=run_dir, project_dir=project)
    assert "label" in str(refused.value) and "rate" in str(refused.value)
    assert not run_dir.exists()
    assert not (project / "artifacts").exists()


def test_unknown_notebook_section_refused(project: Path) -> None:
    """A profile section for a notebook the project lacks is refused, naming the notebooks."""
    (project / "configs" / "test.yaml").write_text("notebooks:\n  03_train:\n    epochs: 1\n")
    with pytest.raises(runner.RunnerInputError, match="03_train.*00_first, 01_second, 02_third"):
        runner.plan_run("test", project_dir=project)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"size": "big"}, r"size='big'.*expects int"),
        ({"size": 2.5}, r"size=2\.5.*expects int"),
        ({"size": True}, r"size=True.*expects int"),
        ({"rate": "fast"}, r"rate='fast'.*expects float"),
        ({"fail": 1}, r"fail=1.*expects bool"),
        ({"label": 3}, r"label=3.*expects str.*quote it"),
    ],
)
def test_value_of_wrong_type_refused(project: Path, overrides: dict, expected: str) -> None:
    """A value whose type differs from the notebook's default is refused naming key and type."""
    with pytest.raises(runner.RunnerInputError, match=expected):
        runner.plan_run("test", overrides, project_dir=project)


def test_int_for_float_and_anything_for_a_none_default_accepted(project: Path) -> None:
    """An int fits a float parameter (and arrives as a float); a None default takes any value."""
    plan = runner.plan_run("test", {"rate": 2, "note": "text"}, project_dir=project)
    assert plan.parameters["00_first"]["rate"] == 2.0
    assert isinstance(plan.parameters["00_first"]["rate"], float)
    assert plan.parameters["02_third"]["note"] == "text"


def test_run_dir_parameter_refused_pointing_to_option(project: Path) -> None:
    """run_dir belongs to the runner: -p run_dir=… is refused with a pointer to --run-dir."""
    with pytest.raises(runner.RunnerInputError, match="--run-dir"):
        runner.plan_run("test", {"run_dir": "elsewhere"}, project_dir=project)


def _retag(path: Path, tagged: int | None, insert: str | None = None) -> None:
    """Take the `parameters` tag off every cell; give it to cell `tagged` (after inserting a new
    first code cell `insert`, as a user adding a setup cell on top would)."""
    notebook = nbformat.read(path, as_version=4)
    if insert is not None:
        notebook.cells.insert(1, nbformat.v4.new_code_cell(insert))
    for index, cell in enumerate(notebook.cells):
        cell.metadata["tags"] = ["parameters"] if index == tagged else []
    nbformat.write(notebook, path)


def test_a_notebook_whose_parameters_tag_was_removed_is_refused_saying_how_to_restore_it(
    project: Path,
) -> None:
    path = project / "notebooks" / "02_third.ipynb"
    _retag(path, tagged=None)
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.plan_run("test", project_dir=project, only=["00"])  # a profile serves any --only
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"{path} has no cell tagged 'parameters', so the runner could ")
    assert "Property Inspector" in message
    assert message.endswith("`git checkout -- notebooks/02_third.ipynb`.")


def test_a_parameters_tag_on_a_cell_without_run_dir_is_refused_before_anything_runs(
    project: Path,
) -> None:
    """The silent case: the tag moved to a setup cell above the real parameters cell. Given no
    value, the run said ok while the notebook wrote to artifacts/interactive (the untagged cell
    set run_dir back after papermill injected the run's)."""
    path = project / "notebooks" / "02_third.ipynb"
    _retag(path, tagged=1, insert="import os  # a setup cell on top, tagged by mistake")
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.plan_run("test", project_dir=project, only=["02"])
    message = str(refused.value)
    assert_one_sentence(message)
    assert message.startswith(f"{path}: the cell tagged 'parameters' does not set run_dir, so ")
    assert message.endswith("`git checkout -- notebooks/02_third.ipynb`.")
    runner.plan_run("test", project_dir=project, only=["00", "01"])  # only the selected count


def test_unknown_profile_refused_listing_profiles(project: Path) -> None:
    """An unknown profile is refused in one sentence listing the profiles in configs/."""
    (project / "configs" / "other.yaml").write_text("")
    with pytest.raises(runner.RunnerInputError, match=r"'nope'.*other, test"):
        runner.plan_run("nope", project_dir=project)


def test_misspelt_profile_section_refused(project: Path) -> None:
    """A top-level key other than description, shared, notebooks is refused by name."""
    (project / "configs" / "test.yaml").write_text("notebook:\n  00_first:\n    size: 1\n")
    with pytest.raises(runner.RunnerInputError, match="'notebook'"):
        runner.plan_run("test", project_dir=project)


def test_project_path_with_braces_runs(tmp_path: Path) -> None:
    """Paths are not format strings: a project under a folder named with {braces} still runs."""
    root = make_project(tmp_path / "a{b}c")
    result = runner.run_chain("test", run_dir=tmp_path / "r{un}", project_dir=root, only=["02"])
    assert seen(result.run_dir, "02_third")["run_dir"] == str(tmp_path / "r{un}")


def test_only_selects_by_prefix_and_refuses_unknown(project: Path) -> None:
    """--only keeps chain order; a prefix matching no notebook is refused naming the notebooks."""
    plan = runner.plan_run("test", project_dir=project, only=["02", "00"])
    assert list(plan.notebooks) == ["00_first", "02_third"]
    with pytest.raises(runner.RunnerInputError, match="'07'.*00_first, 01_second, 02_third"):
        runner.plan_run("test", project_dir=project, only=["07"])


def test_only_takes_a_notebooks_file_name_or_path_as_its_name(project: Path) -> None:
    """What a shell completes (`notebooks/01_second.ipynb`) selects that notebook; another
    extension is no notebook's name, and is refused as a prefix that matches none."""
    only = ["notebooks/01_second.ipynb", "00_first.ipynb"]
    assert list(runner.plan_run("test", project_dir=project, only=only).notebooks) == [
        "00_first",
        "01_second",
    ]
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.plan_run("test", project_dir=project, only=["01_second.nosuch"])
    assert str(refused.value) == (
        "--only '01_second.nosuch' matches no notebook (did you mean '01_second'?): the project "
        "has 00_first, 01_second, 02_third."
    )


def test_override_for_unselected_notebook_refused(project: Path) -> None:
    """-p for a parameter only unselected notebooks declare would do nothing, so it is refused."""
    with pytest.raises(runner.RunnerInputError, match="'fail'"):
        runner.plan_run("test", {"fail": True}, project_dir=project, only=["00"])


def test_failing_notebook_stops_chain_and_is_kept(project: Path) -> None:
    """A failing cell names notebook and cell, keeps the executed copy, and stops the chain.

    The copy is kept as <name>.failed-1.ipynb: <name>.ipynb is only ever a success.
    """
    run_dir = project / "run"
    with pytest.raises(runner.NotebookFailed) as failed:
        runner.run_chain("test", {"fail": True}, run_dir=run_dir, project_dir=project)
    message = str(failed.value)
    executed = run_dir / "notebooks" / "01_second.failed-1.ipynb"
    assert "01_second" in message and "if fail:" in message
    assert "ValueError: boom from 01_second" in message and str(executed) in message
    assert failed.value.executed == executed
    assert not (run_dir / "notebooks" / "01_second.ipynb").exists()
    assert "earlier success" not in message  # there was none
    kept = nbformat.read(executed, as_version=4)
    errors = [o for c in kept.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors and errors[0].evalue == "boom from 01_second"
    assert not (run_dir / "notebooks" / "02_third.ipynb").exists()
    assert (run_dir / "order.txt").read_text().split() == ["00_first", "01_second"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed"
    assert [e["status"] for e in record["notebooks"]] == ["ok", "failed", "not run"]
    assert record["notebooks"][1]["error"]["ename"] == "ValueError"
    assert "| 01_second | failed |" in (run_dir / "report.md").read_text()


def test_continuing_a_run_folder_keeps_earlier_notebooks_in_the_record(project: Path) -> None:
    """--only into an existing --run-dir adds to run.json instead of forgetting earlier steps."""
    run_dir = project / "run"
    runner.run_chain("test", run_dir=run_dir, project_dir=project, only=["00"])
    runner.run_chain("test", run_dir=run_dir, project_dir=project, only=["02"])
    record = json.loads((run_dir / "run.json").read_text())
    assert [(e["name"], e["status"]) for e in record["notebooks"]] == [
        ("00_first", "ok"),
        ("02_third", "ok"),
    ]
    assert (run_dir / "order.txt").read_text().split() == ["00_first", "02_third"]


def test_runs_in_the_same_second_get_their_own_folders(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default folder is artifacts/<time>-<profile>; a second run that second gets a suffix."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2024, 1, 2, 3, 4, 5)

    monkeypatch.setattr(runner.chain, "datetime", Frozen)
    first = runner.create_run_dir(project, "test")
    second = runner.create_run_dir(project, "test")
    assert first == project / "artifacts" / "20240102-030405-test"
    assert second == project / "artifacts" / "20240102-030405-test-2"
    assert first.is_dir() and second.is_dir()


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["epochs=3"], {"epochs": 3}),
        (["rate=0.1"], {"rate": 0.1}),
        (["rate=1e-3"], {"rate": 0.001}),
        (["xla=true"], {"xla": True}),
        (["name=resnet"], {"name": "resnet"}),
        (["name='3'"], {"name": "3"}),
        (["expr=a=b"], {"expr": "a=b"}),
        (["note="], {"note": None}),
        (["epochs=3", "rate=5"], {"epochs": 3, "rate": 5}),
    ],
)
def test_parse_overrides_reads_yaml_values(items: list[str], expected: dict) -> None:
    """-p values are YAML: numbers, booleans and text get their natural Python types."""
    parsed = runner.parse_overrides(items)
    assert parsed == expected
    assert [type(value) for value in parsed.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize("item", ["epochs", "=3", " =3", "rate=[1,", "d={a: 1, a: 2}"])
def test_parse_overrides_refuses_malformed_items(item: str) -> None:
    """An item without key=value form, or with a broken YAML value, is refused by name."""
    with pytest.raises(runner.RunnerInputError, match=re.escape(repr(item))) as refused:
        runner.parse_overrides([item])
    assert_one_sentence(str(refused.value))


def test_parameter_given_twice_refused() -> None:
    """`-p epochs=3 -p epochs=5` would silently keep one value: refused, naming both items."""
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.parse_overrides(["epochs=3", "rate=0.1", "epochs=5"])
    message = str(refused.value)
    assert "'epochs'" in message and "'epochs=3'" in message and "'epochs=5'" in message
    assert_one_sentence(message)


@pytest.mark.parametrize(
    ("profile_text", "key", "lines"),
    [
        ("shared:\n  size: 3\n  rate: 0.5\n  size: 4\n", "size", (4, 2)),
        ("notebooks:\n  00_first:\n    label: a\n    label: b\n", "label", (4, 3)),
        ("description: one\ndescription: two\n", "description", (2, 1)),
    ],
    ids=["shared", "notebook-section", "top-level"],
)
def test_profile_with_a_repeated_key_refused(
    project: Path, profile_text: str, key: str, lines: tuple[int, int]
) -> None:
    """A key written twice in one mapping of a profile is refused naming key, file and lines."""
    (project / "configs" / "test.yaml").write_text(profile_text)
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.plan_run("test", project_dir=project)
    message = str(refused.value)
    assert repr(key) in message and str(project / "configs" / "test.yaml") in message
    assert f"line {lines[0]}" in message and f"line {lines[1]}" in message
    assert_one_sentence(message)


def test_same_key_in_different_sections_accepted(project: Path) -> None:
    """Only a repeat within one mapping is refused: a notebook section may override shared."""
    text = "shared:\n  size: 3\nnotebooks:\n  00_first:\n    size: 5\n"
    (project / "configs" / "test.yaml").write_text(text)
    plan = runner.plan_run("test", project_dir=project)
    assert plan.parameters["00_first"]["size"] == 5 and plan.parameters["01_second"]["size"] == 3


LOADED_RUNNER = re.compile(
    r"Loading the notebook runner \(papermill, nbconvert\): done in \d+\.\d s"
)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", PACKAGE, "run", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-p", "sise=3"], "'sise'.*fail, label, note, rate, size"),
        (["-p", "size=big"], "size='big'"),
        (["-p", "size"], "'size' is not of the form key=value"),
        (["--only", "07"], "'07'"),
        (["--profile", "nope"], "'nope'"),
        (["-p", "sise=3", "--plan"], "'sise'"),
    ],
    ids=["unknown-param", "wrong-type", "malformed", "unknown-only", "unknown-profile", "plan"],
)
def test_cli_exits_2_on_bad_input(project: Path, args: list[str], expected: str) -> None:
    """Bad input exits 2 with the reason on stderr, and no run folder is made."""
    done = run_cli("--profile", "test", "--project-dir", str(project), *args)
    assert done.returncode == 2, done.stderr
    assert re.search(expected, done.stderr), done.stderr
    assert not (project / "artifacts").exists()


def test_cli_exits_1_when_a_notebook_fails(project: Path) -> None:
    """A failing notebook exits 1, naming it on stderr; progress lines show where it stopped."""
    done = run_cli("--profile", "test", "--project-dir", str(project), "-p", "fail=true")
    assert done.returncode == 1, done.stderr
    assert "01_second failed" in done.stderr and "ValueError" in done.stderr
    assert re.search(r"^\[1/3\] 00_first … ok \(\d+\.\d s\)$", done.stdout, re.M), done.stdout
    assert re.search(r"^\[2/3\] 01_second … FAILED", done.stdout, re.M), done.stdout
    assert "[3/3] 02_third" not in done.stdout
    assert "kernel stderr of 00_first" not in done.stdout + done.stderr
    (run_dir,) = (project / "artifacts").iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}-test", run_dir.name)
    assert str(run_dir / "notebooks" / "01_second.failed-1.ipynb") in done.stderr
    assert "Traceback" not in done.stderr
    # The values given are shown before the first notebook; the run closes with its headline,
    # the total and both report paths, and the cause follows as the very last line (stderr).
    assert re.search(r"^    fail +True +-p$", done.stdout, re.M), done.stdout
    assert done.stdout.index("fail ") < done.stdout.index("[1/3] 00_first")
    last = done.stdout.rstrip().splitlines()[-5:]
    assert re.fullmatch(r"  01_second: failed in cell \[\d\]: ValueError: boom from \w+", last[0])
    assert last[1].startswith("  02_third: not run") and last[2].startswith("  Total: "), last
    assert "status failed" in last[2], last
    assert last[3:] == [
        f"Report: {run_dir / 'report.md'}",
        f"Report (HTML, works offline): {run_dir / 'report.html'}",
    ]


def test_cli_closes_a_run_with_headline_total_and_report_paths(project: Path) -> None:
    """A finished run ends with one line per notebook, the total time and the two reports."""
    done = run_cli("--profile", "test", "--project-dir", str(project), "--only", "02")
    assert done.returncode == 0, done.stderr
    (run_dir,) = (project / "artifacts").iterdir()
    last = done.stdout.rstrip().splitlines()[-6:]
    assert last[0] == "" and last[1] == f"Run {run_dir.name}: ok", last
    assert last[2].startswith("  02_third: ")
    assert re.fullmatch(r"  Total: \d+\.\d s for the whole command; .*status ok\.", last[3])
    assert last[4] == f"Report: {run_dir / 'report.md'}", last
    assert done.stdout.rstrip().endswith(f"Report (HTML, works offline): {run_dir / 'report.html'}")
    # papermill and nbconvert load between the plan and the run folder (72 s silent on a busy
    # machine, issue 33): a line with its time, as TensorFlow's.
    lines = done.stdout.splitlines()
    loaded = [i for i, line in enumerate(lines) if LOADED_RUNNER.search(line)]
    assert loaded and loaded[0] < lines.index(f"Run folder: {run_dir}"), done.stdout


def test_plan_prints_every_value_and_its_source_and_runs_nothing(project: Path) -> None:
    """run --plan names each notebook's values: default, profile or -p; nothing is written."""
    args = ["--profile", "test", "--project-dir", str(project), "--plan"]
    done = run_cli(*args, "-p", "01_second.size=9", "-p", "label=cli")
    assert done.returncode == 0, done.stderr
    rows = {tuple(line.split()) for line in done.stdout.splitlines() if line.startswith("    ")}
    assert ("size", "3", "profile", "test") in rows  # 00_first keeps the shared value
    assert ("size", "9", "-p", "01_second.size") in rows
    assert ("label", "'cli'", "-p") in rows
    assert ("rate", "0.25", "profile", "test", "(00_first)") in rows
    assert ("fail", "False", "default") in rows and ("note", "None", "default") in rows
    assert not (project / "artifacts").exists()


def test_a_notebook_scoped_value_reaches_only_that_notebook(project: Path) -> None:
    """-p 01_second.size=9 (or 01.size=9) sets 01_second's size and leaves 00_first's alone."""
    for key in ("01_second.size", "01.size"):
        plan = runner.plan_run("test", {key: 9}, project_dir=project)
        assert plan.parameters["01_second"]["size"] == 9
        assert plan.parameters["00_first"]["size"] == 3
        assert plan.sources["01_second"]["size"] == "-p 01_second.size"
        assert plan.sources["00_first"]["size"] == "profile test"
        assert plan.sources["00_first"]["rate"] == "profile test (00_first)"
        assert plan.sources["01_second"]["fail"] == "default"
    plan = runner.plan_run("test", {"size": 5, "00_first.size": 6}, project_dir=project)
    assert plan.parameters["00_first"]["size"] == 6 and plan.parameters["01_second"]["size"] == 5


@pytest.mark.parametrize(
    ("overrides", "only", "expected"),
    [
        ({"01_secnd.size": 1}, None, r"'01_secnd' names no single notebook \(did you mean "),
        ({"0.size": 1}, None, "'0' names no single notebook"),
        ({"01_second.sise": 1}, None, r"'sise' from -p 01_second.sise \(did you mean 'size'\?\)"),
        ({"01_second.size": "x"}, None, r"size='x' from -p 01_second.size is str"),
        ({"01_second.size": 1}, ["00"], "01_second, which this run does not select"),
    ],
    ids=["unknown-notebook", "ambiguous-prefix", "unknown-name", "wrong-type", "unselected"],
)
def test_a_bad_notebook_scoped_value_is_refused(
    project: Path, overrides: dict, only: list[str] | None, expected: str
) -> None:
    with pytest.raises(runner.RunnerInputError, match=expected) as refused:
        runner.plan_run("test", overrides, project_dir=project, only=only)
    assert_one_sentence(str(refused.value))


def test_a_near_miss_is_answered_with_did_you_mean(project: Path) -> None:
    """A misspelt parameter, profile or notebook gets the close name, in the same sentence."""
    cases = [
        (("test", {"sise": 3}), "(did you mean 'size'?)"),
        (("tset", {}), "(did you mean 'test'?)"),
    ]
    for (profile, overrides), hint in cases:
        with pytest.raises(runner.RunnerInputError) as refused:
            runner.plan_run(profile, overrides, project_dir=project)
        assert hint in str(refused.value)
        assert_one_sentence(str(refused.value))
    with pytest.raises(runner.RunnerInputError) as refused:
        runner.plan_run("test", {"zzz": 3}, project_dir=project)
    assert "did you mean" not in str(refused.value)  # nothing close: no guess


def test_a_refusal_loads_neither_tensorflow_nor_papermill(project: Path) -> None:
    """Names, types and profiles are refused before the heavy imports (seconds each), so the
    answer comes at once; the check runs in a fresh interpreter."""
    code = (
        "import sys\n"
        f"from {PACKAGE}.cli import main\n"
        f"base = ['run', '--project-dir', {str(project)!r}, '--profile', 'test']\n"
        "for args in (['--profile', 'nosuch'], ['-p', 'sise=3'], ['-p', 'size=x']):\n"
        "    assert main([*base, *args]) == 2\n"
        "heavy = {'tensorflow', 'papermill', 'nbclient'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("did you mean 'size'") == 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_each_notebooks_lines_print_under_its_own_header() -> None:
    """The header `[2/3] 01_second …` comes before the progress lines of 01_second, not after
    them under the previous notebook's result; the bar moves below them and is gone at the end."""
    out = _Terminal()
    for number, name in ((1, "00_first"), (2, "01_second")):
        live = NotebookProgress(number, 3, name, out)
        live.start(cells=2)
        live.cell_start("step.run(run_dir, params)")
        live.write(f"{MARK}{name} working: 1/2\n")
        live.cell_complete("step.run(run_dir, params)")
        live.finish("ok", 1.0)
    text = out.getvalue()
    for name, number in (("00_first", 1), ("01_second", 2)):
        header = text.index(f"[{number}/3] {name} …\n")
        line = text.index(f"{MARK}{name} working")
        result = text.index(f"[{number}/3] {name} … ok (1.0 s)")
        assert header < line < result, text
    assert text.index("00_first … ok") < text.index("[2/3] 01_second …\n")


def test_a_relative_run_folder_outside_a_project_is_one_sentence(tmp_path, monkeypatch) -> None:
    """Outside a project a relative run folder cannot be placed: a StepError (its sentence), still
    a FileNotFoundError for callers that fall back to the working directory."""
    from {{ cookiecutter.package_name }}.artifacts import StepError, resolve_run_dir

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StepError, match="No project found at or above") as caught:
        resolve_run_dir("somewhere")
    assert isinstance(caught.value, FileNotFoundError)
    assert_one_sentence(str(caught.value))


def test_the_cli_prints_a_step_error_no_command_caught_as_its_sentence(monkeypatch, capsys) -> None:
    """A StepError that a command handler lets through (serve on a relative folder outside a
    project did) is printed as its sentence with exit status 2, not as a traceback."""
    import argparse

    from {{ cookiecutter.package_name }} import cli
    from {{ cookiecutter.package_name }}.artifacts import StepError

    def handler(args: argparse.Namespace) -> int:
        raise StepError("The value x is not allowed: use y.")

    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.set_defaults(handler=handler)
    monkeypatch.setattr(cli, "_parser", lambda chosen=None: parser)
    assert cli.main(["report"]) == 2
    assert capsys.readouterr().err == "{{ cookiecutter.package_name }}: The value x is not allowed: use y.\n"


def test_ctrl_c_while_papermill_loads_is_one_line_not_a_traceback(
    project: Path, monkeypatch, capsys
) -> None:
    """Issue 33: a Ctrl-C inside papermill's import left runner.execute half-loaded, and the
    except clause that named runner.NotebookFailed imported it again, so the user got an
    AttributeError traceback. No clause imports now: one line, exit 130."""
    import argparse

    from {{ cookiecutter.package_name }}.runner import commands

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_chain", interrupted)
    # As a half-imported module answers: runner.NotebookFailed now raises AttributeError.
    monkeypatch.setitem(runner._HOMES, "NotebookFailed", "profile")
    args = argparse.Namespace(
        param=[], only=None, profile="test", project_dir=project, plan=False, run_dir=None
    )
    assert commands.run(args, "prog") == 130
    assert capsys.readouterr().err == "prog: interrupted before any notebook started.\n"


def test_papermill_loads_without_the_optional_modules_no_run_uses() -> None:
    """Issue 42 §3.9: jsonschema's IRI checker (rfc3987_syntax) and papermill's gs:// and hdfs://
    handlers (gcsfs, pyarrow) took most of papermill's import, seconds before the first notebook;
    the runner loads papermill without them, and they import as usual afterwards."""
    import importlib.util

    from {{ cookiecutter.package_name }}.runner.live import UNUSED

    installed = [name for name in UNUSED if importlib.util.find_spec(name) is not None]
    if not installed:
        pytest.skip(f"none of {UNUSED} is installed here: papermill cannot load them")
    code = (
        "import importlib, sys\n"
        f"import {PACKAGE}.runner.chain\n"
        f"print(sorted(set({installed!r}) & set(sys.modules)))\n"
        f"print([importlib.import_module(name).__name__ for name in {installed!r}])\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.splitlines() == ["[]", repr(installed)]


def test_a_stopped_task_does_not_say_done(capsys) -> None:
    """`» Loading TensorFlow: done in 3.3 s` followed the Ctrl-C that stopped the loading."""
    from {{ cookiecutter.package_name }} import progress

    with pytest.raises(KeyboardInterrupt), progress.task("Loading TensorFlow", unit=""):
        raise KeyboardInterrupt
    with pytest.raises(ValueError), progress.task("Loading TensorFlow", unit=""):
        raise ValueError("broken")
    with progress.task("Loading TensorFlow", unit=""):
        pass
    said = re.findall(r"Loading TensorFlow: (\w+) in", capsys.readouterr().out)
    assert said == ["stopped", "failed", "done"]
