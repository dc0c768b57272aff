"""The report's status and error text say what happened (issue 42 §3.1): a run folder where 03
failed and 04-05 were then re-run ok is not "ok", and an error's `__format__` stays literal in
report.md instead of turning into bold "format"; and where one class dominates a table's test
split, 03's headline leads with the ranking scores and says what the majority answer scores."""

from __future__ import annotations

import json
from pathlib import Path

from test_mutants_report import TRAIN  # the train metrics the headline reads, as there

from {{ cookiecutter.package_name }}.cli import main
from {{ cookiecutter.package_name }}.runner.console import closing_lines
from {{ cookiecutter.package_name }}.runner.report import write_report
from {{ cookiecutter.package_name }}.runner.summary import headline

ERROR = "unsupported format string passed to NoneType.__format__"


def _record(run_dir: Path) -> dict:
    """04 and 05 re-run ok (this command's status: ok) after 03 failed in an earlier one."""
    failed = {"name": "03_train", "status": "failed", "seconds": 3.0}
    failed["error"] = {"cell": 18, "ename": "TypeError", "evalue": ERROR}
    attempt = {"notebook": "03_train", "status": "failed", "seconds": 3.0, "error": failed["error"]}
    run_dir.mkdir(parents=True)
    return {
        "profile": "smoke",
        "status": "ok",
        "started": "2026-12-03T05:00:00+00:00",
        "finished": "2026-12-03T05:01:00+00:00",
        "notebooks": [failed, {"name": "04_export", "status": "ok", "seconds": 2.0}],
        "attempts": [attempt],
    }


def test_a_failed_notebook_keeps_the_run_from_reading_ok(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    record = _record(run_dir)
    report = write_report(run_dir, record).read_text(encoding="utf-8")
    assert "Status: **failed (03_train)**" in report
    assert "status **failed (03_train)**." in headline(run_dir, record)[-1]
    assert closing_lines(run_dir, 1.0, record)[0] == "Run run: failed (03_train)"
    (run_dir / "run.json").write_text(json.dumps(record), encoding="utf-8")
    said = main(["report", "--run-dir", str(run_dir), "--headline"])
    assert said == 0 and capsys.readouterr().out.startswith("### Run run: failed (03_train)")


def test_error_text_is_literal_in_the_markdown_and_plain_in_the_terminal(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    record = _record(run_dir)
    report = write_report(run_dir, record).read_text(encoding="utf-8")
    assert "NoneType.__format__" not in report  # Markdown would bold "format"
    assert report.count(r"NoneType.\_\_format\_\_") == 2  # the headline and the attempts table
    said = closing_lines(run_dir, 1.0, record)[1]
    assert said == f"  03_train: failed in cell [18]: TypeError: {ERROR}"


def _train_headline(tmp_path: Path, **metrics: object) -> str:
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    train = {**TRAIN, "test_accuracy": 0.978, "test_roc_auc": 0.9519, **metrics}
    (run_dir / "metrics" / "train.json").write_text(json.dumps(train), encoding="utf-8")
    record = {"status": "ok", "notebooks": [{"name": "03_train", "status": "ok"}]}
    return headline(run_dir, record)[0]


def test_a_dominated_test_split_leads_with_ranking_and_the_majority_answer(tmp_path: Path) -> None:
    line = _train_headline(
        tmp_path,
        test_pr_auc=0.61,
        test_positive_share=0.033,
        test_majority_class="no",
        test_majority_accuracy=0.967,
        test_dominated=True,
    )
    assert line.startswith(
        "- **03_train**: ROC AUC **0.9519**, PR AUC **0.6100** (one class dominates: 3.3% "
        "positives; answering 'no' to every row scores accuracy 0.9670); test_accuracy **0.9780**"
    ), line


def test_a_balanced_test_split_keeps_the_accuracy_first(tmp_path: Path) -> None:
    line = _train_headline(
        tmp_path, test_majority_class="no", test_majority_accuracy=0.76, test_dominated=False
    )
    assert line.startswith("- **03_train**: test_accuracy **0.9780**"), line
