"""Helpers shared by the test modules (import with `from helpers import …`)."""

from __future__ import annotations

import re


def assert_one_sentence(message: str) -> None:
    """Bad input is answered with one sentence: one line, one final full stop."""
    text = str(message).strip()
    assert "\n" not in text and text.endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", text), f"more than one sentence: {message}"
