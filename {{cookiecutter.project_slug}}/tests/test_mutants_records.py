"""run.json's record, function by function, in this process (no notebook runs): what each
attempt and invocation holds, what a re-run keeps, how a bad or an older run.json is read back,
and the record of a folder the notebooks wrote by hand.

test_runner_records.py proves the same through real runs (kernels, subprocesses), which mutation
testing cannot afford per mutant: `make mutate` runs these first and stops at the first failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from {{ cookiecutter.package_name }}.runner import record
from {{ cookiecutter.package_name }}.runner.plan import Plan

NOW = "2026-01-02T03:04:05+00:00"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record, "now", lambda: NOW)


def _plan(tmp_path: Path) -> Plan:
    return Plan(
        project=tmp_path / "project",
        profile="smoke",
        description="seconds on a CPU",
        notebooks={"00_env": tmp_path / "00_env.ipynb", "01_data": tmp_path / "01_data.ipynb"},
        parameters={"00_env": {"seed": 1}, "01_data": {}},
        overrides={"epochs": 2},
    )


def _attempt(notebook: str, status: str, **more) -> dict:
    return {"notebook": notebook, "status": status, **more}


def test_a_first_record_holds_this_invocation_only(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    made = record.start_record(tmp_path / "run", plan, ["01"])
    invocation = {
        "started": NOW,
        "finished": None,
        "status": "running",
        "profile": "smoke",
        "overrides": {"epochs": 2},
        "only": ["01"],
        "notebooks": ["00_env", "01_data"],
    }
    assert made == {
        "profile": "smoke",
        "description": "seconds on a CPU",
        "overrides": {"epochs": 2},
        "project_dir": str(tmp_path / "project"),
        "run_dir": str(tmp_path / "run"),
        "started": NOW,
        "finished": None,
        "status": "running",
        "invocations": [invocation],
        "attempts": [],
    }


def test_a_record_carries_the_earlier_attempts_and_invocations(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    earlier = {
        "attempts": [_attempt("00_env", "ok"), _attempt("01_data", "running")],
        "invocations": [{"status": "failed"}],
    }
    (folder / "run.json").write_text(json.dumps(earlier))
    made = record.start_record(folder, _plan(tmp_path), None)
    assert made["attempts"] == [_attempt("00_env", "ok"), _attempt("01_data", "interrupted")]
    assert made["invocations"][0] == {"status": "failed"}
    assert made["invocations"][1]["only"] is None
    assert "set_aside" not in made["invocations"][1]


def test_a_record_after_a_bad_run_json_names_where_it_was_kept(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text("{not json")
    made = record.start_record(folder, _plan(tmp_path), None)
    assert made["attempts"] == [] and len(made["invocations"]) == 1
    assert made["invocations"][0]["set_aside"] == "run.json.corrupt-1"
    capsys.readouterr()


def test_a_new_attempt_is_running_with_the_plans_values_and_the_run_folder(tmp_path: Path) -> None:
    made = {"attempts": [_attempt("00_env", "ok")]}
    attempt = record.new_attempt(made, _plan(tmp_path), "00_env", tmp_path / "run")
    assert attempt == {
        "notebook": "00_env",
        "profile": "smoke",
        "started": NOW,
        "finished": None,
        "seconds": None,
        "status": "running",
        "executed": None,
        "parameters": {"seed": 1, "run_dir": str(tmp_path / "run")},
        "kernel_log": "notebooks/00_env.kernel.log",
        "error": None,
    }
    assert made["attempts"] == [_attempt("00_env", "ok"), attempt]
    assert attempt["parameters"] is not _plan(tmp_path).parameters["00_env"]


def test_finishing_marks_what_still_runs_interrupted_and_closes_this_invocation() -> None:
    made = {
        "attempts": [_attempt("00_env", "ok", finished="then"), _attempt("01_data", "running")],
        "invocations": [{"status": "ok"}, {"status": "failed"}, {"status": "running"}],
    }
    record.finish_record(made, "interrupted")
    assert made["attempts"] == [
        _attempt("00_env", "ok", finished="then"),
        _attempt("01_data", "interrupted", finished=NOW),
    ]
    assert made["status"] == "interrupted" and made["finished"] == NOW
    assert made["invocations"] == [
        {"status": "ok"},
        {"status": "failed"},
        {"status": "interrupted", "finished": NOW},
    ]


def test_summarize_gives_each_notebook_its_latest_attempt_and_latest_success() -> None:
    ok = {"started": "s1", "finished": "f1", "seconds": 3, "executed": "e1", "parameters": {"a": 1}}
    attempts = [
        _attempt("01_data", "ok", profile="p", error=None, **ok),
        _attempt("00_env", "ok", profile="p", **ok),
        _attempt("01_data", "failed", error="boom", seconds=1, started="s2"),
    ]
    entries = record.summarize(attempts, ["02_model", "00_env"])
    assert [entry["name"] for entry in entries] == ["00_env", "01_data", "02_model"]
    success = {**ok, "profile": "p"}
    assert entries[0] == {
        "name": "00_env",
        "status": "ok",
        "profile": "p",
        "latest_success": success,
        **ok,
    }
    assert entries[1] == {
        "name": "01_data",
        "status": "failed",
        "error": "boom",
        "seconds": 1,
        "started": "s2",
        "executed": None,
        "parameters": {},
        "latest_success": success,
    }
    assert entries[2] == {
        "name": "02_model",
        "status": "not run",
        "seconds": None,
        "executed": None,
        "parameters": {},
        "latest_success": None,
    }


def test_the_latest_success_is_the_newest_of_several() -> None:
    attempts = [_attempt("00_env", "ok", started="old"), _attempt("00_env", "ok", started="new")]
    attempts.append(_attempt("00_env", "failed", started="newest"))
    (entry,) = record.summarize(attempts, [])
    assert entry["latest_success"]["started"] == "new"
    assert entry["latest_success"]["finished"] is None  # a key the attempt lacks reads as None
    assert entry["started"] == "newest"


def test_save_writes_run_json_with_the_summary_and_the_report(tmp_path: Path) -> None:
    made = record.start_record(tmp_path, _plan(tmp_path), None)
    record.new_attempt(made, _plan(tmp_path), "00_env", tmp_path)
    record.save(tmp_path, made, ["00_env", "01_data"])
    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert saved == made
    assert [(e["name"], e["status"]) for e in saved["notebooks"]] == [
        ("00_env", "running"),
        ("01_data", "not run"),
    ]
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith(f"# Run {tmp_path.name}")


def test_save_on_a_full_disk_says_to_run_again_into_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.json's sentence ends with what to do next (run again, earlier attempts kept)."""
    import errno

    from {{ cookiecutter.package_name }} import writes

    made = record.start_record(tmp_path, _plan(tmp_path), None)

    def full_disk(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writes.tempfile, "mkstemp", full_disk)
    with pytest.raises(writes.WriteError) as error:
        record.save(tmp_path, made, ["00_env"])
    assert str(error.value).endswith(f"then {record.AGAIN}.")


