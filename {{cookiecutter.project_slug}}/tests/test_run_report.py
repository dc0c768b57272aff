"""The run report: a headline that names every step, key numbers, embedded figures, report.html,
and a report that still says what happened when a step failed. Built from metrics files alone."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import assert_one_sentence
from matplotlib.figure import Figure

from {{ cookiecutter.package_name }} import __version__
from {{ cookiecutter.package_name }}.runner.html import write_html
from {{ cookiecutter.package_name }}.runner.report import write_report
from {{ cookiecutter.package_name }}.runner.summary import headline
from {{ cookiecutter.package_name }}.writes import WriteError

PACKAGE = "{{ cookiecutter.package_name }}"
NOTEBOOKS = [
    "00_environment",
    "01_data",{% if cookiecutter.include_tuning %}
    "02_tune",{% endif %}
    "03_train",
    "04_export",
    "05_optimize",
]
METRICS = {
    "environment": {
        "gpu_available": False,
        "gpus": [],
        "matmul": [{"device": "CPU:0", "gflops": 53.4}],
        "recommended_policy": "float32",
        "verdict": "No GPU — running on CPU.",
    },
    "data": {
        "dataset": "digits",
        "train_count": 1438,
        "validation_count": 359,
        "speedup_vs_naive": 26.9,
        "examples_per_sec": 495434.0,
        "naive_examples_per_sec": 18426.0,
    },
{%- if cookiecutter.include_tuning %}
    "tune": {
        "objective": "val_accuracy",
        "best_score": 0.7772,
        "trials_run": 2,
        "best_trial": 2,
        "algorithm": "random",
        "best_hparams": {"width": 64, "dropout": 0.15},
    },
{%- endif %}
    "train": {
        "val_accuracy": 0.9666,
        "val_loss": 0.117,
        "epochs_completed": 2,
        "epochs": 2,
        "strategy": "DefaultDistributionStrategy",
        "replicas": 1,
        "precision": "float32",
        "global_batch_size": 71,
        "learning_rate": 0.00257,
        "examples_per_sec": 10913.0,
    },
    "export": {
        "version": 1,
        "parity_ok": True,
        "top1_agreement": 1.0,
        "max_abs_diff": 0.0,
        "examples": 359,
        "verdict": "Same top class on all 359 validation images.",
        "saved_model_cli_all": "MetaGraphDef with tag-set: 'serve' " + "x" * 5000,
    },
    "optimize": {
        "best_backend": "onnx (int8)",
        "best_vs_savedmodel_batch1": 23.3,
        "baselines": [{"name": "savedmodel", "p50_ms": 1.0, "p99_ms": 2.0}],
        "backends": [
            {"name": "onnx", "precision": "fp32", "status": "ran", "p50_ms": 0.04, "p99_ms": 0.05},
            {"name": "onnx", "precision": "fp16", "status": "skipped", "reason": "no GPU."},
            {"name": "onnx", "precision": "int8", "status": "skipped", "reason": "no GPU."},
        ],
    },
}


def _run_folder(tmp_path: Path, failed_at: str | None = None) -> tuple[Path, dict]:
    """A run folder with every step's metrics (none from failed_at on) and a runner record."""
    run_dir = tmp_path / "run"
    (run_dir / "metrics").mkdir(parents=True)
    entries, failed = [], False
    for name in NOTEBOOKS:
        failed = failed or name == failed_at
        status = "ok" if not failed else ("failed" if name == failed_at else "not run")
        entry = {"name": name, "status": status, "seconds": 10.0 if status != "not run" else None}
        if status == "failed":
            entry["error"] = {"cell": 7, "ename": "ValueError", "evalue": "loss became NaN"}
        if status == "ok":
            step = name[3:]
            (run_dir / "metrics" / f"{step}.json").write_text(json.dumps(METRICS[step]))
        entries.append(entry)
    record = {
        "profile": "smoke",
        "status": "failed" if failed_at else "ok",
        "started": "2026-12-03T05:00:00+00:00",
        "finished": "2026-12-03T05:01:00+00:00",
        "notebooks": entries,
        "attempts": [],
    }
    return run_dir, record


