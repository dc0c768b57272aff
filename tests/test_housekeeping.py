"""The template's own house-keeping: licence, versioned changelog, what the READMEs promise, and
secrets kept out of the bake's Docker build context."""

from __future__ import annotations

import re

import pytest

SECRETS = ("**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/secrets")


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


def test_dockerignore_keeps_secrets_out_of_the_build_context(bake):
    lines = set(bake({}).text(".dockerignore").splitlines())
    missing = [pattern for pattern in SECRETS if pattern not in lines]
    assert not missing, f".dockerignore lets these into the image's build context: {missing}"
