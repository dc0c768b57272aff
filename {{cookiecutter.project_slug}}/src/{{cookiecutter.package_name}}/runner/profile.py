"""Profiles (configs/<name>.yaml) and `-p key=value` items, read strictly: a typo is refused.

A key written twice in a profile, or `-p` given twice for one name, would silently keep one of
the values; both are refused in one sentence instead, before anything runs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

PROFILE_KEYS = ("description", "shared", "notebooks")


class RunnerInputError(ValueError):
    """A profile, parameter, selection or run folder was refused; no notebook was started."""


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """Read `key=value` items as YAML values (3 → int, 0.1 → float, true → bool, text → str)."""
    overrides: dict[str, Any] = {}
    given: dict[str, str] = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RunnerInputError(
                f"Parameter {item!r} is not of the form key=value or notebook.key=value, e.g. "
                "epochs=3 or 03_train.epochs=3."
            )
        if key in given:
            raise RunnerInputError(
                f"Parameter {key!r} is given twice with -p ({given[key]!r} and {item!r}): "
                "give each parameter once."
            )
        try:
            overrides[key] = yaml.load(text, Loader=Loader)
        except DuplicateKeyError as error:
            raise RunnerInputError(
                f"The value of {item!r} repeats the key {error.key!r}: give each key once."
            ) from None
        except yaml.YAMLError as error:
            raise RunnerInputError(
                f"The value of {item!r} is not a YAML value ({one_line(error)}); quote text."
            ) from None
        given[key] = item
    return overrides


def load_profile(project: Path, name: str) -> dict[str, Any]:
    """configs/<name>.yaml as {description, shared, notebooks}; a malformed file is refused."""
    available = sorted(path.stem for path in (project / "configs").glob("*.yaml"))
    if name not in available:
        raise RunnerInputError(
            f"Unknown profile {name!r}{near(name, available)}: configs/ holds "
            f"{', '.join(available) or 'no profiles'}."
        )
    path = project / "configs" / f"{name}.yaml"
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
    except DuplicateKeyError as error:
        raise RunnerInputError(
            f"{path} repeats the key {error.key!r} on line {error.line} (first on line "
            f"{error.first_line}): each key may appear once, so remove one of them."
        ) from None
    except yaml.YAMLError as error:
        raise RunnerInputError(f"{path} is not valid YAML: {one_line(error)}.") from None
    if not isinstance(data, dict) or set(data) - set(PROFILE_KEYS):
        extra = sorted(map(str, set(data) - set(PROFILE_KEYS))) if isinstance(data, dict) else []
        raise RunnerInputError(
            f"{path} must be a mapping with the keys {', '.join(PROFILE_KEYS)}"
            + (f", not {', '.join(map(repr, extra))}." if extra else ".")
        )
    shared = data.get("shared") or {}
    notebooks = data.get("notebooks") or {}
    sections = [shared, *notebooks.values()] if isinstance(notebooks, dict) else [notebooks]
    if not isinstance(shared, dict) or not all(isinstance(s, dict | None) for s in sections):
        raise RunnerInputError(
            f"{path}: shared must map names to values, and notebooks must map each notebook "
            "name to such a mapping."
        )
    return {
        "description": str(data.get("description") or ""),
        "shared": {str(key): value for key, value in shared.items()},
        "notebooks": {
            str(name): {str(key): value for key, value in (values or {}).items()}
            for name, values in notebooks.items()
        },
    }


class DuplicateKeyError(yaml.YAMLError):
    """A mapping names one key twice; YAML loaders would otherwise keep the last value."""

    def __init__(self, key: Any, line: int, first_line: int) -> None:
        super().__init__(f"the key {key!r} appears on lines {first_line} and {line}")
        self.key, self.line, self.first_line = key, line, first_line


class Loader(yaml.SafeLoader):
    """SafeLoader that refuses a repeated key and reads 1e-3 as a float (as YAML 1.2 does)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` then a key is an override, not a repeat
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    raise DuplicateKeyError(key, line, first[key])
                first[key] = line
            except TypeError:  # an unhashable key: SafeLoader says so below
                break
        return super().construct_mapping(node, deep=deep)


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def near(word: str, choices: Iterable[str]) -> str:
    """ " (did you mean 'epochs'?)" for a near miss among choices (difflib), else ""."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def one_line(error: object, most: int | None = None) -> str:
    """An error's text on one line (YAML and nbformat errors span several), cut with "…" at
    `most` characters if given: after its last whole word when one ends in the last third."""
    text = " ".join(str(error).split())
    if most is None or len(text) <= most:
        return text
    cut = text[: most - 1]
    if text[most - 1] != " " and cut.rfind(" ") >= most * 2 // 3:  # not at a word's end
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"