def test_no_run_json_is_no_earlier_attempt(tmp_path: Path) -> None:
    assert record.read_earlier(tmp_path) == ({"attempts": [], "invocations": []}, None)


def test_a_run_json_of_this_runner_is_read_back_as_it_was(tmp_path: Path) -> None:
    data = {"attempts": [_attempt("00_env", "failed", error="x")], "invocations": [{"a": 1}]}
    (tmp_path / "run.json").write_text(json.dumps(data), encoding="utf-8")
    assert record.read_earlier(tmp_path) == (data, None)
    del data["invocations"]
    (tmp_path / "run.json").write_text(json.dumps(data), encoding="utf-8")
    assert record.read_earlier(tmp_path) == ({**data, "invocations": []}, None)
    assert (tmp_path / "run.json").exists()


LISTS = "attempts and invocations must be lists"
NAMED = "every attempt needs a notebook and a status"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "{not json",
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        ("[]", "list indices must be integers or slices, not str"),
        ('{"attempts": {}}', LISTS),
        ('{"attempts": [], "invocations": {}}', LISTS),
        ('{"attempts": [{"status": "ok"}]}', "'notebook'"),
        ('{"attempts": [{"notebook": 1, "status": "ok"}]}', NAMED),
        ('{"attempts": [{"notebook": "00_env", "status": null}]}', NAMED),
        ('{"notebooks": [{"status": "ok"}]}', "'name'"),
        ('{"notebooks": "none"}', "string indices must be integers, not 'str'"),
    ],
)
def test_a_run_json_that_cannot_be_read_is_set_aside_in_one_sentence(
    tmp_path: Path, capsys, text: str, reason: str
) -> None:
    (tmp_path / "run.json").write_text(text, encoding="utf-8")
    (tmp_path / "run.json.corrupt-1").write_text("an earlier one")
    earlier, kept = record.read_earlier(tmp_path)
    assert (earlier, kept) == ({"attempts": [], "invocations": []}, "run.json.corrupt-2")
    assert not (tmp_path / "run.json").exists()
    assert (tmp_path / "run.json.corrupt-2").read_text(encoding="utf-8") == text
    assert (tmp_path / "run.json.corrupt-1").read_text() == "an earlier one"
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1
    assert said == [
        f"{tmp_path / 'run.json'} could not be read ({reason}); it is kept as run.json.corrupt-2 "
        "and a new record starts."
    ]


