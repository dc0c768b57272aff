"""Template updates reach a baked project through cruft, as the README tells users to do it.

The template's files (tracked and untracked, as git lists them) are committed to a fresh repository
as commit A; a project is baked from it with `cruft create` (Docker declined), committed, and edited
as a user would (a new module, a changed notebook). The template then gets commit B (the Makefile,
a notebook, and the Dockerfile the user declined), and `cruft update -y` must apply B cleanly, keep
the user's edits, leave docker/ absent, and `cruft check` must pass. No install, no TensorFlow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SLUG = "{{cookiecutter.project_slug}}"
MAKEFILE_LINE = "# Template change B: a line the update must bring."
DOCKERFILE_LINE = "# Template change B in a part this project declined."
NOTEBOOK_B = "Template change B in notebook 03."
NOTEBOOK_USER = "The user's own note in notebook 01."
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Template Test",
    "GIT_AUTHOR_EMAIL": "test@example.org",
    "GIT_COMMITTER_NAME": "Template Test",
    "GIT_COMMITTER_EMAIL": "test@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def tool(name: str) -> str:
    """A console script installed beside this interpreter (the template's venv), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: run `make setup` (requirements.txt lists it).")
    return found


def run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    return result


def git(cwd: Path, *args: str) -> str:
    return run("git", "-c", "init.defaultBranch=main", *args, cwd=cwd).stdout.strip()


def copy_template(template: Path, clone: Path) -> None:
    """The template's working tree (what git tracks or would track) as commit A of a new repo."""
    listed = git(template, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    clone.mkdir()
    for relative in sorted(set(filter(None, listed.split("\0")))):
        source = template / relative
        if source.is_file():  # a file deleted but not yet committed is listed, yet absent
            (clone / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / relative)
    git(clone, "init", "-q")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "A")


def append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")


def edit_notebook(path: Path, text: str, cell: int = 0) -> None:
    """Append a line to one markdown cell, keeping the notebook's JSON layout (indent 1)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    markdown = [c for c in notebook["cells"] if c["cell_type"] == "markdown"][cell]
    source = markdown["source"]
    lines = source if isinstance(source, list) else source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    markdown["source"] = [*lines, text]
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_cruft_update_brings_template_changes_and_keeps_user_edits(
    template: Path, tmp_path: Path, cookiecutter_config: Path
) -> None:
    cruft = tool("cruft")
    clone, out = tmp_path / "template", tmp_path / "out"
    copy_template(template, clone)
    commit_a = git(clone, "rev-parse", "HEAD")

    run(
        cruft, "create", str(clone), "--no-input", "--output-dir", str(out),
        "--config-file", str(cookiecutter_config),
        "--extra-context", json.dumps({"include_docker": False}),
        cwd=tmp_path,
    )  # fmt: skip
    (project,) = out.iterdir()
    package = json.loads((project / ".cruft.json").read_text())["context"]["cookiecutter"][
        "package_name"
    ]
    assert json.loads((project / ".cruft.json").read_text())["commit"] == commit_a
    assert not (project / "docker").exists()
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "baked")

    # The user's work: a new module and a changed notebook, committed.
    module = project / "src" / package / "extra_features.py"
    module.write_text('"""The user\'s own module."""\n\nANSWER = 42\n', encoding="utf-8")
    edit_notebook(project / "notebooks" / "01_data.ipynb", NOTEBOOK_USER)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "user edits")

    # Template change B: the Makefile, another notebook, and the declined Dockerfile.
    append(clone / SLUG / "Makefile", MAKEFILE_LINE)
    edit_notebook(clone / SLUG / "notebooks" / "03_train.ipynb", NOTEBOOK_B)
    append(clone / SLUG / "docker" / "Dockerfile", DOCKERFILE_LINE)
    git(clone, "commit", "-q", "-am", "B")
    commit_b = git(clone, "rev-parse", "HEAD")

    stale = subprocess.run(
        [cruft, "check"], cwd=project, capture_output=True, text=True, check=False, timeout=300
    )
    assert stale.returncode != 0, "cruft check passed before the update: it cannot see B"

    update = run(cruft, "update", "--skip-apply-ask", cwd=project)
    assert "rej" not in update.stdout + update.stderr, update.stdout + update.stderr
    assert not list(project.rglob("*.rej")), "the update left rejected hunks"

    assert (project / "Makefile").read_text(encoding="utf-8").rstrip().endswith(MAKEFILE_LINE)
    assert NOTEBOOK_B in (project / "notebooks" / "03_train.ipynb").read_text(encoding="utf-8")
    assert NOTEBOOK_USER in (project / "notebooks" / "01_data.ipynb").read_text(encoding="utf-8")
    assert module.read_text(encoding="utf-8").endswith("ANSWER = 42\n")
    assert not (project / "docker").exists(), "the update brought back the declined docker/"
    for notebook in ("01_data.ipynb", "03_train.ipynb"):
        json.loads((project / "notebooks" / notebook).read_text(encoding="utf-8"))
    assert json.loads((project / ".cruft.json").read_text())["commit"] == commit_b
    run(cruft, "check", cwd=project)
    # The user's changes to template files, against the template at B (new modules are not shown).
    diff = run(cruft, "diff", cwd=project).stdout
    assert NOTEBOOK_USER in diff, diff[-3000:]
    assert MAKEFILE_LINE not in diff, "B's Makefile line differs from the template after update"
