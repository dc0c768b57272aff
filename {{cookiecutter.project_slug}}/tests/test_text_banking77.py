"""The vendored BANKING77: the published files, whole, and shipped inside the package."""

from __future__ import annotations

import csv
import fnmatch
import gzip
import hashlib
import io
import json
import tomllib
from importlib import resources
from pathlib import Path

import pytest

PACKAGE = "{{ cookiecutter.package_name }}"
FOLDER = resources.files(PACKAGE) / "tasks" / "text" / "banking77"
PUBLISHED = {  # sha256 of the uncompressed files, as ../shared/data/README.md gives them
    "train.csv": "b06e26ac675513959a63135f11b94ea7786ed02da65db93a5650d8838cbc664b",
    "test.csv": "d12d6e3bc4c3103966ae786dc435913c0c563dfa328f5a3646d0e62cfeeb474d",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_vendored_split_is_the_published_file(name):
    """Decompressed, each split is byte for byte the file the authors published."""
    raw = gzip.decompress((FOLDER / f"{name}.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == PUBLISHED[name]


def test_splits_use_exactly_the_77_listed_intents():
    """Every intent of categories.json has examples in both splits, and no other label occurs."""
    intents = json.loads((FOLDER / "categories.json").read_text(encoding="utf-8"))
    assert len(intents) == len(set(intents)) == 77
    for name, count in (("train.csv", 10003), ("test.csv", 3080)):
        text = gzip.decompress((FOLDER / f"{name}.gz").read_bytes()).decode("utf-8")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        assert len(rows) == count
        assert {row["category"] for row in rows} == set(intents)


def test_licence_and_citation_travel_with_the_data():
    """CC BY 4.0 asks for the licence and an attribution next to the data."""
    assert "Attribution 4.0 International" in (FOLDER / "LICENSE").read_text(encoding="utf-8")
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    assert "2003.04807" in readme and "Casanueva" in readme


def test_pyproject_ships_every_vendored_file_as_package_data():
    """A wheel (not only an editable install) holds the data: pyproject's pattern covers it."""
    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"][f"{PACKAGE}.tasks.text"]
    for entry in FOLDER.iterdir():
        relative = f"banking77/{entry.name}"
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative
