"""The plan of a run (runner/plan.py), in the `progress` group of `make mutate`: which notebook
gets which value, from where, and the exact sentence of each refusal, on test_runner's tiny
project plus three notebooks (MORE) whose parameters share names with other types."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from test_runner import KERNELSPEC, make_project

from {{ cookiecutter.package_name }}.runner import RunnerInputError, plan, plan_run

RUN_DIR = 'run_dir = "artifacts/interactive"\n'
MORE = {  # test_runner's three notebooks have size, rate, label, fail, note
    "03_fourth": "label: int = 0\nratio: float | None = None\nnote: int = 0",
    "04_fifth": "",  # only run_dir
    "05_sixth": 'label: bool = False\nnote: str = ""',
}
ALL = "00_first, 01_second, 02_third, 03_fourth, 04_fifth, 05_sixth"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project")
    for name, parameters in MORE.items():
        cell = nbformat.v4.new_code_cell(RUN_DIR + parameters)
        cell.metadata["tags"] = ["parameters"]
        notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
        notebook.cells = [cell]
        nbformat.write(notebook, root / "notebooks" / f"{name}.ipynb")
    return root


def refusal(*args, **kwargs) -> str:
    with pytest.raises(RunnerInputError) as refused:
        plan_run(*args, **kwargs)
    return str(refused.value)


def test_a_profile_value_no_notebook_declares_is_refused_naming_the_file_and_section(
    project: Path,
) -> None:
    (project / "configs" / "bad.yaml").write_text("shared:\n  sise: 3\n")
    assert refusal("bad", project_dir=project) == (
        "Unknown parameter 'sise' in configs/bad.yaml (shared) (did you mean 'size'?); "
        "the notebooks declare fail, label, note, rate, ratio, size."
    )
    (project / "configs" / "bad.yaml").write_text("notebooks:\n  02_third:\n    size: 1\n")
    assert refusal("bad", project_dir=project) == (
        "Unknown parameter 'size' in configs/bad.yaml (notebooks.02_third); 02_third declares note."
    )
    (project / "configs" / "bad.yaml").write_text("notebooks:\n  02_third:\n    note: 1\n")
    (project / "configs" / "default.yaml").write_text("shared:\n  size: 4\n")
    assert plan_run(project_dir=project).parameters["01_second"] == {"size": 4}


def test_a_value_of_the_wrong_type_is_refused_naming_the_notebook_and_its_type(
    project: Path,
) -> None:
    assert refusal("test", {"size": "x"}, project_dir=project) == (
        "Parameter size='x' from -p is str, but 00_first expects int (default 2)."
    )
    # 1.5 fits no notebook's label (str in 00_first, int in 03_fourth): refused by the first
    assert refusal("test", {"label": 1.5}, project_dir=project) == (
        'Parameter label=1.5 from -p is float, but 00_first expects str (default "x"); '
        "quote it to keep it text."
    )


def test_an_unknown_p_value_is_refused_listing_what_the_selected_notebooks_declare(
    project: Path,
) -> None:
    assert refusal("test", {"zzz": 3}, project_dir=project, only=["02"]) == (
        "Unknown parameter 'zzz' from -p; the selected notebooks declare note."
    )
    assert refusal("test", {"zzz": 3}, project_dir=project) == (
        "Unknown parameter 'zzz' from -p; the notebooks declare fail, label, note, rate, ratio, "
        "size."
    )
    assert refusal("test", {"02_third.size": 3}, project_dir=project) == (
        "Unknown parameter 'size' from -p 02_third.size; 02_third declares note."
    )


def test_a_scoped_value_is_split_at_its_last_dot() -> None:
    with pytest.raises(RunnerInputError) as refused:
        plan._split({"01.x.size": 3}, {"00_first": Path(), "01_second": Path()}, ["01_second"])
    assert str(refused.value) == (
        "-p 01.x.size: '01.x' names no single notebook; the project has 00_first, 01_second."
    )
    general, scoped = plan._split(
        {"size": 1, "01.size": 2}, {"00_first": Path(), "01_second": Path()}, ["01_second"]
    )
    assert general == {"size": 1} and scoped == {"01_second": {"size": 2}}


def test_no_notebooks_no_selection_and_no_project_are_refused_in_one_sentence(
    project: Path, tmp_path: Path
) -> None:
    assert refusal("test", project_dir=project, only=[" ", ""]) == (
        f"--only names no notebook: give prefixes of {ALL}."
    )
    assert refusal("test", project_dir=tmp_path / "nothing") == (
        f"No project found at or above {tmp_path / 'nothing'}: run this from inside the project "
        "(a folder with pyproject.toml and notebooks/), or pass an absolute run folder."
    )
    for path in (project / "notebooks").iterdir():
        path.rename(project / path.name)
    assert refusal("test", project_dir=project) == (
        f"No notebooks match {project / 'notebooks' / '[0-9][0-9]_*.ipynb'}."
    )


def test_the_plan_found_from_the_working_folder(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project / "notebooks")
    assert plan_run("test").project == project


def test_a_p_value_goes_to_the_notebooks_whose_type_takes_it_and_a_note_says_so(
    project: Path,
) -> None:
    """-p label=4 reaches 03_fourth (int), not 00_first (str) or 05_sixth (bool); -p size=5
    both that declare it; an int for `float | None` arrives as a float. The plan keeps what it
    was given."""
    given = {"size": 5, "ratio": 2, "label": 4}
    run = plan_run("test", given, project_dir=project)
    assert run.project == project and run.profile == "test"
    assert run.description == "tiny test profile" and run.overrides == given
    assert run.notes == [
        "-p size=5 goes to 00_first, 01_second; -p <notebook>.size=… sets one of them.",
        "-p label=4 goes to 03_fourth; 00_first, 05_sixth take bool or str and keep their own "
        "label.",
    ]
    assert run.parameters == {
        "00_first": {"size": 5, "label": "from-profile", "rate": 0.25},
        "01_second": {"size": 5},
        "02_third": {},
        "03_fourth": {"ratio": 2.0, "label": 4},
        "04_fifth": {},
        "05_sixth": {},
    }
    assert type(run.parameters["03_fourth"]["ratio"]) is float
    assert run.sources == {
        "00_first": {
            "size": "-p",
            "rate": "profile test (00_first)",
            "label": "profile test (00_first)",
        },
        "01_second": {"size": "-p", "fail": "default"},
        "02_third": {"note": "default"},
        "03_fourth": {"label": "-p", "ratio": "-p", "note": "default"},
        "04_fifth": {},
        "05_sixth": {"label": "default", "note": "default"},
    }
    assert list(run.declared) == list(run.notebooks) == ALL.split(", ")
    assert set(run.declared["03_fourth"]) == {"run_dir", "label", "ratio", "note"}
    text = plan_run(
        "test", {"label": "l", "note": 3}, project_dir=project, only=["00", "02", "03", "05"]
    )
    assert text.notes == [
        "-p label='l' goes to 00_first; 03_fourth, 05_sixth take bool or int and keep their own "
        "label.",
        "-p note=3 goes to 02_third, 03_fourth; 05_sixth take str and keep their own note.",
    ]
    assert text.parameters == {
        "00_first": {"size": 3, "label": "l", "rate": 0.25},
        "02_third": {"note": 3},
        "03_fourth": {"note": 3},
        "05_sixth": {},
    }
    assert plan_run("test", {"fail": True}, project_dir=project).notes == []


def test_run_dir_and_a_value_for_a_notebook_without_parameters_are_refused_saying_why(
    project: Path,
) -> None:
    assert refusal("test", {"run_dir": "elsewhere"}, project_dir=project) == (
        "run_dir from -p is refused: the runner gives every run its own folder; "
        "use --run-dir DIR to choose it."
    )
    assert refusal("test", {"size": 1}, project_dir=project, only=["04"]) == (
        "Unknown parameter 'size' from -p; the selected notebooks declare no parameters."
    )


def test_a_path_reaches_papermill_with_its_braces_doubled() -> None:
    """papermill calls str.format on paths: each brace arrives doubled, to stay one brace."""
    path = Path("/runs/a{b}c/x}y{")
    two = "{" * 2, "}" * 2  # (written so, as the template's Jinja reads doubled braces)
    assert plan.literal(path) == f"/runs/a{two[0]}b{two[1]}c/x{two[1]}y{two[0]}"
    assert plan.literal(path).format() == str(path)
