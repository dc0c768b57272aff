"""Quiet without losing anything: stderr works again once TensorFlow has loaded, and progress
prints exactly one line per period and one summary, no more.

The quiet test of test_quiet_progress.py asserts that stderr is empty, which a descriptor left
pointing at the discarded file only makes emptier: here the process writes to stderr after the
import and the words must arrive.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import progress, quiet

PACKAGE = "{{ cookiecutter.package_name }}"


def test_stderr_reaches_the_terminal_again_after_tensorflow_loads() -> None:
    code = (
        f"import os, sys; from {PACKAGE} import quiet; quiet.import_tensorflow(); "
        "os.write(2, b'fd2 after the import\\n'); "
        "print('python stderr after the import', file=sys.stderr, flush=True); "
        "import tensorflow; print('tensorflow' in sys.modules)"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in {"TF_CPP_MIN_LOG_LEVEL", quiet.VERBOSE_ENV}
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert done.stderr.splitlines() == ["fd2 after the import", "python stderr after the import"]


@pytest.mark.parametrize(("raised", "shown"), [("KeyboardInterrupt", False), ("ImportError", True)])
def test_a_ctrl_c_while_tensorflow_loads_shows_none_of_its_lines(
    tmp_path: Path, raised: str, shown: bool
) -> None:
    """Issue 33: Ctrl-C during the run's pre-flight printed TensorFlow's C++ load-time lines above
    the one-line answer. They are shown when loading fails (they may say why), not on a Ctrl-C."""
    fake = tmp_path / "tensorflow"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        f"import os\nos.write(2, b'I0000 oneDNN chatter\\n')\nraise {raised}\n", encoding="utf-8"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); from {PACKAGE} import quiet\n"
        f"try:\n    quiet.import_tensorflow()\nexcept {raised}:\n    print('raised')\n"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in {"TF_CPP_MIN_LOG_LEVEL", quiet.VERBOSE_ENV}
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.stdout.strip() == "raised", done.stderr
    assert ("oneDNN chatter" in done.stderr) is shown, done.stderr


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_track_without_a_total_counts_the_items_in_its_summary(monkeypatch, capsys) -> None:
    """Lines come on a clock, not per item (at most one per period in a log): fast items give
    the summary alone, counting every item, and never one line too many."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    assert list(progress.track(iter("ab"), what="Epochs", unit="epoch")) == ["a", "b"]
    lines = _lines(capsys)
    assert [line.split(" in ")[0] for line in lines] == [f"{progress.MARK}Epochs: 2 epoch(s)"]


def test_track_within_the_period_prints_only_the_summary(monkeypatch, capsys) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    monkeypatch.setattr(progress, "LINE_EVERY", 3600.0)
    list(progress.track(range(5), what="Trials", unit="trial"))
    lines = _lines(capsys)
    assert len(lines) == 1 and lines[0].startswith(f"{progress.MARK}Trials: 5/5 trial(s) in ")
