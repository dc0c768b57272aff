"""Column names and crosses as the parameters give them: light (no pandas), so the data step's
check can use them before anything heavy is imported."""

from __future__ import annotations

import re

from ...data.base import DataError


class SchemaError(DataError):
    """A declared column or cross the data does not allow: one sentence naming it."""


def sanitize(name: str) -> str:
    """A column name as an identifier (the export's input name): lowercase, each run of other
    characters one `_`; a name that would start with a digit or be empty gets a `c_` prefix."""
    text = re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")
    return f"c_{text}" if not text or text[0].isdigit() else text


def parse_crosses(text: str) -> list[tuple[str, str]] | str:
    """ "auto", "none", or "a*b,c*d" as sanitized pairs; a malformed one raises SchemaError."""
    text = text.strip()
    if text in ("auto", "none"):
        return text
    pairs = []
    for part in text.split(","):
        names = [sanitize(name) for name in part.split("*") if name.strip()]
        if len(names) != 2 or part.count("*") != 1 or names[0] == names[1]:
            raise SchemaError(
                f"crosses={text!r} is not allowed: use 'auto', 'none' or pairs of two different "
                "categorical columns such as 'education*occupation,sex*race'."
            )
        pairs.append((names[0], names[1]))
    return pairs
