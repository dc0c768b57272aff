"""One writer at a time in a folder: an exclusive fcntl lock on a file in it, held while working.

Two `run`s into one run folder would interleave their notebooks and overwrite each other's
run.json (each says ok; the record keeps one as interrupted). The kernel releases an flock when
its holder dies, kill -9 included, so a lock left by a killed run never blocks the next one; the
file itself stays and only records the holder's pid, for the sentence a refused caller prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class Busy(RuntimeError):
    """Another process holds the lock: `pid` is the one it recorded (None when unreadable)."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"{path} is held by pid {pid if pid is not None else 'unknown'}")
        self.path = path
        self.pid = pid


@contextlib.contextmanager
def held(path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold `path` (made if needed) exclusively until the block ends, recording this pid in it.

    wait=False raises Busy at once when another process holds it, instead of waiting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy(path, holder(path)) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def holder(path: Path) -> int | None:
    """The pid the lock file records (the last process that held it), or None."""
    try:
        return int(path.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None
