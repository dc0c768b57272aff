"""The report's headline speaks for this run: a step that failed is reported failed, even where an
earlier success left its metrics file in the run folder (a re-run into the same folder).

metrics/<step>.json is only replaced when a step succeeds, so after a failed re-run it still holds
the numbers of the earlier success: reading them for the headline would show the old model's
accuracy beside a run that failed.
"""

from __future__ import annotations

import json
from pathlib import Path

from {{ cookiecutter.package_name }}.runner.report import write_report
from {{ cookiecutter.package_name }}.runner.summary import headline

TRAIN = {
    "val_accuracy": 0.9666,
    "epochs_completed": 2,
    "strategy": "DefaultDistributionStrategy",
    "replicas": 1,
    "precision": "float32",
    "global_batch_size": 64,
}


def _rerun(tmp_path: Path, status: str) -> tuple[Path, dict]:
    """A run folder holding an earlier success's metrics/train.json, and a record of a re-run
    of 03_train that ended with `status`."""
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "metrics" / "train.json").write_text(json.dumps(TRAIN), encoding="utf-8")
    entry = {"name": "03_train", "status": status, "seconds": 3.0}
    if status == "failed":
        entry["error"] = {"cell": 4, "ename": "ValueError", "evalue": "loss became NaN"}
    record = {
        "profile": "smoke",
        "status": status,
        "started": "2026-12-03T05:00:00+00:00",
        "finished": "2026-12-03T05:01:00+00:00",
        "notebooks": [entry],
        "attempts": [],
    }
    return run_dir, record


def test_a_failed_step_is_headlined_failed_not_with_an_earlier_successes_numbers(
    tmp_path: Path,
) -> None:
    run_dir, record = _rerun(tmp_path, "failed")
    lines = headline(run_dir, record)
    assert lines[0] == "- **03_train**: **failed** in cell [4]: ValueError: loss became NaN"
    assert "0.9666" not in "\n".join(lines)
    report = write_report(run_dir, record).read_text(encoding="utf-8")
    assert "- **03_train**: **failed** in cell [4]" in report


def test_an_interrupted_step_is_headlined_interrupted(tmp_path: Path) -> None:
    run_dir, record = _rerun(tmp_path, "interrupted")
    lines = headline(run_dir, record)
    assert lines[0].startswith("- **03_train**: **interrupted**")
    assert "0.9666" not in "\n".join(lines)


def test_the_same_folder_after_a_success_headlines_its_numbers(tmp_path: Path) -> None:
    """The other side: the metrics file is read when the step succeeded in this run."""
    run_dir, record = _rerun(tmp_path, "ok")
    assert "val_accuracy **0.9666**" in headline(run_dir, record)[0]
