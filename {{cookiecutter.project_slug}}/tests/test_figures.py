"""Each step's figures: a real PNG from small metrics, a figure that fails never fails its step,
and the metrics' `figures` list names files that exist.

The drawing tests use hand-written metrics (no TensorFlow op); the step tests run step 0 with a
tiny matmul, the cheapest step that draws a figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from test_figures_shared import assert_png

from {{ cookiecutter.package_name }} import artifacts, figures, parts
from {{ cookiecutter.package_name }}.figures import data as data_figures
from {{ cookiecutter.package_name }}.tasks.image import plots as image_plots

DATA = {
    "dataset": "digits",
    "classes": [str(digit) for digit in range(10)],
    "per_class": {
        "train": {str(digit): 140 + digit for digit in range(10)},
        "validation": {str(digit): 35 + digit % 2 for digit in range(10)},
    },
    "steps": [
        {
            "name": name,
            "examples_per_sec": rate,
            "first_epoch_examples_per_sec": rate * 0.8,
            "speedup_vs_naive": rate / 9000,
        }
        for name, rate in (
            ("naive", 9000.0),
            ("+ parallel map", 10500.0),
            ("+ batch before parse", 61000.0),
            ("+ cache", 410000.0),
            ("+ shuffle", 300000.0),
            ("+ prefetch", 350000.0),
        )
    ],
    "speedup_vs_naive": 38.9,
    "batch_size": 64,
    "cpu_count": 2,
}


DRAWN_DATA = [("data_throughput", DATA), ("data_classes", DATA)]


@pytest.mark.parametrize(("name", "metrics"), DRAWN_DATA, ids=[name for name, _ in DRAWN_DATA])
def test_each_data_figure_is_a_png(tmp_path: Path, name: str, metrics: dict[str, Any]) -> None:
    path = figures.draw(tmp_path, name, metrics, say=pytest.fail)
    assert path == tmp_path / artifacts.FIGURES_DIR / f"{name}.png"
    assert_png(path)


TOO_SHORT = {  # issue 42 §1.6: a benchmark too short to compare writes its ratios as null
    **DATA,
    "steps": [{**row, "speedup_vs_naive": None} for row in DATA["steps"]],
    "speedup_vs_naive": None,
    "too_short": True,
}


def test_the_throughput_figure_draws_a_benchmark_too_short_to_compare(tmp_path: Path) -> None:
    """Null ratios draw the rates with no × label, and the title says it was too brief."""
    assert_png(figures.draw(tmp_path, "data_throughput", TOO_SHORT, say=pytest.fail))


TWO_ROWS = {  # a benchmark of two rows, as the tables' Parquet-against-CSV reading writes it
    **DATA,
    "steps": [  # a 29,305-row table's rows/s, as 01 measured them: bars of nearly one length
        {**DATA["steps"][0], "label": "CSV text", "examples_per_sec": 2.17e6},
        {**DATA["steps"][-1], "name": "configured", "label": "Parquet", "examples_per_sec": 2.64e6},
    ],
    "figure_title": "Reading the training split: Parquet 1.2× CSV text",
}


@pytest.mark.parametrize("metrics", [DATA, TWO_ROWS], ids=["pipeline", "two_rows"])
def test_the_throughput_legend_covers_no_label(
    tmp_path: Path, monkeypatch, metrics: dict[str, Any]
) -> None:
    """Issue 33: the legend sat over the value labels written past the bars. Every text of the
    axes (labels, ticks, the title) stays clear of it, and a row's label names it."""
    drawn: list[Figure] = []
    monkeypatch.setattr(data_figures.style, "write", lambda fig, path: drawn.append(fig) or path)
    data_figures.plot_throughput(metrics, tmp_path / "throughput.png")
    (fig,) = drawn
    fig.draw_without_rendering()  # lays the constrained layout out, as saving does
    renderer = fig._get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    (legend,) = legends
    box = legend.get_window_extent(renderer)
    (ax,) = fig.axes
    texts = [*ax.texts, *ax.get_yticklabels(), *ax.get_xticklabels(), fig._suptitle]
    shown = [text for text in texts if text.get_text()]
    assert shown, "no text drawn"
    for text in shown:
        assert not box.overlaps(text.get_window_extent(renderer)), text.get_text()
    names = [label.get_text() for label in ax.get_yticklabels()]
    wanted = [step.get("label", step["name"]) for step in metrics["steps"]]
    assert sorted(names) == sorted(wanted)


@pytest.mark.parametrize(("classes", "channels"), [(3, 1), (25, 3)])
def test_sample_grid_is_a_png(tmp_path: Path, classes: int, channels: int) -> None:
    names = [f"class {index}" for index in range(classes)]  # 25: the first 20 rows are shown
    images = np.random.default_rng(0).integers(0, 255, (8 * classes, 8, 8, channels), np.uint8)
    labels = np.repeat(np.arange(classes), 8)
    assert_png(image_plots.draw_samples(images, labels, names, tmp_path / "samples.png"), 300)


def test_the_class_counts_show_the_test_split_when_there_is_one(
    tmp_path: Path, monkeypatch
) -> None:
    """Three splits, three bars per class, each named with its total in the legend."""
    drawn: list[Figure] = []
    monkeypatch.setattr(data_figures.style, "write", lambda fig, path: drawn.append(fig) or path)
    per_class = {**DATA["per_class"], "test": {str(digit): 18 for digit in range(10)}}
    data_figures.plot_classes({**DATA, "per_class": per_class}, tmp_path / "classes.png")
    (ax,) = drawn[0].axes
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == ["train (1,445)", "validation (355)", "test (180)"]
    assert len(ax.patches) == 30


def test_every_figure_name_is_in_the_contract() -> None:
    from {{ cookiecutter.package_name }}.export import entry as export_step
    from {{ cookiecutter.package_name }}.tasks.image import data_step

    named = {name for names in artifacts.FIGURES.values() for name in names}
    by_steps = set(data_step.DRAWERS) | set(export_step.DRAWERS)  # they read files back
    assert set(figures.DRAWERS) | by_steps <= named
    by_parts = {name for names in parts.merged("FIGURES").values() for name in names}
    drawn_elsewhere = named - set(figures.DRAWERS) - by_steps - by_parts  # a part draws its own
    assert drawn_elsewhere == {artifacts.BATCH_FINDER, artifacts.LR_FINDER}


def test_the_steps_draw_the_figures_that_read_images_back(
    run_dir: Path, exported_run: Path, tmp_path: Path
) -> None:
    """data_step and export.entry read the images and hand figures the arrays (figures import no
    step): the sample grid from data/, the export's mistakes from the split it checked."""
    from {{ cookiecutter.package_name }}.export import entry as export_step
    from {{ cookiecutter.package_name }}.tasks.image import data_step

    classes = {"classes": [str(digit) for digit in range(10)]}
    assert_png(data_step.draw_samples(run_dir, classes, tmp_path / "samples.png"), 300)
    wrong = [{"index": i, "label": 0, "predicted": 1, "confidence": 0.9} for i in range(6)]
    metrics = {"confusion_matrix": [[2, 1, 0], [0, 3, 0], [0, 0, 4]], "misclassified": wrong}
    for name, drawer in export_step.DRAWERS.items():
        assert_png(drawer(exported_run, metrics, tmp_path / f"{name}.png"), 300)
    assert export_step.draw_misclassified(exported_run, {}, tmp_path / "none.png") is None
