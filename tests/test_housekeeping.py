"""The template's own house-keeping: licence, versioned changelog, what the READMEs promise, and
secrets kept out of the bake's Docker build context."""

from __future__ import annotations

import re
import subprocess

import pytest


def test_license_and_a_versioned_changelog(template):
    assert "Permission is hereby granted" in (template / "LICENSE").read_text(encoding="utf-8")
    changelog = (template / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases, "CHANGELOG.md names no released version (## [x.y.z] - YYYY-MM-DD)"
    assert f"[{releases[0]}]: " in changelog, "the newest release has no link"


def test_readme_recommends_cruft_and_warns_about_answer_files(template):
    readme = (template / "README.md").read_text(encoding="utf-8")
    for phrase in ("cruft create", "cruft update", "cruft diff", "cruft check", "conflict"):
        assert phrase in readme, phrase
    assert "Never bake from an answer file you did not write or check" in readme


@pytest.mark.parametrize("ci", ["github", "none"])
def test_the_bakes_readme_explains_updates(bake, ci):
    readme = bake({"ci": ci}).text("README.md")
    section = readme.split("## Updating from the template", 1)[1].split("\n## ", 1)[0]
    assert "cruft update" in section and "cruft diff" in section and ".rej" in section
    assert ("dependabot" in section) is (ci == "github")


# Files a user keeps beside a project that must never reach the image's build context (`COPY . .`)
# nor a commit; each is tried at the project's root and in a subfolder.
SECRET_FILES = (
    ".env",
    ".env.local",
    ".envrc",
    ".aws/credentials",
    ".kaggle/kaggle.json",
    "kaggle.json",
    ".ssh/id_ed25519",
    "id_rsa",
    "id_rsa.pub",
    "cert.p12",
    "tls.pem",
    "server.key",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "service-account.json",
    "secrets.toml",
    "secrets/token.txt",
)


@pytest.mark.parametrize("ignore_file", [".dockerignore", ".gitignore"])
def test_secret_files_are_kept_out_of_the_image_and_of_git(bake, tmp_path, ignore_file):
    """Each secret file, at the root or in a subfolder, is ignored by the bake's .dockerignore and
    .gitignore; the project's own files are not. git check-ignore does the matching: for the
    `**/`-prefixed patterns .dockerignore uses, its rules and Docker's agree."""
    text = bake({}).text(ignore_file)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(text, encoding="utf-8")
    secrets = [*SECRET_FILES, *(f"notebooks/{name}" for name in SECRET_FILES)]
    kept = ["pyproject.toml", "src/pkg/keys.py", "configs/smoke.yaml", "notebooks/01_data.ipynb"]
    for relative in secrets + kept:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x\n", encoding="utf-8")
    done = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(secrets + kept),
        capture_output=True,
        text=True,
        check=False,
    )
    ignored = set(done.stdout.split())
    assert [name for name in secrets if name not in ignored] == [], f"{ignore_file} lets these in"
    assert [name for name in kept if name in ignored] == [], f"{ignore_file} leaves these out"
