"""The backends this package has: one module each, found at run time.

Every module of this package other than the step's own (CORE_MODULES) is a backend, and
contributes <name>_available, <name>_convert and <name>_load (and <name>_int8_format where it
quantizes: the format its int8 graph takes, with why); a backend left out of a project
(an optional part declined when it was generated) is simply not found. Names are taken from
the functions, in the modules' alphabetical order (onnx first).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path

from .base import Backend

# The step's own modules, not backends.
CORE_MODULES = {"base", "calibration", "core", "judge", "params", "registry"}
ROLES = ("available", "convert", "load")


def backend_modules() -> list[str]:
    """The names of the backend modules this package holds, in alphabetical order."""
    found = pkgutil.iter_modules([str(Path(__file__).parent)])
    names = sorted(info.name for info in found)
    return [name for name in names if name not in CORE_MODULES and not name.startswith("_")]


def backend_table(modules: list[str] | None = None) -> dict[str, Backend]:
    """{name: Backend} for every backend module this package holds (or of `modules`, those
    present)."""
    table = {}
    for module in backend_modules() if modules is None else modules:
        if importlib.util.find_spec(f"{__package__}.{module}") is None:
            continue
        loaded = importlib.import_module(f"{__package__}.{module}")
        names = [
            attr.removesuffix("_available")
            for attr, value in vars(loaded).items()
            if attr.endswith("_available") and getattr(value, "__module__", "") == loaded.__name__
        ]
        for name in names:
            roles = (getattr(loaded, f"{name}_{role}") for role in ROLES)
            table[name] = Backend(name, *roles, getattr(loaded, f"{name}_int8_format", None))
    return table


BACKEND_TABLE = backend_table()
BACKENDS = tuple(BACKEND_TABLE)
