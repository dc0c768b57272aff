"""Helpers shared by the test modules (import with `from helpers import …`)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_one_sentence(message: str) -> None:
    """Bad input is answered with one sentence: one line, one final full stop."""
    text = str(message).strip()
    assert "\n" not in text and text.endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", text), f"more than one sentence: {message}"


# Values for the dashboard variables, so its queries run as plain PromQL: every run and task, and
# a rate window that spans several scrapes.
DASHBOARD_VARIABLES = {"__rate_interval": "1m", "run": ".+", "task": ".+"}


def dashboard_expressions(path) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every query of a Grafana dashboard JSON file (a str or Path),
    rows' panels included, with `$run`, `$task` and `$__rate_interval` replaced by
    DASHBOARD_VARIABLES; any other variable raises ValueError: no plain Prometheus could run it."""
    import json
    from pathlib import Path

    def substitute(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in DASHBOARD_VARIABLES:
            raise ValueError(f"{path}: the variable ${name} has no value for plain PromQL")
        return DASHBOARD_VARIABLES[name]

    def panels(items: list) -> list:
        return [p for item in items for p in [item, *panels(item.get("panels", []))]]

    dashboard = json.loads(Path(path).read_text(encoding="utf-8"))
    return [
        (panel.get("title", ""), re.sub(r"\$\{(\w+)\}|\$(\w+)", substitute, target["expr"]))
        for panel in panels(dashboard.get("panels", []))
        for target in panel.get("targets", [])
        if target.get("expr")
    ]


def slowed(make_dataset: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """make_dataset with every batch made `seconds` late inside the iterator's own call: no
    prefetch after the delay, not even one tf.data would inject, so it cannot overlap the step
    and each step waits at least that long, however busy the machine is."""
    import tensorflow as tf

    def wait(batch):
        time.sleep(seconds)
        return batch

    def slow(*args, **kwargs):
        dataset = make_dataset(*args, **kwargs)
        spec = dataset.element_spec[0]

        def late(images, labels):
            images = tf.py_function(wait, [images], spec.dtype)
            return tf.ensure_shape(images, spec.shape), labels

        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        return dataset.map(late).with_options(options)

    return slow


class Ticks:
    """A controlled clock: each read moves it by `tick` seconds, whatever the machine does."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


# How often a step resolved its run folder (tests/test_shared_steps.py, tests/test_run_folder.py).
def resolutions(call: Callable[[], Any]) -> tuple[int, int]:
    """(calls of resolve_run_dir, of which resolutions: an argument not yet a RunFolder)."""
    import sys
    import threading

    from {{ cookiecutter.package_name }} import artifacts

    code = artifacts.resolve_run_dir.__code__
    calls, resolved = [0], [0]
    folder_type = getattr(artifacts, "RunFolder", ())

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls[0] += 1
            resolved[0] += not isinstance(frame.f_locals["run_dir"], folder_type)

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return calls[0], resolved[0]


def assert_once(step: str, counted: tuple[int, int]) -> None:
    calls, resolved = counted
    assert resolved == 1, f"{step} resolved its run folder {resolved} times ({calls} calls)"
