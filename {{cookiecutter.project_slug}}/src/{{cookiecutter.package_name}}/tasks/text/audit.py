"""What a loaded source's labels say before anything is written: a single class is refused (a
classifier needs two), labels that differ only in case or surrounding spaces are named in a note
(kept apart: they may be meant).
"""

from __future__ import annotations

from collections import defaultdict

from .files import TextSourceError

SHOWN = 3  # groups of look-alike labels named in a note; the rest are counted


def refuse_one_class(labels: list[str], where: str) -> None:
    """Every row with the same label: refused in one sentence naming it, before any split."""
    names = sorted(set(labels))
    if len(names) == 1:
        raise TextSourceError(
            f"{where}: every one of its {len(labels)} examples has the label {names[0]!r}, so "
            "there is a single class; a classifier needs at least 2 classes, so add examples of "
            "another class."
        )


def look_alike_note(classes: list[str]) -> list[str]:
    """A note naming the groups of labels equal once lower-cased and stripped ('card', 'CARD',
    ' card'): they stay separate classes, and the note says so and how to merge them."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in classes:
        groups[name.strip().casefold()].append(name)
    alike = [names for names in groups.values() if len(names) > 1]
    if not alike:
        return []
    shown = "; ".join(" / ".join(repr(n) for n in names) for names in alike[:SHOWN])
    more = f"; and {len(alike) - SHOWN} more group(s)" if len(alike) > SHOWN else ""
    return [
        f"{len(alike)} group(s) of labels differ only in case or surrounding spaces and are kept "
        f"as separate classes: {shown}{more}. If each group is one class, write its labels the "
        "same way (rename the folders or edit the label column) and run 01_data again."
    ]
