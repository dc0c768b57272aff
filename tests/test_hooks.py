"""The hooks as plain Python: which answers are refused, with what sentence, and what is removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOOD = {
    "project_name": "Digits Classifier",
    "project_slug": "digits-classifier",
    "package_name": "digits_classifier",
    "description": 'A "quoted" description with a back\\slash.',
    "author_name": "Zoë O'Neil",
    "author_email": "zoe@example.org",
    "python_version": "3.11",
    "tensorflow_version": "2.21",
    "include_tuning": True,
    "include_tensorrt": True,
    "include_serving": True,
    "include_docker": True,
}

SUPPORTED_PAIRS = [
    ("3.11", "2.18"),
    ("3.12", "2.18"),
    ("3.11", "2.19"),
    ("3.12", "2.19"),
    ("3.11", "2.20"),
    ("3.12", "2.20"),
    ("3.13", "2.20"),
    ("3.11", "2.21"),
    ("3.12", "2.21"),
    ("3.13", "2.21"),
]

# (key, bad value, how the sentence names the value, what the sentence says is allowed)
BAD_ANSWERS = [
    pytest.param("project_slug", "bad slug", "'bad slug'", "lowercase ASCII", id="slug-space"),
    pytest.param("project_slug", "Digits", "'Digits'", "lowercase ASCII", id="slug-uppercase"),
    pytest.param("project_slug", "-digits", "'-digits'", "lowercase ASCII", id="slug-dash"),
    pytest.param("project_slug", "", "''", "lowercase ASCII", id="slug-empty"),
    pytest.param("package_name", "3d", "'3d'", "not starting with a digit", id="package-3d"),
    pytest.param("package_name", "my-pkg", "'my-pkg'", "underscores", id="package-hyphen"),
    pytest.param("package_name", "café", "'café'", "ASCII letters", id="package-accent"),
    pytest.param("package_name", "class", "'class'", "Python keyword", id="package-keyword"),
    pytest.param("package_name", "match", "'match'", "Python keyword", id="package-soft-keyword"),
    pytest.param("package_name", "tensorflow", "'tensorflow'", "shadow", id="shadow-tensorflow"),
    pytest.param("package_name", "keras", "'keras'", "shadow", id="shadow-keras"),
    pytest.param("package_name", "numpy", "'numpy'", "shadow", id="shadow-numpy"),
    pytest.param("package_name", "papermill", "'papermill'", "shadow", id="shadow-papermill"),
    pytest.param("package_name", "json", "'json'", "shadow", id="shadow-stdlib-json"),
    pytest.param(
        "tensorflow_version", "2.17", "'2.17'", "one of 2.18, 2.19, 2.20, 2.21", id="tf-2.17"
    ),
    pytest.param("project_name", "Two\nlines", r"'Two\nlines'", "single line", id="name-newline"),
    pytest.param("description", "One\r\ntwo", r"'One\r\ntwo'", "single line", id="desc-crlf"),
    pytest.param("author_email", "not-an-email", "'not-an-email'", "name@", id="email-no-at"),
    pytest.param("author_email", "a b@example.org", "'a b@example.org'", "name@", id="email-space"),
    pytest.param("include_tuning", "no", "'no'", "yes/no", id="flag-as-text-no"),
    pytest.param("include_docker", "false", "'false'", "yes/no", id="flag-as-text-false"),
]


def test_good_answers_have_no_problems(pre_gen):
    """Ordinary answers, quotes and accents included, pass every check."""
    assert pre_gen.problems(GOOD) == []


def test_empty_email_is_allowed(pre_gen):
    """The e-mail may be left empty: the pyproject then names the author only."""
    assert pre_gen.problems({**GOOD, "author_email": ""}) == []


@pytest.mark.parametrize(("python", "tf"), SUPPORTED_PAIRS)
def test_every_supported_python_tensorflow_pair_passes(pre_gen, python, tf):
    """Each pair TensorFlow ships wheels for is accepted."""
    assert pre_gen.problems({**GOOD, "python_version": python, "tensorflow_version": tf}) == []


@pytest.mark.parametrize("tf", ["2.18", "2.19"])
def test_python_313_with_old_tensorflow_is_refused(pre_gen, tf):
    """TensorFlow 2.18 and 2.19 have no Python 3.13 wheels: one sentence says so."""
    found = pre_gen.problems({**GOOD, "python_version": "3.13", "tensorflow_version": tf})
    assert found == [
        f"python_version 3.13 is not supported by TensorFlow {tf} (it supports Python 3.9 to "
        "3.12): choose another Python or TensorFlow version."
    ]


@pytest.mark.parametrize(("key", "value", "named", "allowed"), BAD_ANSWERS)
def test_each_bad_answer_gets_one_sentence_naming_it(pre_gen, key, value, named, allowed):
    """One bad answer gives exactly one sentence naming the value and what is allowed."""
    found = pre_gen.problems({**GOOD, key: value})
    assert len(found) == 1, found
    sentence = found[0]
    assert sentence.startswith(f"{key} {named} "), sentence
    assert allowed in sentence, sentence
    assert "\n" not in sentence and sentence.endswith("."), sentence


def test_empty_project_name_is_refused(pre_gen):
    """A blank project name is refused with an example of a good one."""
    found = pre_gen.problems({**GOOD, "project_name": "   "})
    assert found == ["project_name is empty: give the project a name, e.g. 'Digits Classifier'."]


def test_every_problem_is_reported_at_once(pre_gen):
    """Several bad answers are all reported in one run, not one per attempt."""
    bad = {**GOOD, "package_name": "class", "author_email": "nope", "python_version": "3.13"}
    found = pre_gen.problems({**bad, "tensorflow_version": "2.18"})
    assert [sentence.split(" ")[0] for sentence in found] == [
        "package_name",
        "python_version",
        "author_email",
    ]


def test_main_prints_sentences_to_stderr_and_fails(pre_gen, capsys):
    """The hook exits 1 with each sentence on stderr, so cookiecutter stops before writing."""
    assert pre_gen.main({**GOOD, "package_name": "numpy"}) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        "ERROR: package_name 'numpy' would shadow the numpy module the project imports: "
        "choose another, e.g. 'numpy_project'.\n"
    )


def test_main_is_silent_and_succeeds_on_good_answers(pre_gen, capsys):
    """Good answers exit 0 and print nothing."""
    assert pre_gen.main(GOOD) == 0
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- post-gen hook

TREE = [
    ".dockerignore",
    ".github/workflows/ci.yml",
    ".gitignore",
    "README.md",
    "docker/Dockerfile",
    "docker/compose.monitoring.yml",
    "docker/compose.serving.yml",
    "docker/compose.yml",
    "docker/monitoring/alerts.yml",
    "notebooks/01_data.ipynb",
    "notebooks/02_tune.ipynb",
    "src/pkg/__init__.py",
    "src/pkg/optimize/__init__.py",
    "src/pkg/optimize/onnx_backend.py",
    "src/pkg/optimize/tensorrt_engine.py",
    "src/pkg/optimize/tf_trt.py",
    "src/pkg/serve/__init__.py",
    "src/pkg/serve/versions.py",
    "src/pkg/tune/__init__.py",
    "src/pkg/tune/search.py",
    "tests/test_monitoring.py",
    "tests/test_optimize.py",
    "tests/test_prometheus_scrape.py",
    "tests/test_optimize_tensorrt.py",
    "tests/test_serving.py",
    "tests/test_tune.py",
]


def make_tree(root: Path) -> Path:
    for relative in TREE:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x\n", encoding="utf-8")
    return root


def tree(root: Path) -> set[str]:
    """Files and folders under root, as relative paths."""
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


def test_remove_docker_removes_exactly_the_docker_files(post_gen, tmp_path):
    """Declining Docker removes docker/, .dockerignore and the monitoring tests, nothing else."""
    before = tree(make_tree(tmp_path))
    post_gen.remove_docker(tmp_path)
    assert before - tree(tmp_path) == {
        ".dockerignore",
        "docker",
        "docker/Dockerfile",
        "docker/compose.monitoring.yml",
        "docker/compose.serving.yml",
        "docker/compose.yml",
        "docker/monitoring",
        "docker/monitoring/alerts.yml",
        "tests/test_monitoring.py",
        "tests/test_prometheus_scrape.py",
    }


def test_remove_tuning_removes_notebook_module_and_tests(post_gen, tmp_path):
    """Declining tuning removes notebook 02, the tune module and its tests, nothing else."""
    before = tree(make_tree(tmp_path))
    post_gen.remove_tuning(tmp_path, "pkg")
    assert before - tree(tmp_path) == {
        "notebooks/02_tune.ipynb",
        "src/pkg/tune",
        "src/pkg/tune/__init__.py",
        "src/pkg/tune/search.py",
        "tests/test_tune.py",
    }


def test_remove_tensorrt_removes_its_backends_and_tests(post_gen, tmp_path):
    """Declining TensorRT removes the two TensorRT backends and their tests; ONNX stays."""
    before = tree(make_tree(tmp_path))
    post_gen.remove_tensorrt(tmp_path, "pkg")
    assert before - tree(tmp_path) == {
        "src/pkg/optimize/tensorrt_engine.py",
        "src/pkg/optimize/tf_trt.py",
        "tests/test_optimize_tensorrt.py",
    }


def test_remove_serving_keeps_the_gpu_image(post_gen, tmp_path):
    """Declining TF Serving removes only the serve module, its tests and its compose file."""
    before = tree(make_tree(tmp_path))
    post_gen.remove_serving(tmp_path, "pkg")
    assert before - tree(tmp_path) == {
        "docker/compose.serving.yml",
        "src/pkg/serve",
        "src/pkg/serve/__init__.py",
        "src/pkg/serve/versions.py",
        "tests/test_serving.py",
    }


def test_remove_benchmarks_removes_gpu_bench_make_bench_and_their_cells(post_gen, tmp_path):
    """Declining the benchmarks removes gpubench/, the training benchmark, its part and tests,
    and notebook 00's gpu-bench cells; the data step's pipeline benchmark stays."""
    kept = ["src/pkg/data/benchmark.py", "src/pkg/train/loop.py", "tests/test_optimize.py"]
    gone = [path.format(pkg="pkg") for path in post_gen.BENCHMARKS]
    for relative in kept + gone:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x\n", encoding="utf-8")
    notebook = tmp_path / "notebooks/00_environment.ipynb"
    notebook.parent.mkdir()
    cells = [{"id": name, "cell_type": "markdown", "source": []} for name in ("gpus", "gpu-bench")]
    cells.append({"id": "gpu-bench-table", "cell_type": "code", "source": []})
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    post_gen.remove_benchmarks(tmp_path, "pkg")
    files = {p for p in tree(tmp_path) if (tmp_path / p).is_file()}
    assert files == {*kept, "notebooks/00_environment.ipynb"}
    assert not (tmp_path / "src/pkg/gpubench").exists()
    left = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    assert [cell["id"] for cell in left] == ["gpus"]


def test_remove_github_ci_removes_exactly_the_workflows(post_gen, tmp_path):
    """Declining GitHub Actions removes .github/ and nothing else."""
    before = tree(make_tree(tmp_path))
    post_gen.remove_github_ci(tmp_path)
    assert before - tree(tmp_path) == {".github", ".github/workflows", ".github/workflows/ci.yml"}


def test_post_gen_keeps_everything_when_all_is_included(post_gen, tmp_path, capsys):
    """With Docker and CI chosen, nothing is removed and the next steps name slug and package."""
    before = tree(make_tree(tmp_path))
    answers = {
        "project_slug": "digits-classifier",
        "package_name": "pkg",
        "include_docker": True,
        "include_tuning": True,
        "include_tensorrt": True,
        "include_serving": True,
        "ci": "github",
    }
    assert post_gen.main(answers, tmp_path) == 0
    assert tree(tmp_path) == before
    printed = capsys.readouterr().out
    assert "cd digits-classifier" in printed
    assert "pkg doctor" in printed


def test_post_gen_main_removes_every_declined_part(post_gen, tmp_path):
    """Declining Docker, CI, tuning, TensorRT and serving together leaves only the rest."""
    make_tree(tmp_path)
    answers = {
        "project_slug": "digits-classifier",
        "package_name": "pkg",
        "include_docker": False,
        "include_tuning": False,
        "include_tensorrt": False,
        "include_serving": False,
        "ci": "none",
    }
    assert post_gen.main(answers, tmp_path) == 0
    files = {p for p in tree(tmp_path) if (tmp_path / p).is_file()}
    assert files == {
        ".gitignore",
        "README.md",
        "notebooks/01_data.ipynb",
        "src/pkg/__init__.py",
        "src/pkg/optimize/__init__.py",
        "src/pkg/optimize/onnx_backend.py",
        "tests/test_optimize.py",
    }


# Folders that belong wholly to one optional part: the hook's lists must name each of their files.
OWNED_FOLDERS = {
    "docker": "DOCKER",
    ".github": "GITHUB_CI",
    "src/{{cookiecutter.package_name}}/tune": "TUNING",
    "src/{{cookiecutter.package_name}}/serve": "SERVING",
    "src/{{cookiecutter.package_name}}/gpubench": "BENCHMARKS",
}


@pytest.mark.parametrize(("folder", "part"), OWNED_FOLDERS.items(), ids=OWNED_FOLDERS.values())
def test_the_hook_names_every_file_of_a_declined_folder(post_gen, template, folder, part):
    """Each file the template has in a part's folder is on that part's list, so declining the part
    removes it (the hook removes listed files, never whole folders)."""
    project = template / "{{cookiecutter.project_slug}}"
    written = {
        p.relative_to(project).as_posix().replace("{{cookiecutter.package_name}}", "{pkg}")
        for p in (project / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert written and written <= set(getattr(post_gen, part)), written - set(
        getattr(post_gen, part)
    )


def test_a_rebake_over_a_project_keeps_the_users_own_files(post_gen, tmp_path):
    """`cookiecutter -f` over an existing project with every part declined removes only what the
    template wrote: a user's own Dockerfile, workflow, tuner and serve notes stay, with their
    folders, while the template's files there and their cached bytecode go."""
    make_tree(tmp_path)
    own = [
        "docker/MyOwn.Dockerfile",
        ".github/workflows/mine.yml",
        "src/pkg/tune/my_search.py",
        "src/pkg/serve/notes.md",
        "src/pkg/optimize/my_engine.py",
    ]
    for relative in own:
        (tmp_path / relative).write_text("mine\n", encoding="utf-8")
    (tmp_path / "src/pkg/tune/__pycache__").mkdir()
    (tmp_path / "src/pkg/tune/__pycache__/search.cpython-311.pyc").write_bytes(b"")
    answers = {
        "project_slug": "digits-classifier",
        "package_name": "pkg",
        "include_docker": False,
        "include_tuning": False,
        "include_tensorrt": False,
        "include_serving": False,
        "ci": "none",
    }
    assert post_gen.main(answers, tmp_path) == 0
    for relative in own:
        assert (tmp_path / relative).read_text(encoding="utf-8") == "mine\n", relative
    assert sorted(p.name for p in (tmp_path / "src/pkg/tune").iterdir()) == ["my_search.py"]
    assert sorted(p.name for p in (tmp_path / "docker").iterdir()) == ["MyOwn.Dockerfile"]
