"""What a loaded source's labels say before anything is written: a single class is refused (a
classifier needs two).
"""

from __future__ import annotations

from .files import TextSourceError


def refuse_one_class(labels: list[str], where: str) -> None:
    """Every row with the same label: refused in one sentence naming it, before any split."""
    names = sorted(set(labels))
    if len(names) == 1:
        raise TextSourceError(
            f"{where}: every one of its {len(labels)} examples has the label {names[0]!r}, so "
            "there is a single class; a classifier needs at least 2 classes, so add examples of "
            "another class."
        )
