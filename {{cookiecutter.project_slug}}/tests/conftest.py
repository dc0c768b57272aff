"""Shared test setup: one suite for CPU machines and GPU machines.

On a GPU machine memory growth is switched on before any test runs a TensorFlow op, so the suite
takes GPU memory as it needs it. Tests marked `gpu` are skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }} import env


def pytest_configure(config: pytest.Config) -> None:
    """Memory growth can only be set before the GPUs are initialized: do it first."""
    env.configure_memory_growth()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked `gpu` when TensorFlow sees no GPU."""
    if tf.config.list_physical_devices("GPU"):
        return
    skip = pytest.mark.skip(reason="no GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
