"""The supply chain of both workflows: the template's own and the bake's.

zizmor audits them offline (an action not pinned to a commit SHA is a high finding), the
GitHub workflow and Dependabot schemas validate them, every action is pinned to a full SHA with
its version beside it, and the weekly matrix covers exactly the pairs a user can bake.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TEMPLATE_WORKFLOWS = ("ci.yml", "pairs.yml")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def tool(name: str) -> str:
    """A console script installed beside this interpreter (the template's venv), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: run `make setup` (requirements.txt lists it).")
    return found


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def workflows(template, bake) -> list[Path]:
    """The template's workflows, and the bake's with and without Docker (its apt step differs)."""
    files = [template / ".github" / "workflows" / name for name in TEMPLATE_WORKFLOWS]
    for answers in ({}, {"include_docker": False}):
        files.append(bake(answers).root / ".github" / "workflows" / "ci.yml")
    return files


@pytest.fixture(scope="module")
def dependabot(template, bake) -> list[Path]:
    return [template / ".github" / "dependabot.yml", bake({}).root / ".github" / "dependabot.yml"]


def test_zizmor_finds_nothing_high(workflows, dependabot):
    result = run(tool("zizmor"), "--offline", "--min-severity", "high", *map(str, workflows))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout, result.stdout


def test_workflows_and_dependabot_match_their_schemas(workflows, dependabot):
    check = tool("check-jsonschema")
    result = run(check, "--builtin-schema", "vendor.github-workflows", *map(str, workflows))
    assert result.returncode == 0, result.stdout + result.stderr
    result = run(check, "--builtin-schema", "vendor.dependabot", *map(str, dependabot))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_action_is_pinned_to_a_sha_with_its_version(workflows):
    """`uses: owner/repo@<40 hex> # vX.Y.Z`, and one action is one SHA everywhere."""
    shas: dict[str, set[str]] = {}
    for path in workflows:
        for line in path.read_text(encoding="utf-8").splitlines():
            if "uses:" not in line:
                continue
            reference = line.split("uses:", 1)[1].strip()
            assert PINNED.match(reference), f"{path}: {reference}"
            action, _, pin = reference.partition("@")
            shas.setdefault(action, set()).add(pin)
    assert {"actions/checkout", "actions/setup-python", "actions/upload-artifact"} <= set(shas)
    assert all(len(pins) == 1 for pins in shas.values()), shas


def test_dependabot_watches_actions_and_pip(dependabot, bake):
    """Both watch the actions and pip; a bake with Docker also the images its compose files pin,
    and one without has no such entry."""
    template, baked = dependabot
    for path, extra in ((template, set()), (baked, {"docker-compose"})):
        updates = yaml.safe_load(path.read_text(encoding="utf-8"))["updates"]
        ecosystems = {update["package-ecosystem"] for update in updates}
        assert ecosystems == {"github-actions", "pip", *extra}
    without = bake({"include_docker": False}).root / ".github" / "dependabot.yml"
    updates = yaml.safe_load(without.read_text(encoding="utf-8"))["updates"]
    assert {update["package-ecosystem"] for update in updates} == {"github-actions", "pip"}


def test_the_matrix_is_every_offered_pair_the_hook_accepts(template, pre_gen):
    offered = json.loads((template / "cookiecutter.json").read_text(encoding="utf-8"))
    pairs = itertools.product(offered["python_version"], offered["tensorflow_version"])
    accepted = {
        (python, tf)
        for python, tf in pairs
        if not pre_gen.check_python({"python_version": python, "tensorflow_version": tf})
    }
    strategy = yaml.safe_load((template / ".github/workflows/pairs.yml").read_text())["jobs"]
    matrix = strategy["pair"]["strategy"]["matrix"]
    excluded = {(row["python"], row["tensorflow"]) for row in matrix["exclude"]}
    planned = set(itertools.product(matrix["python"], matrix["tensorflow"])) - excluded
    assert planned == accepted


def test_the_bakes_ci_installs_slurm_and_reports_the_smoke_headline(bake):
    for answers, prometheus in (({}, True), ({"include_docker": False}, False)):
        baked = bake(answers)
        jobs = yaml.safe_load(baked.text(".github/workflows/ci.yml"))["jobs"]
        installs = " ".join(step.get("run", "") for step in jobs["tests"]["steps"])
        assert "slurm-wlm munge" in installs, installs
        assert ("prometheus" in installs) is prometheus, installs
        smoke = {step.get("name", ""): step for step in jobs["smoke"]["steps"]}
        run_step = smoke["Notebook chain with the smoke profile"]["run"]
        assert "--run-dir artifacts/ci-smoke" in run_step
        headline = smoke["The run's headline in the job summary"]
        assert headline["if"] == "always()"
        command = f"-m {baked.package} report --run-dir artifacts/ci-smoke --headline"
        assert command in headline["run"], headline["run"]
        assert headline["run"].endswith('>> "$GITHUB_STEP_SUMMARY"')
        upload = smoke["Upload the run folder (executed notebooks, metrics, report)"]
        assert upload["with"]["path"] == "artifacts/ci-smoke/"