def _figure(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure = Figure(figsize=(2, 1))
    figure.add_subplot().plot([0, 1], [1, 0])
    figure.savefig(path)


def test_headline_names_every_step_with_its_result(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path)
    lines = headline(run_dir, record)
    for name in NOTEBOOKS:
        assert any(line.startswith(f"- **{name}**:") for line in lines), name
    text = "\n".join(lines)
    assert "26.9× the naive one" in text and "val_accuracy **0.9666**" in text
    assert "parity **ok**" in text and "**onnx (int8)**, 23.3× the SavedModel" in text
    assert "- **Skipped**: onnx (fp16, int8): no GPU." in text
    count = len(NOTEBOOKS)
    assert f"- **Total**: {10.0 * count:.1f} s over {count} notebook(s), status **ok**." in text


def test_a_backends_long_error_is_one_short_line_in_the_headline(tmp_path: Path) -> None:
    """ONNX Runtime's error holds its C++ source location and a long signature: the headline's
    Skipped line shows its first line, cut short; optimize.json keeps the whole of it."""
    run_dir, record = _run_folder(tmp_path)
    path = run_dir / "metrics" / "optimize.json"
    metrics = json.loads(path.read_text())
    first = "onnx failed: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code " + "x" * 300
    metrics["backends"][2].update(
        status="failed", reason=first + "\n/onnxruntime_src/dynamic_quantize_matmul.cc:97 ..."
    )
    path.write_text(json.dumps(metrics))
    (skipped,) = [line for line in headline(run_dir, record) if line.startswith("- **Skipped**")]
    said = "- **Skipped**: onnx (fp16): no GPU; onnx (int8): onnx failed: [ONNXRuntimeError]"
    assert skipped.startswith(said) and skipped.endswith("x…") and len(skipped) < 250, skipped


def test_the_data_headline_and_table_count_the_test_split_when_there_is_one(
    tmp_path: Path,
) -> None:
    """A run that held out a test split says so among its counts; one without says nothing."""
    METRICS["data"]["test_count"] = 200
    try:
        run_dir, record = _run_folder(tmp_path)
        text = "\n".join(headline(run_dir, record))
        write_report(run_dir, record)
        report = (run_dir / "report.md").read_text(encoding="utf-8")
    finally:
        del METRICS["data"]["test_count"]
    assert "1,438 train / 359 validation / 200 test examples" in text
    assert "1,438 / 359 / 200" in report and "train / validation / test" in report
    plain = "\n".join(headline(*_run_folder(tmp_path / "plain")))
    assert "1,438 train / 359 validation examples" in plain


def test_report_survives_a_failed_step_and_says_which(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path, failed_at="03_train")
    report = write_report(run_dir, record).read_text()
    assert "- **03_train**: **failed** in cell [7]: ValueError: loss became NaN" in report
    assert "- **04_export**: not run: no metrics written by this run." in report
    assert "val_accuracy **" not in report  # no number for a step that did not finish
    assert "status **failed**" in report
    html = write_html(run_dir, record).read_text()
    assert "loss became NaN" in html


def test_a_corrupt_metrics_file_is_said_corrupt_not_missing(tmp_path: Path) -> None:
    """A step that ran ok but whose metrics file is cut short is named as unreadable, with the
    notebook to re-run, not as "no metrics written by this run"."""
    run_dir, record = _run_folder(tmp_path)
    (run_dir / "metrics" / "train.json").write_text('{"val_accuracy": 0.9', encoding="utf-8")
    (line,) = [line for line in headline(run_dir, record) if line.startswith("- **03_train**")]
    assert "no metrics written" not in line
    said = "- **03_train**: ok, but its metrics file cannot be read (JSONDecodeError"
    assert line.startswith(said)
    assert line.endswith("re-run 03_train to write it again.")
    report = write_report(run_dir, record).read_text()  # its section says so too
    assert "`metrics/train.json` cannot be read (JSONDecodeError" in report
    assert "No `metrics/train.json` in this run folder" not in report


def test_a_full_disk_keeps_the_earlier_report_html_whole(tmp_path: Path, monkeypatch) -> None:
    """report.html is written to a temporary name and renamed: a write that fails half-way (a
    full disk) leaves the earlier complete report in place and no temporary file behind."""
    run_dir, record = _run_folder(tmp_path)
    write_report(run_dir, record)
    earlier = write_html(run_dir, record).read_text()
    real_fdopen = os.fdopen

    class DiskFull:
        """The temporary file's handle: writes half the page, then the disk is full."""

        def __init__(self, handle) -> None:
            self.handle = handle

        def __enter__(self) -> DiskFull:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, text: str) -> int:
            self.handle.write(text[: len(text) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: DiskFull(real_fdopen(fd, *a, **k)))
    with pytest.raises(WriteError, match="report.html could not be written: the disk is full"):
        write_html(run_dir, record)
    monkeypatch.undo()
    assert (run_dir / "report.html").read_text() == earlier
    assert sorted(p.name for p in run_dir.glob(".report.html*")) == []


def test_figures_are_embedded_in_the_report_and_inlined_in_the_html(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path)
    _figure(run_dir / "figures" / "train_curves.png")
    _figure(run_dir / "figures" / "data_throughput.png")
    report = write_report(run_dir, record).read_text()
    assert "![train_curves](figures/train_curves.png)" in report
    assert report.index("data_throughput.png") < report.index("train_curves.png")  # step order
    assert "optimize_latency" not in report  # only figures that exist are embedded
    html = write_html(run_dir, record).read_text()
    assert html.count('src="data:image/png;base64,') == 2 and "figures/train_curves.png" not in html


def test_long_metric_texts_stay_in_the_json(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path)
    report = write_report(run_dir, record).read_text()
    assert "x" * 200 not in report and "saved_model_cli_all" not in report


def test_metrics_without_expected_keys_cost_a_sentence(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path)
    (run_dir / "metrics" / "train.json").write_text(json.dumps({"val_accuracy": "n/a"}))
    report = write_report(run_dir, record).read_text()
    assert "- **03_train**: done; see metrics/train.json." in report


def _cli(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", PACKAGE, "report", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_cli_prints_the_headline_for_a_job_summary(tmp_path: Path) -> None:
    run_dir, record = _run_folder(tmp_path)
    (run_dir / "run.json").write_text(json.dumps(record))
    done = _cli("--run-dir", str(run_dir), "--headline")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("### Run run: ok") and "**05_optimize**" in done.stdout
    done = _cli("--run-dir", str(run_dir))
    assert done.returncode == 0 and (run_dir / "report.html").is_file(), done.stderr
    # nbconvert loads and converts every notebook (204 s silent on a busy machine, issue 33)
    converting = (
        r"Writing report\.html \(the report and every executed notebook\): "
        r"done in \d+\.\d s"
    )
    assert re.search(converting, done.stdout), done.stdout


@pytest.mark.parametrize("content", [None, "{not json"], ids=["missing", "corrupt"])
def test_cli_without_a_readable_run_json_says_so(tmp_path: Path, content: str | None) -> None:
    if content is not None:
        (tmp_path / "run.json").write_text(content)
    done = _cli("--run-dir", str(tmp_path), "--headline")
    assert done.returncode == 2 and done.stdout == ""
    assert_one_sentence(done.stderr.strip())


def _executed(path: Path) -> None:
    """A small executed notebook: a markdown cell and a code cell with an output."""
    cell = nbformat.v4.new_code_cell("print('hello')", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Step"), cell])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def test_the_html_report_converts_every_notebook_with_one_exporter(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 42 §3.9: an exporter per notebook compiled nbconvert's templates six times, a quarter
    of the seconds report.html took after the last notebook; one exporter converts them all."""
    from {{ cookiecutter.package_name }}.runner import html as report_html

    made = []
    real = report_html._exporter
    monkeypatch.setattr(report_html, "_exporter", lambda: made.append(1) or real())
    run_dir, record = _run_folder(tmp_path)
    for entry in record["notebooks"]:
        entry["executed"] = f"notebooks/{entry['name']}.ipynb"
        _executed(run_dir / entry["executed"])
    write_report(run_dir, record)
    page = write_html(run_dir, record).read_text()
    assert len(re.findall(r'srcdoc="[^"]*hello', page)) == len(NOTEBOOKS) > 1
    assert len(made) == 1


def test_the_html_report_works_offline_with_contents_and_links_to_its_notebooks(
    tmp_path: Path,
) -> None:
    """No script or stylesheet from the network (nbconvert's lab template loads require.js and
    MathJax from a CDN); a table of contents; the report's notebook links jump to the embedded
    copies lower on the page instead of raw .ipynb files."""
    run_dir, record = _run_folder(tmp_path)
    for entry in record["notebooks"]:
        entry["executed"] = f"notebooks/{entry['name']}.ipynb"
        _executed(run_dir / entry["executed"])
    write_report(run_dir, record)
    page = write_html(run_dir, record).read_text()
    frames = re.findall(r'srcdoc="([^"]*)"', page)
    assert len(frames) == len(NOTEBOOKS) and "hello" in html.unescape(frames[0])
    for text in [page, *(html.unescape(frame) for frame in frames)]:
        remote = re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)=[\"']?https?:", text, re.I)
        assert not remote, remote
        assert "cdnjs" not in text and "require.min.js" not in text
    assert "<nav class='toc'>" in page and 'href="#toc_1"' in page and 'id="toc_1"' in page
    assert 'href="notebooks/' not in page
    for name in NOTEBOOKS:
        assert f'href="#notebook-{name}"' in page and f'<details id="notebook-{name}">' in page


def test_the_html_report_is_replaced_whole_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    """report.html is written to a temporary name and renamed: a failure leaves the old one."""
    run_dir, record = _run_folder(tmp_path)
    write_report(run_dir, record)
    (run_dir / "report.html").write_text("the previous report")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_html(run_dir, record)
    assert (run_dir / "report.html").read_text() == "the previous report"
    left = sorted(path.name for path in run_dir.iterdir())
    assert left == ["metrics", "report.html", "report.md"]  # no temporary file stays behind


def test_report_works_for_notebooks_run_in_jupyterlab(tmp_path: Path) -> None:
    """artifacts/interactive has the steps' metrics but no run.json (no runner ran): the report
    is built from what is there, with the notebooks saved with outputs embedded."""
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    run_dir, _ = _run_folder(tmp_path, failed_at="03_train")
    interactive = project / "artifacts" / "interactive"
    interactive.parent.mkdir()
    run_dir.rename(interactive)
    for name in NOTEBOOKS:
        path = project / "notebooks" / f"{name}.ipynb"
        _executed(path)
        if name == "01_data":  # saved without outputs: listed, not embedded
            notebook = nbformat.read(path, as_version=4)
            notebook.cells[1].outputs = []
            nbformat.write(notebook, path)
    done = subprocess.run(
        [sys.executable, "-m", PACKAGE, "report", "--run-dir", "artifacts/interactive"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    report = (interactive / "report.md").read_text()
    assert "Profile **interactive**" in report and "Status: **partial**" in report
    assert "- **00_environment**: no GPU, ran on the CPU" in report
    assert "- **03_train**: not run: no metrics written by this run." in report
    page = (interactive / "report.html").read_text()
    assert '<details id="notebook-00_environment">' in page
    assert '<details id="notebook-01_data">' not in page
    assert not (interactive / "run.json").exists()


def test_version_is_printed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", PACKAGE, "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == f"{PACKAGE} {__version__}"
