"""The optional parts this project holds, found at run time: what the shared modules must know.

A part declined when the project was generated has no module here (the post-gen hook removes it
with the part's own package), so nothing in the rest of the package names it: the chain's steps,
the run-folder artifacts and the step that makes each, the figures, the report's sentences and
the values a part offers to training are all collected from the modules present. Each module is
light (the standard library at import time, the rest inside its functions), so any module may
read this registry without importing TensorFlow or a part's own dependencies.

The registry is the lowest floor (artifacts, lineage and quiet read it), so a part's module
imports nothing of the package above it: what needs the part's own package (or training's
checks) is a `Hook`, named here by module and function and imported only when called.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import Any


def present() -> list[ModuleType]:
    """The parts' modules, by name."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def collect(attribute: str) -> list[Any]:
    """Each present part's `attribute` (a part without one is left out)."""
    return [getattr(part, attribute) for part in present() if hasattr(part, attribute)]


def merged(attribute: str) -> dict[str, Any]:
    """The present parts' `attribute` dictionaries, merged into one."""
    return {key: value for table in collect(attribute) for key, value in table.items()}


@dataclass(frozen=True)
class Hook:
    """A function of the package's upper floors that a part calls: `module` (relative to the
    package, e.g. "serve.versions") is imported on the first call, not by this registry."""

    module: str
    function: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        package = __name__.rpartition(".")[0]
        module = importlib.import_module(f"{package}.{self.module}")
        return getattr(module, self.function)(*args, **kwargs)
