"""Every shape of table a user may bring (issue 42 §1.3, §1.4, §3.1): numbers only, categories
only, one feature column, three classes, a rare positive class. 01's schema table, 03's score lines
and the whole data → train → export → optimize chain work for each; where one class dominates,
the scores say what answering it to every row would score."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from {{ cookiecutter.package_name }} import export, optimize, {% if cookiecutter.include_serving %}tasks, {% endif %}train
{%- if cookiecutter.include_serving %}
from {{ cookiecutter.package_name }}.export.rest import answer_rest
{%- endif %}
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.tabular import data_plots, data_step, plots, scores
from {{ cookiecutter.package_name }}.tasks.tabular.schema import infer_schema

ROWS = 300


def table(shape: str, rows: int = ROWS, seed: int = 0) -> tuple[pd.DataFrame, str]:
    """(a small table of this shape, its label column); the label depends on the features."""
    rng = np.random.default_rng(seed)
    if shape == "numbers":  # coded integer columns, a Yes/No label with about 10 % positives
        codes = rng.integers(0, 10, (rows, 4))
        score = codes[:, 0] + codes[:, 1] / 2 + rng.normal(0, 1, rows)
        frame = pd.DataFrame(codes, columns=[f"code{i}" for i in range(4)])
        frame["caravan"] = np.where(score > np.quantile(score, 0.9), "Yes", "No")
        return frame, "caravan"
    if shape == "categories":
        frame = pd.DataFrame({"shape": rng.choice(list("abcd"), rows)})
        frame["colour"] = rng.choice(["red", "blue"], rows)
        frame["label"] = np.where((frame["shape"] == "a") | (frame["colour"] == "red"), "y", "n")
        return frame, "label"
    if shape == "one":
        x = rng.normal(0, 1, rows)
        return pd.DataFrame({"x": x, "target": np.where(x > 0, "pos", "neg")}), "target"
    if shape == "one_category":  # no numbers, no cross: the wide side is that column alone
        city = rng.choice(["north", "south", "east"], rows)
        noise = rng.random(rows) < 0.1
        return pd.DataFrame({"city": city, "rain": (city == "north") ^ noise}), "rain"
    species = rng.choice(["Adelie", "Gentoo", "Chinstrap"], rows, p=[0.45, 0.35, 0.2])
    bill = pd.Series(species).map({"Adelie": 38.8, "Gentoo": 47.5, "Chinstrap": 48.8})
    frame = pd.DataFrame({"bill_length_mm": bill + rng.normal(0, 2, rows)})
    frame["island"] = np.where(species == "Gentoo", "Biscoe", rng.choice(["Dream", "Biscoe"], rows))
    frame["species"] = species
    return frame, "species"


@pytest.mark.parametrize("shape", ["numbers", "categories", "one", "species"])
def test_01s_schema_table_has_every_statistic_for_every_shape(shape):
    frame, label = table(shape)
    schema, _ = infer_schema(frame.drop(columns=label))
    split = {"count": ROWS, "per_class": [ROWS]}
    meta = {"task": "t", "dataset": "csv", "classes": ["c"], "num_classes": 1, "schema": schema}
    meta |= {"splits": {"train": split, "validation": split}, "fingerprint": "f"}
    metrics = data_step.data_metrics(meta, {})
    shown = data_plots.schema_table(metrics)
    assert list(shown.columns) == list(data_plots.SCHEMA_COLUMNS)
    assert list(shown.index) == [c for c in frame.columns if c != label]
    assert "<table" in data_plots.schema_view(metrics).to_html()


def test_03s_lines_for_three_classes_leave_out_what_is_not_measured():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 20)
    probabilities = rng.dirichlet([1, 1, 1], 60)
    metrics = {f"test_{k}": v for k, v in scores.ranking_scores(labels, probabilities).items()}
    metrics |= scores.majority(labels, [50, 30, 20], ["Adelie", "Gentoo", "Chinstrap"])
    metrics["baseline"] = {"name": "trees", "test_accuracy": 0.9, "roc_auc": 0.95, "pr_auc": None}
    lines = scores.test_lines(metrics)
    assert lines[0] == f"  roc_auc {metrics['test_roc_auc']:.4f}"
    assert lines[1:] == [
        "  answering 'Adelie' to every row scores accuracy 0.3333",
        "  trees: accuracy 0.9000, ROC AUC 0.9500",
    ]


def test_03s_figure_for_three_classes_is_each_classs_roc_curve(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 20)
    probabilities = np.eye(3)[labels] * 0.5 + rng.dirichlet([1, 1, 1], 60) * 0.5
    curves = scores.class_curves(labels, probabilities, ["Adelie", "Gentoo", "Chinstrap"])
    assert list(curves["roc_per_class"]) == ["Adelie", "Gentoo", "Chinstrap"]
    metrics = {"test_curves": curves, "test_roc_auc": 0.9}
    drawn = plots.plot_scores(tmp_path, metrics, tmp_path / "train_scores.png")
    assert drawn is not None and drawn.stat().st_size > 10_000


def test_a_rare_positive_class_says_what_answering_no_to_every_row_scores():
    labels = np.array([1] * 2 + [0] * 58)
    said = scores.majority(labels, [900, 30], ["No", "Yes"])
    assert said == {
        "test_majority_class": "No",
        "test_majority_accuracy": pytest.approx(58 / 60),
        "test_dominated": True,
    }
    assert not scores.majority(np.arange(60) < 20, [60, 30], ["a", "b"])["test_dominated"]
    lines = scores.test_lines({"test_roc_auc": 0.95, "test_pr_auc": 0.5, **said})
    assert lines[-1] == (
        "  answering 'No' to every row scores accuracy 0.9667: one class dominates, read the "
        "ranking scores"
    )
{%- if cookiecutter.include_serving %}


def test_rest_rows_of_a_table_of_one_column_are_answered_as_named_columns(tmp_path):
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def signature(x):
        share = tf.where(tf.math.is_nan(x), 0.5, tf.sigmoid(x))
        return {"probabilities": tf.stack([1 - share, share], axis=1)}

    module = tf.Module()
    module.serve = signature
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": signature})
    one = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    body = {"instances": [{"x": 0.0}, {"x": float("nan")}]}  # as a one-column table sends
    answer = answer_rest(one, body)
    assert [row["probabilities"] for row in answer["predictions"]] == [[0.5, 0.5]] * 2
{%- endif %}


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["numbers", "categories", "one", "one_category", "species"])
def test_the_whole_chain_runs_on_each_shape_of_table(shape, tmp_path):
    frame, label = table(shape, rows=600)
    source = tmp_path / f"{shape}.csv"
    frame.to_csv(source, index=False)
    folder = tmp_path / "run"
    params = data_step.Params(dataset="csv", data_dir=str(source), label_column=label)
    data = entry.run(folder, params, verbose=False)
    assert len(data_plots.schema_table(data)) == len(frame.columns) - 1
    trained = train.run(
        folder, train.Params(epochs=2, batch_size=32, learning_rate=0.01), verbose=False
    )
    assert isinstance(trained["test_accuracy"], float) and trained["test_roc_auc"] > 0.7
    assert scores.test_lines(trained)[0].startswith("  roc_auc ")
    assert "figures/train_scores.png" in trained["figures"]
    exported = export.run(folder, export.Params(version=1), verbose=False)
    assert exported["parity_ok"], exported
{%- if cookiecutter.include_serving %}
    loaded = __import__("tensorflow").saved_model.load(str(folder / "export" / "1"))
    rows, _ = tasks.current().examples(folder, "test", 3)
    answer = answer_rest(loaded.signatures["serving_default"], export.rest_payload(rows))
    assert len(answer["predictions"]) == 3, answer
{%- endif %}
    optimized = optimize.run(
        folder,
        optimize.Params(backends="onnx", precisions="fp32", batch_sizes="1", iterations=5),
        verbose=False,
    )
    assert [b["status"] for b in optimized["backends"] if b["name"] == "onnx"] == ["ran"]


def _titles_drawn(monkeypatch, module, draw) -> list:
    """The figure `draw` makes (through `module.style.write`), laid out, and its titles' boxes."""
    drawn = []
    monkeypatch.setattr(module.style, "write", lambda fig, path: drawn.append(fig) or path)
    draw()
    (fig,) = drawn
    fig.draw_without_rendering()  # lays the constrained layout out, as saving does
    renderer = fig._get_renderer()
    titles = [ax.title for ax in fig.axes] + [fig._suptitle]
    shown = [title for title in titles if title is not None and title.get_text()]
    return fig, [title.get_window_extent(renderer) for title in shown]


