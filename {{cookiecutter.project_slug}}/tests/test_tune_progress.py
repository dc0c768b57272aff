"""What the search says while it gets ready, in every bake with tuning (tune/search.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import progress, tune  # noqa: E402
from {{ cookiecutter.package_name }}.tune import cluster  # noqa: E402

PACKAGE = "{{ cookiecutter.package_name }}"


class Reached(Exception):
    """The slow work was reached: the test stops there."""


def test_the_search_says_it_loads_keras_tuner_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42 §3.9: 02's search cell sat silent while keras-tuner loaded and the tuner built
    its first model; a line says so first (the load stands in: the test stops there)."""
    search_module = importlib.import_module(f"{PACKAGE}.tune.search")  # tune.search: the function
    seen: list[str] = []

    def load() -> None:
        seen.append(capsys.readouterr().out)
        raise Reached

    monkeypatch.setattr(search_module, "require_keras_tuner", load)
    for name in (cluster.ID_ENV, cluster.IP_ENV, cluster.PORT_ENV):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(Reached):
        tune.search(tmp_path, tune.Params(max_trials=2, epochs=1), verbose=True)
    assert f"{progress.MARK}Loading keras-tuner and building the search's first model" in seen[0]
