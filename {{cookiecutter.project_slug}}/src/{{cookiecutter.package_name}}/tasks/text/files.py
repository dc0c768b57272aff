"""A user's text files as text: each file read by its byte-order mark, a folder read whole.

A file that starts with a byte-order mark is read in the encoding the mark names (UTF-8, UTF-16
or UTF-32, either byte order: what Windows editors and Excel's "Unicode text" write); any other
file must be UTF-8, which is never guessed past. A folder with files that cannot be read is
refused once, with their count and the first few named with the reason, not at its first bad
file (bytes that are not text, a link to a missing file, a read error of the disk);
`skip_unreadable` leaves them out instead, and the source's notes say how many. As the image
task does, texts in a class's sub-folders are merged into the class (a note names the folders)
and hidden entries are skipped; a class folder that links to one already read is skipped, and so
is a file that links outside the data folder (/etc/passwd), each said in a note.
"""

from __future__ import annotations

import codecs
import io
from collections import Counter
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
    the bytes of every file and name read (the fingerprint), and the notes: what was skipped or
    merged. Without `skip_unreadable` the files that cannot be read are refused together."""
    if not root.is_dir():
        raise TextSourceError(f"{root} is not a folder: give path=<one sub-folder per class>.")
    texts: list[str] = []
    labels: list[str] = []
    places: list[str] = []
    unreadable: list[str] = []
    outside: list[str] = []
    nested: Counter[str] = Counter()
    seen = io.BytesIO()
    real_root = root.resolve()
    read: dict[Path, str] = {}  # each class folder read, by its resolved path
    twins: list[str] = []
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    for folder in sorted(folders, key=lambda p: (p.is_symlink(), p.name)):  # links last
        real_folder = folder.resolve()
        if real_folder in read:
            twins.append(f"{folder.name} (a link to {read[real_folder]})")
            continue
        read[real_folder] = folder.name
        for file in _text_files(folder):
            name = file.relative_to(root)
            target = file.resolve()
            inside = target.is_relative_to(real_root) or target.is_relative_to(real_folder)
            if file.exists() and not inside:  # a link to a missing file: one of the unreadable
                outside.append(f"{name} (a link to {target})")
                continue
            data, problem = _read(file)
            seen.write(f"{name}\n".encode() + data)
            if not problem:
                text, problem = text_of(data)
            if problem:
                unreadable.append(f"{name} ({problem})")
                continue
            if not text.strip():
                raise TextSourceError(f"{file}, line 1: the text is empty, so write or remove it.")
            texts.append(text.strip())
            labels.append(folder.name)
            places.append(str(file))
            if len(name.parts) > 2:
                nested[f"{name.parts[0]}/{name.parts[1]}"] += 1
    files = f"{len(unreadable)} file{'s' if len(unreadable) > 1 else ''}"
    listed = _listed(unreadable)
    them = "them" if len(unreadable) > 1 else "it"
    if unreadable and not skip_unreadable:
        raise TextSourceError(
            f"{files} in {root} cannot be read as text: {listed}, so fix {them} (text saved as "
            "UTF-8 or with a byte-order mark), or give skip_unreadable=True to leave them out."
        )
    if not texts:
        raise TextSourceError(
            f"{root} holds no .txt files in sub-folders: put each class's texts in its own folder."
        )
    notes = [f"Skipped {files} that cannot be read as text (skip_unreadable): {listed}."]
    notes = notes if unreadable else []
    if twins:
        notes.append(
            f"Skipped {len(twins)} class folder(s) that link to a class folder already read, so "
            f"that no class is read twice: {_listed(twins)}."
        )
    if outside:
        notes.append(
            f"Skipped {len(outside)} file(s) that link outside {root}: {_listed(outside)}; a text "
            "must be a file in the data folder."
        )
    if nested:
        named = [f"{where}/ ({count})" for where, count in sorted(nested.items())[:LISTED]]
        more = f" and {len(nested) - LISTED} more" if len(nested) > LISTED else ""
        notes.append(
            f"{sum(nested.values())} text(s) in sub-folders merged into their class: "
            f"{', '.join(named)}{more}; a class needs its own folder directly in {root}."
        )
    return (texts, labels, places), seen.getvalue(), notes


def _text_files(folder: Path) -> list[Path]:
    """The .txt entries under a class folder, sub-folders included, hidden ones left out; a
    folder named like a file (x.txt) is no file: its own .txt files are found inside it."""
    found = (
        path
        for path in folder.rglob("*.txt")
        if not any(part.startswith(".") for part in path.relative_to(folder).parts)
    )
    return sorted(path for path in found if path.is_symlink() or not path.is_dir())


def _read(file: Path) -> tuple[bytes, str]:
    """(the file's bytes, "") or (b"", why it cannot be read), for the unreadable files' list."""
    if file.is_symlink() and not file.exists():
        return b"", f"a link to {file.readlink()}, which does not exist"
    if file.is_dir():
        return b"", "a link to a folder, not a file"
    try:
        return file.read_bytes(), ""
    except OSError as error:
        return b"", f"cannot be read: {error.strerror or error}"


def _listed(items: list[str]) -> str:
    """The first LISTED of `items` joined, and how many more."""
    more = f"; and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return "; ".join(items[:LISTED]) + more