def test_the_first_bad_run_json_is_kept_as_corrupt_1(tmp_path: Path, capsys) -> None:
    (tmp_path / "run.json").write_text("", encoding="utf-8")
    assert record.read_earlier(tmp_path)[1] == "run.json.corrupt-1"
    assert "(Expecting value: line 1 column 1 (char 0))" in capsys.readouterr().out


def test_an_earlier_runners_run_json_becomes_attempts(tmp_path: Path) -> None:
    old = {
        "started": "s",
        "finished": "f",
        "status": "failed",
        "profile": "smoke",
        "overrides": {"epochs": 1},
        "description": "not carried",
        "notebooks": [
            {"name": "00_env", "status": "ok", "seconds": 2, "finished": "f0"},
            {"name": "01_data", "status": "not run"},
            {"name": 1, "status": "failed", "error": "boom"},
            {"name": "02_model", "status": "not run"},
        ],
    }
    (tmp_path / "run.json").write_text(json.dumps(old), encoding="utf-8")
    earlier, kept = record.read_earlier(tmp_path)
    assert kept is None
    assert earlier == {
        "attempts": [
            {"notebook": "00_env", "status": "ok", "seconds": 2, "finished": "f0", "started": "s"},
            {"notebook": "1", "status": "failed", "error": "boom", "started": "s", "finished": "f"},
        ],
        "invocations": [
            {
                "started": "s",
                "finished": "f",
                "status": "failed",
                "profile": "smoke",
                "overrides": {"epochs": 1},
            }
        ],
    }


def test_an_earlier_runners_running_notebook_reads_back_interrupted(tmp_path: Path) -> None:
    old = {"notebooks": [{"name": "00_env", "status": "running"}]}
    (tmp_path / "run.json").write_text(json.dumps(old), encoding="utf-8")
    earlier, _ = record.read_earlier(tmp_path)
    assert earlier["attempts"] == [
        {"notebook": "00_env", "status": "interrupted", "started": None, "finished": None}
    ]
    assert earlier["invocations"] == [
        dict.fromkeys(("started", "finished", "status", "profile", "overrides"))
    ]


