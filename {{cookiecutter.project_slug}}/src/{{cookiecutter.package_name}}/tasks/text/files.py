"""A user's text files as text: each file read by its byte-order mark, a folder read whole.

A file that starts with a byte-order mark is read in the encoding the mark names (UTF-8, UTF-16
or UTF-32, either byte order: what Windows editors and Excel's "Unicode text" write); any other
file must be UTF-8, which is never guessed past. A folder with files that cannot be read is
refused once, with their count and the first few named with the reason, not at its first bad
file; `skip_unreadable` leaves them out instead, and the source's notes say how many.
"""

from __future__ import annotations

import codecs
import io
from pathlib import Path

from ...data.base import DataError

# The longer UTF-32 marks first: UTF-32-LE's begins with UTF-16-LE's.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}
LISTED = 3  # unreadable files named in a refusal or a note; the rest are counted


class TextSourceError(DataError):
    """Bad text input: one sentence naming the file and line, and what to do about it."""


Rows = tuple[list[str], list[str], list[str]]  # texts, labels, and where each was read


def decode(data: bytes, name: str) -> str:
    """The text of a file's bytes (text_of), or one sentence naming the file, line and byte."""
    text, problem = text_of(data)
    if problem:
        raise TextSourceError(f"{name}, {problem}, so save the file as UTF-8.")
    return text


def text_of(data: bytes) -> tuple[str, str]:
    """(text, "") with its byte-order mark dropped and every line ending made LF, or ("", why it
    cannot be read: "line 2: the byte 0x80 is not UTF-8")."""
    encoding = next((name for mark, name in BOMS if data.startswith(mark)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].decode(encoding, errors="replace").count("\n") + 1
        byte = data[error.start] if error.start < len(data) else data[-1]
        return "", f"line {line}: the byte {byte:#04x} is not {NAMES[encoding]}"
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n"), ""


def read_folder_rows(root: Path, skip_unreadable: bool = False) -> tuple[Rows, bytes, list[str]]:
    """(texts, labels, files) of a folder with one sub-folder per class and one .txt per example,
    the bytes of every file and name read (the fingerprint), and the notes: how many files that
    cannot be read were skipped. Without `skip_unreadable` those files are refused together."""
    if not root.is_dir():
        raise TextSourceError(f"{root} is not a folder: give path=<one sub-folder per class>.")
    texts: list[str] = []
    labels: list[str] = []
    places: list[str] = []
    unreadable: list[str] = []
    seen = io.BytesIO()
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for file in sorted(folder.glob("*.txt")):
            data = file.read_bytes()
            seen.write(f"{file.relative_to(root)}\n".encode() + data)
            text, problem = text_of(data)
            if problem:
                unreadable.append(f"{file.relative_to(root)} ({problem})")
                continue
            if not text.strip():
                raise TextSourceError(f"{file}, line 1: the text is empty, so write or remove it.")
            texts.append(text.strip())
            labels.append(folder.name)
            places.append(str(file))
    files = f"{len(unreadable)} file{'s' if len(unreadable) > 1 else ''}"
    listed = "; ".join(unreadable[:LISTED]) + (
        f"; and {len(unreadable) - LISTED} more" if len(unreadable) > LISTED else ""
    )
    if unreadable and not skip_unreadable:
        raise TextSourceError(
            f"{files} in {root} cannot be read as text: {listed}, so save them as UTF-8 (or with "
            "a byte-order mark), or give skip_unreadable=True to leave them out."
        )
    if not texts:
        raise TextSourceError(
            f"{root} holds no .txt files in sub-folders: put each class's texts in its own folder."
        )
    notes = [f"Skipped {files} that cannot be read as text (skip_unreadable): {listed}."]
    return (texts, labels, places), seen.getvalue(), notes if unreadable else []
