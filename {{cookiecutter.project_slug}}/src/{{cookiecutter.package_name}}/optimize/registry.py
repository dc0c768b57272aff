"""The backends this package has: one module each, found at run time.

Every module of this package other than the step's own (CORE_MODULES) is a backend, and
contributes <name>_available, <name>_convert and <name>_load; a backend left out of a project
(an optional part declined when it was generated) is simply not found. Names are taken from
the functions, in the modules' alphabetical order (onnx first).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from .base import Backend

CORE_MODULES = {"base", "calibration", "core", "params", "registry"}  # the step, not backends
ROLES = ("available", "convert", "load")


def backend_table() -> dict[str, Backend]:
    """{name: Backend} for every backend module this package holds."""
    table = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.name in CORE_MODULES or info.name.startswith("_"):
            continue
        loaded = importlib.import_module(f"{__package__}.{info.name}")
        names = [
            attr.removesuffix("_available")
            for attr, value in vars(loaded).items()
            if attr.endswith("_available") and getattr(value, "__module__", "") == loaded.__name__
        ]
        for name in names:
            table[name] = Backend(name, *(getattr(loaded, f"{name}_{role}") for role in ROLES))
    return table


BACKEND_TABLE = backend_table()
BACKENDS = tuple(BACKEND_TABLE)