def test_a_long_error_is_cut_to_120_characters() -> None:
    assert record.one_line(ValueError("x" * 120), 120) == "x" * 120
    assert record.one_line(ValueError("x" * 121), 120) == "x" * 119 + "…"
    assert record.one_line(ValueError("a\n  b"), 120) == "a b"
    assert record.one_line(ValueError("x" * 121)) == "x" * 121


def test_a_long_sentence_is_cut_after_its_last_whole_word() -> None:
    """A cut mid-word ("the backend takes no st…") reads as a typo: the cut falls after the last
    whole word (its comma or colon dropped) when one ends in the last third, else at the limit."""
    said = record.one_line("The backend takes no strings: " + "its graph, " * 20, 60)
    assert said == "The backend takes no strings: its graph, its graph, its…"
    assert record.one_line("a" * 30 + " " + "b" * 90, 60) == "a" * 30 + " " + "b" * 28 + "…"
    assert record.one_line("a " * 30 + "b" * 50, 60) == "a " * 29 + "a…"
    assert record.one_line("one two, " + "c" * 100, 12) == "one two…"


def test_now_is_the_local_time_to_the_second_with_its_offset(monkeypatch) -> None:
    monkeypatch.undo()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", record.now())


# --- notebooks run by hand: no run.json -------------------------------------------------------


def _hand_project(root: Path, names: tuple[str, ...]) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n')
    for name in names:
        nbformat.write(nbformat.v4.new_notebook(), root / "notebooks" / f"{name}.ipynb")
    (root / "run" / "metrics").mkdir(parents=True)
    return root / "run"


def _ran(folder: Path, step: str, when: int) -> None:
    path = folder / "metrics" / f"{step}.json"
    path.write_text("{}")
    os.utime(path, (when, when))


