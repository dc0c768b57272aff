"""Shared fixtures for the template's own tests: where the template is, its hooks, and bakes.

Every bake reads a private cookiecutter config, so a user's `~/.cookiecutterrc` (its
`default_context`) can't change the answers under test and no replay files land in their home.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest
from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]


@dataclass
class Baked:
    """One baked project: its folder, the answers it was baked with, and its files."""

    root: Path
    answers: dict
    files: set[str] = field(default_factory=set)

    @property
    def package(self) -> str:
        return self.answers["package_name"]

    def text(self, relative: str) -> str:
        return (self.root / relative).read_text(encoding="utf-8")

    def text_files(self) -> dict[str, str]:
        """Every file that decodes as UTF-8 text, by relative path."""
        texts = {}
        for relative in sorted(self.files):
            data = (self.root / relative).read_bytes()
            if b"\0" in data:
                continue
            try:
                texts[relative] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return texts


@pytest.fixture(scope="session")
def template() -> Path:
    """The template repository's root (holds cookiecutter.json)."""
    return TEMPLATE


@pytest.fixture(scope="session")
def cookiecutter_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cookiecutter config with no default_context and replays kept in a temp folder."""
    home = tmp_path_factory.mktemp("cookiecutter-home")
    config = home / "config.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(home / 'cookiecutters'))}\n"
        f"replay_dir: {json.dumps(str(home / 'replay'))}\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="session")
def pre_gen() -> ModuleType:
    """hooks/pre_gen_project.py imported as a module (it is valid Python before rendering)."""
    return load_hook("pre_gen_project")


@pytest.fixture(scope="session")
def post_gen() -> ModuleType:
    """hooks/post_gen_project.py imported as a module."""
    return load_hook("post_gen_project")


@pytest.fixture(scope="session")
def bake(
    tmp_path_factory: pytest.TempPathFactory, cookiecutter_config: Path
) -> Callable[[dict], Baked]:
    """Bake with cookiecutter's Python API; each distinct set of answers is baked once a session."""
    cache: dict[str, Baked] = {}

    def _bake(overrides: dict) -> Baked:
        key = json.dumps(overrides, sort_keys=True)
        if key not in cache:
            out = tmp_path_factory.mktemp("bake")
            root = Path(
                cookiecutter(
                    str(TEMPLATE),
                    no_input=True,
                    extra_context=overrides,
                    output_dir=str(out),
                    config_file=str(cookiecutter_config),
                )
            )
            files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
            cache[key] = Baked(
                root=root, answers=replayed_answers(cookiecutter_config), files=files
            )
        return cache[key]

    return _bake


@pytest.fixture(scope="session")
def cookiecutter_cli(cookiecutter_config: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Run `python -m cookiecutter <template> --no-input -o OUT key=value…` as a user would."""

    def _run(out: Path, *pairs: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "cookiecutter", str(TEMPLATE), "--no-input"]
        command += ["--config-file", str(cookiecutter_config), "-o", str(out), *pairs]
        return subprocess.run(
            command, capture_output=True, text=True, cwd=cwd or out, timeout=120, check=False
        )

    return _run


def replayed_answers(config: Path) -> dict:
    """The answers of the latest bake, as cookiecutter rendered them (from its replay file)."""
    replay = config.parent / "replay" / f"{TEMPLATE.name}.json"
    return json.loads(replay.read_text(encoding="utf-8"))["cookiecutter"]


def load_hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TEMPLATE / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"hooks/{name}.py is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