def test_the_scores_and_confusion_titles_stay_inside_the_figure_and_apart(tmp_path, monkeypatch):
    """Issue 42 §3.6: census's ROC and precision-recall titles ran into one line, and the
    2-class confusion matrix's title was cut on both sides."""
    from {{ cookiecutter.package_name }}.figures import export as export_figures

    x = np.linspace(0, 1, 20).tolist()
    curves = {
        "calibration": {"predicted": x, "observed": x, "counts": [100] * 20},
        "roc": {"fpr": x, "tpr": np.sqrt(x).tolist()},
        "pr": {"recall": x, "precision": (1 - np.array(x) / 2).tolist()},
    }
    others = [{"name": "logistic_regression_one_hot", "roc_auc": 0.906, "pr_auc": 0.761}]
    metrics = {
        "test_curves": curves, "test_brier": 0.1, "test_roc_auc": 0.905, "test_pr_auc": 0.77,
        "test_positive_share": 0.24,
        "baseline": {"name": "hist_gradient_boosting", "roc_auc": 0.927, "pr_auc": 0.823,
                     "others": others},
    }  # fmt: skip
    confusion = {
        "confusion_matrix": [[11500, 935], [1500, 2346]], "parity_split": "test",
        "version": 1, "served_accuracy": 0.8512,
    }  # fmt: skip
    figures = [
        lambda: plots.plot_scores(tmp_path, metrics, tmp_path / "s.png"),
        lambda: export_figures.plot_confusion(confusion, ["<=50K", ">50K"], tmp_path / "c.png"),
    ]
    for module, draw in zip([plots, export_figures], figures, strict=True):
        fig, boxes = _titles_drawn(monkeypatch, module, draw)
        inside = fig.bbox
        assert boxes
        for box in boxes:
            assert inside.x0 <= box.x0 and box.x1 <= inside.x1, (box, inside)
            assert box.y1 <= inside.y1
        for index, box in enumerate(boxes):
            assert not any(box.overlaps(other) for other in boxes[index + 1 :]), boxes
