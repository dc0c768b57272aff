"""Which artifacts a run folder holds, and each one's fingerprint: what lineage.py records.

Artifacts are named "data", "model", "export/<version>" and those of the optional parts present
(parts.*.ARTIFACTS); their fingerprints are sha256 hex digests:
- data: meta.json's bytes and every shard's name and size (cheap for large data, and meta.json
  holds the request: source, seed, split fraction, counts);
- model: model.keras's bytes; a part's artifact: its file's bytes;
- export/<version>: every file of the SavedModel folder, by relative name and bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from . import parts
from .artifacts import EXPORT_DIR, META_FILE, MODEL_FILE, resolve_run_dir

# The file (or folder) of each optional part's artifact, by artifact name.
PART_FILES = {name: file for name, (file, _) in parts.merged("ARTIFACTS").items()}
_CHUNK = 1 << 20


def fingerprint(run_dir: str | os.PathLike[str], artifact: str) -> str | None:
    """The artifact's current fingerprint, or None when it is not in the run folder."""
    folder = resolve_run_dir(run_dir, create=False)
    kind, _, version = artifact.partition("/")
    if kind == "data":
        return _data_fingerprint(folder / META_FILE)
    if kind in PART_FILES:
        return _files_digest(folder / PART_FILES[kind])
    if kind == "model":
        return _files_digest(folder / MODEL_FILE)
    if kind == "export" and version:
        return _files_digest(folder / EXPORT_DIR / version)
    known = ", ".join(["data", *PART_FILES, "model"])
    raise ValueError(f"Unknown artifact {artifact!r}: use {known} or export/<version>.")


def present(run_dir: str | os.PathLike[str]) -> list[str]:
    """The artifacts the run folder holds now, by name (no fingerprint computed)."""
    folder = resolve_run_dir(run_dir, create=False)
    found = ["data"] if (folder / META_FILE).is_file() else []
    found += [name for name, file in PART_FILES.items() if (folder / file).exists()]
    found += ["model"] if (folder / MODEL_FILE).is_file() else []
    exports = folder / EXPORT_DIR
    if exports.is_dir():
        versions = [p.name for p in exports.iterdir() if p.is_dir() and p.name.isdigit()]
        found += [f"{EXPORT_DIR}/{version}" for version in sorted(versions, key=int)]
    return found


def _data_fingerprint(meta_path: Path) -> str | None:
    try:
        raw = meta_path.read_bytes()
        meta = json.loads(raw)
    except (OSError, ValueError):
        return None
    digest = hashlib.sha256(raw)
    splits = meta.get("splits") if isinstance(meta, dict) else None
    for split in sorted(splits or {}):
        for shard in (splits[split] or {}).get("shards") or []:
            path = meta_path.parent / str(shard)
            size = path.stat().st_size if path.is_file() else -1
            digest.update(f"\0{split}/{shard}:{size}".encode())
    return digest.hexdigest()


def _files_digest(path: Path) -> str | None:
    """sha256 of a file's bytes, or of a folder's files by relative name and bytes."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
    else:
        return None
    digest = hashlib.sha256()
    for file in files:
        if path.is_dir():
            digest.update(f"\0{file.relative_to(path).as_posix()}\0".encode())
        with file.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()
