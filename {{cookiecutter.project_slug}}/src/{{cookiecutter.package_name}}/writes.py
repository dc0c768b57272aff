"""Writing a run folder's files whole or not at all, and the one sentence when the disk says no.

Every file the package writes goes through here (or through `writing`, for the writers of
TensorFlow and Keras): a temporary name beside the file, renamed into place when complete, so a
reader never sees half a file, and a full disk or a read-only folder is one WriteError naming the
file, the space left and what to do. The names of the files are artifacts.py's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .artifacts import STEPS, StepError, run_folder


class WriteError(StepError):
    """A file could not be written (a full disk, a read-only folder); its partial files are gone
    and an earlier complete one is kept. See `writing`."""


def check_writable(folder: Path, flag: str = "run_dir") -> None:
    """Refuse a folder this process cannot write, in one sentence, before any work starts.

    Probing with a real file is the only test that holds for root, read-only mounts and ACLs alike.
    """
    existing = next((path for path in (folder, *folder.parents) if path.exists()), None)
    if existing is not None and not existing.is_dir():
        raise StepError(f"{flag} {folder} cannot be used: {existing} is a file, not a folder.")
    probe_in = existing or folder
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=probe_in)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise StepError(
            f"{flag} {folder} cannot be written ({reason} in {probe_in}): choose a folder you "
            "can write to."
        ) from None


def write_metrics(run_dir: str | os.PathLike[str], step: str, metrics: dict[str, Any]) -> Path:
    """Write metrics/<step>.json atomically, so a reader never sees half a file."""
    if step not in STEPS:
        raise ValueError(f"Unknown step {step!r}: use one of {', '.join(STEPS)}.")
    return write_json(run_folder(run_dir, create=True).metrics_file(step), metrics)


def write_json(path: Path, data: Any, then: str = "run this step again") -> Path:
    """Write JSON whole or not at all (write_text)."""
    text = json.dumps(data, indent=2, sort_keys=True, default=_jsonable) + "\n"
    return write_text(path, text, then)


def write_text(path: Path, text: str, then: str = "run this step again") -> Path:
    """Write to a temporary name beside `path` and rename it into place when complete, so a
    reader never sees half a file; a full disk or a read-only folder is one sentence (WriteError)
    that ends with `then`, and whatever `path` held before is kept."""
    with writing(path, then):
        replace_text(path, text)
    return path


def replace_text(path: Path, text: str) -> None:
    """The write of `write_text`, temporary name and rename, with its OSError as it came."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from other readers (a container)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def writing(path: Path, then: str = "run this step again") -> Iterator[None]:
    """Turn a write that failed for want of space or permission into one sentence (WriteError)
    naming `path`, the space left and what to do; any other error passes unchanged.

    The block removes its own partial files before the error leaves it (temp file + rename), so
    whatever `path` held before is still there. TensorFlow's writers say ENOSPC in their message
    (ResourceExhaustedError), not in errno, so the text is read too.
    """
    try:
        yield
    except Exception as error:
        sentence = write_failure(path, error, then)
        if sentence is None:
            raise
        raise WriteError(sentence) from None


def write_failure(path: Path, error: BaseException, then: str) -> str | None:
    """The sentence for a full disk or a read-only folder; None for any other error."""
    code, text = getattr(error, "errno", None), str(error)
    folder = next((p for p in (path.parent, *path.parent.parents) if p.is_dir()), path.parent)
    kept = "the earlier one is kept; " if path.exists() else ""
    if code in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in text:
        free = _size(shutil.disk_usage(folder).free)
        return (
            f"{path} could not be written: the disk is full ({free} free in {folder}); {kept}"
            f"free some space, then {then}."
        )
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or "Read-only file system" in text:
        reason = getattr(error, "strerror", None) or "read-only"
        return (
            f"{path} could not be written: {folder} is not writable ({reason}); {kept}make it "
            f"writable or use another folder, then {then}."
        )
    return None


def set_aside(path: Path) -> str:
    """Rename a file that cannot be read to `<name>.corrupt-<n>` beside it, n the first free
    number, so it is kept rather than silently dropped; returns its new name."""
    number = 1
    while path.with_name(f"{path.name}.corrupt-{number}").exists():
        number += 1
    kept = f"{path.name}.corrupt-{number}"
    os.replace(path, path.with_name(kept))
    return kept


def _size(count: int) -> str:
    """Bytes as people read them: 0 B, 512.0 KiB, 1.5 GiB."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _jsonable(value: Any) -> Any:
    """numpy scalars and paths, which metrics often hold, as plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
