"""A plain script that imports the package and then loads TensorFlow prints none of TensorFlow's
load-time C++ lines, unless the user set TF_CPP_MIN_LOG_LEVEL under 3 (issue 42 §3.9)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from {{ cookiecutter.package_name }} import quiet

PACKAGE = "{{ cookiecutter.package_name }}"
SCRIPT = "; ".join(
    [
        f"from {PACKAGE} import tasks",
        "tasks.current()",
        "import tensorflow as tf",
        "print(int(tf.constant(7)))",
    ]
)
LOAD_LINE = "before absl::InitializeLog()"  # TensorFlow 2.21's first line when it loads


def _run(**env: str) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", quiet.VERBOSE_ENV)
    }
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=300,
    )


def test_a_script_importing_the_package_prints_no_tensorflow_load_lines() -> None:
    done = _run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7"
    assert LOAD_LINE not in done.stderr and "I0000" not in done.stderr, done.stderr


@pytest.mark.parametrize("env", [{"TF_CPP_MIN_LOG_LEVEL": "0"}, {quiet.VERBOSE_ENV: "1"}])
def test_a_user_who_asked_for_the_lines_gets_them(env: dict) -> None:
    done = _run(**env)
    assert done.returncode == 0 and LOAD_LINE in done.stderr, done.stderr


def test_a_probe_for_tensorflow_before_the_import_leaves_it_held() -> None:
    """importlib.util.find_spec('tensorflow') (a check that it is installed) does not disarm it."""
    probe = "import importlib.util; importlib.util.find_spec('tensorflow'); "
    script = f"from {PACKAGE} import quiet; " + probe + SCRIPT
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={
            k: v
            for k, v in os.environ.items()
            if k not in ("TF_CPP_MIN_LOG_LEVEL", quiet.VERBOSE_ENV)
        },
        timeout=300,
    )
    assert done.returncode == 0 and LOAD_LINE not in done.stderr, done.stderr
