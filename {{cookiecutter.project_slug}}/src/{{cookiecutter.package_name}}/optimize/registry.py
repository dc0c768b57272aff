"""The backends this package has: one module each, found at import time.

A backend's module is left out of a bake that declined it (TensorRT), so the table is built from
the modules present; each contributes <name>_available, <name>_convert and <name>_load.
"""

from __future__ import annotations

import importlib
import importlib.util

from .base import Backend

# Backend name -> its module in this package.
BACKEND_MODULES = {
    "onnx": "onnx_backend",
    "tensorrt": "tensorrt_engine",
    "tf_trt": "tf_trt",
}


def backend_table() -> dict[str, Backend]:
    """{name: Backend} for every backend whose module this package holds."""
    table = {}
    for name, module in BACKEND_MODULES.items():
        if importlib.util.find_spec(f"{__package__}.{module}") is None:
            continue
        loaded = importlib.import_module(f"{__package__}.{module}")
        parts = (getattr(loaded, f"{name}_{part}") for part in ("available", "convert", "load"))
        table[name] = Backend(name, *parts)
    return table


BACKEND_TABLE = backend_table()
BACKENDS = tuple(BACKEND_TABLE)