def _saved_with_outputs(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1")
    cell.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    notebook.cells = [nbformat.v4.new_code_cell("0"), cell]
    nbformat.write(notebook, path)


def _stamp(when: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(when).astimezone().isoformat(timespec="seconds")


def test_a_folder_run_by_hand_lists_each_notebook_by_its_metrics(tmp_path: Path) -> None:
    folder = _hand_project(tmp_path, ("00_environment", "01_data", "03_train"))
    _ran(folder, "environment", 2_000_000)
    _ran(folder, "data", 1_000_000)
    _saved_with_outputs(tmp_path / "notebooks" / "01_data.ipynb")
    made = record.interactive_record(folder)
    common = {"seconds": None, "parameters": {}, "error": None, "latest_success": None}
    assert made == {
        "profile": "interactive",
        "description": "notebooks run by hand (JupyterLab); saved notebooks with outputs are shown",
        "overrides": {},
        "run_dir": str(folder),
        "started": _stamp(1_000_000),
        "finished": _stamp(2_000_000),
        "status": "partial",
        "invocations": [],
        "attempts": [],
        "notebooks": [
            {
                "name": "00_environment",
                "status": "ok",
                "executed": None,
                "finished": _stamp(2_000_000),
                **common,
            },
            {
                "name": "01_data",
                "status": "ok",
                "executed": "../notebooks/01_data.ipynb",
                "finished": _stamp(1_000_000),
                **common,
            },
            {"name": "03_train", "status": "not run", "executed": None, **common},
        ],
    }


def test_a_folder_where_every_notebook_ran_by_hand_is_ok(tmp_path: Path) -> None:
    folder = _hand_project(tmp_path, ("00_environment", "01_data"))
    _ran(folder, "environment", 1_000_000)
    _ran(folder, "data", 1_000_000)
    made = record.interactive_record(folder)
    assert made["status"] == "ok"
    assert made["started"] == made["finished"] == _stamp(1_000_000)


def test_a_folder_without_metrics_is_no_record(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        record.interactive_record(tmp_path)
    assert raised.value.args == (tmp_path / "metrics",)
    (tmp_path / "metrics").write_text("a file, not a folder")
    with pytest.raises(FileNotFoundError):
        record.interactive_record(tmp_path)


def test_a_notebook_has_outputs_when_one_of_its_cells_has(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    _saved_with_outputs(path)
    assert record._has_outputs(path)
    nbformat.write(nbformat.v4.new_notebook(), path)
    assert not record._has_outputs(path)
    for text in ("not json", "[]", '{"nbformat": 4}'):
        path.write_text(text)
        assert not record._has_outputs(path), text
    assert not record._has_outputs(tmp_path / "missing.ipynb")


def test_the_set_aside_sentence_comes_before_what_the_run_prints_next(tmp_path: Path) -> None:
    """Flushed at once: in a log (stdout a pipe) it is not held back behind the notebooks' lines."""
    # called here too, so that mutation testing (which maps tests to the functions they call in
    # this process) runs this test against read_earlier's mutants
    assert record.read_earlier(tmp_path) == ({"attempts": [], "invocations": []}, None)
    (tmp_path / "run.json").write_text("{not json", encoding="utf-8")
    code = (
        "import os, sys; from pathlib import Path; from {{ cookiecutter.package_name }}.runner import record; "
        "record.read_earlier(Path(sys.argv[1])); os.write(1, b'the next line\\n')"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" could not")[0] for line in lines] == [str(tmp_path / "run.json")] + [
        "the next line"
    ]


def test_an_empty_metrics_folder_outside_a_project_is_a_record_of_nothing_run(tmp_path) -> None:
    """`report` on a run folder copied out of its project, or whose metrics/ is still empty, was
    a traceback (min() of no times): it is a record with no notebooks and no times."""
    folder = tmp_path / "copied" / "run"
    (folder / "metrics").mkdir(parents=True)
    made = record.interactive_record(folder)
    assert (made["started"], made["finished"], made["notebooks"]) == ("-", None, [])
    assert made["status"] == "partial"
    _ran(folder, "data", 1_000_000)  # a step's metrics, but no project to list the notebooks
    assert record.interactive_record(folder)["notebooks"] == []


@pytest.mark.parametrize("text", ['{"cells": 5}', '{"cells": [1, "x"]}', "[]"])
def test_a_saved_notebook_of_the_wrong_shape_has_no_outputs(tmp_path: Path, text: str) -> None:
    path = tmp_path / "a.ipynb"
    path.write_text(text, encoding="utf-8")
    assert record._has_outputs(path) is False


_WHOLE = {"profile": "smoke", "status": "ok", "started": "t", "notebooks": [], "attempts": []}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "a JSON array, not an object"),
        ("x", "a JSON string, not an object"),
        (None, "a JSON value, not an object"),
        (True, "a JSON boolean, not an object"),
        (3, "a JSON number, not an object"),
        ({}, "no profile, status, started, notebooks"),
        ({"status": "ok", "notebooks": []}, "no profile, started"),
        ({**_WHOLE, "notebooks": 5}, "notebooks must be a list of objects"),
        ({**_WHOLE, "attempts": [1]}, "attempts must be a list of objects"),
        (
            {**_WHOLE, "notebooks": [{"name": "00", "status": 1}]},
            "notebooks entry 1 has no name and status",
        ),
        (
            {**_WHOLE, "attempts": [{"notebook": "00", "status": "ok"}, {"notebook": "01"}]},
            "attempts entry 2 has no notebook and status",
        ),
        (
            {**_WHOLE, "notebooks": [{"name": "00", "status": "failed", "error": "x"}]},
            "notebooks entry 1 has an error or latest_success that is not an object",
        ),
        (
            {**_WHOLE, "attempts": [{"notebook": "00", "status": "ok", "latest_success": [1]}]},
            "attempts entry 1 has an error or latest_success that is not an object",
        ),
        ({**_WHOLE, "attempts": None}, None),
        ({**_WHOLE, "notebooks": [{"name": "00", "status": "ok", "error": None}]}, None),
    ],
)
def test_record_problem_names_what_keeps_a_run_json_from_a_report(data, problem) -> None:
    assert record.record_problem(data) == problem
