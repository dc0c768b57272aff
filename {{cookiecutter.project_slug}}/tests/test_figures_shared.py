"""The figures every task's steps draw (figures/): environment, training curves, the export's
confusion, the optimizer's latency and throughput, and how `figures.save` lists, skips and
survives a figure; task-free, so every bake runs them. The data step's figures are tested with
the task that draws them.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

from {{ cookiecutter.package_name }} import artifacts, env, figures
from {{ cookiecutter.package_name }}.figures import environment as environment_figures
from {{ cookiecutter.package_name }}.figures import export as export_figures
from {{ cookiecutter.package_name }}.figures import optimize as optimize_figures

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

ENVIRONMENT = {
    "matmul": [
        {"device": "CPU:0", "size": 1024, "gflops": 48.2, "speedup_vs_cpu": 1.0},
        {"device": "GPU:0", "size": 1024, "gflops": 14321.0, "speedup_vs_cpu": 297.1},
    ]
}
TRAIN = {
    "model": "dense",
    "best_epoch": 3,
    "val_accuracy": 0.9722,
    "parameter_sources": {"batch_size": "given", "learning_rate": "default"},
    "history": [
        {
            "epoch": epoch,
            "loss": 1.5 / epoch,
            "val_loss": 1.2 / epoch + 0.02 * epoch,
            "accuracy": 1 - 0.4 / epoch,
            "val_accuracy": 1 - 0.3 / epoch,
        }
        for epoch in range(1, 5)
    ],
}


def _line(name: str, p50: float, **extra: Any) -> dict[str, Any]:
    generator = np.random.default_rng(len(name))
    calls = np.round(p50 * generator.lognormal(0, 0.2, 200), 3).tolist()
    sizes = {"1": 1e3 / p50, "32": 32e3 / p50 / 4, "256": 256e3 / p50 / 20}
    timings = {"1": calls, "32": calls[:20], "256": calls[:20]}
    return {
        "name": name,
        "p50_ms": p50,
        "p99_ms": p50 * 1.6,
        "throughput": sizes,
        "timings_ms": timings,
        **extra,
    }


OPTIMIZE = {
    "batch_sizes": [1, 32, 256],
    "baselines": [_line("model.predict", 31.0), _line("savedmodel", 1.9)],
    "backends": [
        _line("onnx", 0.41, precision="fp32", status="ran"),
        {"name": "onnx", "precision": "int8", "status": "skipped", "reason": "not asked"},
    ],
    "best_backend": "onnx (fp32)",
    "best_vs_savedmodel_batch1": 4.6,
}
DRAWN = [
    ("environment_matmul", ENVIRONMENT),
    ("train_curves", TRAIN),
    ("optimize_latency", OPTIMIZE),
    ("optimize_throughput", OPTIMIZE),
]


def assert_png(path: Path, min_width: int = 400) -> None:
    """A PNG file (signature) of a plausible size: its IHDR width and height, and its bytes."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    assert width >= min_width and 150 <= height <= 3000, (width, height)
    assert path.stat().st_size > 8_000, f"{path} is nearly empty ({path.stat().st_size} bytes)"


def test_latency_labels_give_p99_only_from_a_hundred_calls() -> None:
    """The plot's numbers: p99 where 100 calls or more were timed, the number of calls always."""
    many = _line("onnx", 0.41, precision="fp32", status="ran", calls={"1": 200})
    few = {**_line("model.predict", 31.0, calls={"1": 12}), "p99_ms": None}
    assert optimize_figures._numbers(many) == "p50 0.41 ms, p99 0.656 ms\n200 calls"
    assert optimize_figures._numbers(few) == "p50 31 ms, no p99\n12 calls"
    assert "per-call overhead" in optimize_figures._label(few)


def test_show_returns_nothing_so_a_cell_echoes_no_paths(tmp_path: Path, capsys) -> None:
    """A notebook cell ending in figures.show(...) shows the figure only: no [PosixPath(...)]."""
    figures.draw(tmp_path, "optimize_latency", OPTIMIZE, say=pytest.fail)
    metrics = {"figures": [f"{artifacts.FIGURES_DIR}/optimize_latency.png"]}
    assert figures.show(tmp_path, metrics, "optimize_latency") is None
    assert "PosixPath" not in capsys.readouterr().out


@pytest.mark.parametrize(("name", "metrics"), DRAWN, ids=[name for name, _ in DRAWN])
def test_each_figure_is_a_png(tmp_path: Path, name: str, metrics: dict[str, Any]) -> None:
    path = figures.draw(tmp_path, name, metrics, say=pytest.fail)
    assert path == tmp_path / artifacts.FIGURES_DIR / f"{name}.png"
    assert_png(path)


