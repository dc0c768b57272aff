"""What a loaded source's labels and splits say before anything is written: a single class is
refused (a classifier needs two), labels that differ only in case or surrounding spaces are named
in a note (kept apart: they may be meant), and texts of validation or test that also appear in
train are counted (a score on them measures recall of train, not generalization).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .files import TextSourceError
from .vocab import tokens

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


def repeated_in_train(splits: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Per split other than train, how many of its texts are also a train text as the vectorizer
    reads them (lower-cased, punctuation removed, spaces collapsed), and a note when any are."""
    seen = {" ".join(tokens(text)) for text in splits["train"].texts}
    counts = {
        name: sum(" ".join(tokens(text)) in seen for text in split.texts)
        for name, split in splits.items()
        if name != "train"
    }
    parts = [
        f"{counts[name]} of {len(splits[name].texts)} {name} texts "
        f"({counts[name] / len(splits[name].texts):.1%})"
        for name in counts
        if counts[name]
    ]
    if not parts:
        return counts, []
    return counts, [
        f"{' and '.join(parts)} also appear in train (the same words once lower-cased and "
        "without punctuation, as the model reads them): scores on them measure memory of train, "
        "so remove the repeated rows from the source if that is not intended."
    ]
