"""The data step resolves its run folder once, at its door (the image data step's half of
tests/test_shared_steps.py's check of every other step, on the fake task)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_once, resolutions

from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.image import data_step


@pytest.mark.slow  # the whole image data step with its benchmark, about 25 s: make test-slow
def test_data_resolves_its_run_folder_once(tmp_path: Path) -> None:
    params = data_step.Params(shards=1, benchmark_seconds=1)
    counted = resolutions(lambda: entry.run(tmp_path, params, verbose=False))
    assert_once("data", counted)