@pytest.mark.parametrize("epochs", [1, 2, 4])
def test_the_learning_curves_tick_whole_epochs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, epochs: int
) -> None:
    """One epoch is ticked 1, not 0.96, 0.975, ... 1.05 (fractional ticks of a single point)."""
    from {{ cookiecutter.package_name }}.figures import train as train_figures

    drawn: list[Figure] = []
    monkeypatch.setattr(train_figures.style, "write", lambda fig, path: drawn.append(fig) or path)
    train_figures.plot_curves({**TRAIN, "history": TRAIN["history"][:epochs]}, tmp_path / "c.png")
    drawn[0].canvas.draw()
    for ax in drawn[0].axes[:2]:
        low, high = ax.get_xlim()
        ticks = [tick for tick in ax.get_xticks() if low <= tick <= high]
        assert ticks and all(float(tick).is_integer() for tick in ticks), ticks
        assert 1 in ticks


def test_the_confusion_matrix_counts_the_exports_answers(tmp_path: Path) -> None:
    """Rows: true classes, columns: the export's answers; mistakes come most confident first."""
    from {{ cookiecutter.package_name }}.export.parity import served_errors

    labels = np.array([0, 0, 1, 2, 2, 2])
    predicted = np.array([0, 1, 1, 2, 0, 2])
    probabilities = np.full((6, 3), 0.1)
    probabilities[1, 1], probabilities[4, 0] = 0.6, 0.9
    found = served_errors(labels, predicted, probabilities, 3)
    assert found["confusion_matrix"] == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    assert found["served_accuracy"] == pytest.approx(4 / 6)
    assert [(m["index"], m["label"], m["predicted"]) for m in found["misclassified"]] == [
        (4, 2, 0),
        (1, 0, 1),
    ]
    metrics = {"version": 1, **found}
    path = export_figures.plot_confusion(metrics, ["a", "b", "c"], tmp_path / "confusion.png")
    assert_png(path, 300)


def test_save_lists_the_files_it_wrote(tmp_path: Path) -> None:
    listed = figures.save(tmp_path, "optimize", OPTIMIZE, say=pytest.fail)
    assert listed == ["figures/optimize_latency.png", "figures/optimize_throughput.png"]
    assert all((tmp_path / relative).is_file() for relative in listed)


def test_nothing_to_draw_is_no_file_and_no_error(tmp_path: Path) -> None:
    assert figures.save(tmp_path, "optimize", {"baselines": []}, say=pytest.fail) == []
    assert list((tmp_path / artifacts.FIGURES_DIR).glob("*.png")) == []


def test_a_finders_figure_is_listed_when_training_used_it(tmp_path: Path) -> None:
    finder = artifacts.figure_path(tmp_path, artifacts.BATCH_FINDER)
    finder.write_bytes(PNG_SIGNATURE)
    given = figures.save(tmp_path, "train", TRAIN, say=pytest.fail)
    assert given == ["figures/train_curves.png"]  # batch_size was given: an old figure is not it
    found = {**TRAIN, "parameter_sources": {"batch_size": "batch-size finder"}}
    assert figures.save(tmp_path, "train", found, say=pytest.fail) == [
        "figures/train_curves.png",
        "figures/batch_finder.png",
    ]


def test_a_failing_figure_is_a_sentence_and_no_file(tmp_path: Path) -> None:
    said: list[str] = []
    broken = {**TRAIN, "history": [{"epoch": 1}]}  # no loss: the drawing raises
    assert figures.save(tmp_path, "train", broken, say=said.append) == []
    assert said == ["Figure train_curves was not drawn (KeyError: 'loss')."]
    assert not (tmp_path / artifacts.FIGURES_DIR / "train_curves.png").exists()


def test_the_step_writes_its_figure_and_lists_it(tmp_path: Path) -> None:
    report = env.run(tmp_path, env.Params(matmul_size=64, matmul_repeats=1), verbose=False)
    assert report["figures"] == ["figures/environment_matmul.png"]
    saved = artifacts.read_metrics(tmp_path, "environment")
    assert saved["figures"] == report["figures"]
    assert_png(tmp_path / saved["figures"][0])


def test_a_figure_that_raises_leaves_the_step_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(metrics: dict[str, Any], path: Path) -> Path:
        raise RuntimeError("no display here")

    monkeypatch.setattr(environment_figures, "plot_matmul", broken)
    report = env.run(tmp_path, env.Params(matmul_size=64, matmul_repeats=1), verbose=False)
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "Figure environment_matmul was not drawn (RuntimeError: no display here)."
    )
    assert report["figures"] == [] and report["matmul"]
    saved = json.loads((tmp_path / artifacts.METRICS_DIR / "environment.json").read_text())
    assert saved["figures"] == [] and saved["matmul"] == report["matmul"]
    assert list((tmp_path / artifacts.FIGURES_DIR).glob("*.png")) == []
