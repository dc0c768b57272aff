"""What a table bug would lie about, each pinned by the smallest check that tells it apart: cells
read as written, a column's kind, statistics and preprocessing from train alone, the
normalization, the order and the share of rows each epoch and input pipeline reads, the shared
embedding table, the wide side's sum, DCN-v2's residual, and the threshold from validation.
`python tests/mutate.py tables` runs these against every mutant of the table modules."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from tables import SCHEMA, make_table_run

from {{ cookiecutter.package_name }}.tasks.tabular import (
    dataset,
    features,
    models,
    scores,
    screens,
    sources,
    tables,
)
from {{ cookiecutter.package_name }}.tasks.tabular.columns import SchemaError
from {{ cookiecutter.package_name }}.tasks.tabular.schema import infer_schema, kinds
from {{ cookiecutter.package_name }}.tasks.tabular.sources import load_table


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_table_run(tmp_path_factory.mktemp("table"))


def test_cells_are_stripped_so_padded_values_are_one_category_and_one_class(tmp_path):
    path = tmp_path / "rows.csv"
    cities = ("paris", "paris  ", "rome", "rome ")
    body = "city,amount,label\n" + "".join(
        f"{cities[i % 4]},{i}  ,{('no', 'yes ')[i % 2]}\n" for i in range(40)
    )
    path.write_text(body, encoding="utf-8")
    table = load_table("csv", path, label_column="label", seed=0)
    assert table.classes == ["no", "yes"]
    seen = pd.concat(table.frames.values())
    assert set(seen["city"]) == {"paris", "rome"}
    assert set(seen["amount"]) == {str(i) for i in range(40)}


def test_a_column_of_words_with_one_number_is_categorical_not_numeric():
    words = pd.DataFrame({"code": ["ab", "cd", "7", "ef", None]}, dtype=object)
    schema, _ = infer_schema(words, crosses="none")
    assert kinds(schema) == {"code": "categorical"}
    assert schema["categorical"][0]["distinct"] == 4


def test_statistics_and_preprocessing_are_fitted_on_train_alone(tmp_path):
    """Test rows far from train's (numbers 1000x, a category only test holds) must not move the
    schema's mean nor enter the FeatureSpace's vocabulary (capped at train's distinct values)."""
    path = tmp_path / "rows.csv"
    kinds = ["c" if i % 20 == 0 else "ab"[i // 2 % 2] for i in range(80)]  # "c" 4 times
    body = "x,kind,y\n" + "".join(f"{i % 10},{kinds[i]},{'ny'[i % 2]}\n" for i in range(80))
    path.write_text(body, encoding="utf-8")
    table = load_table("csv", path, label_column="y", seed=0)
    test = table.frames["test"]
    table.frames["test"] = test.assign(x=[str(10_000 + i) for i in range(len(test))], kind="zz")
    request = {"categorical_columns": [], "min_count": 1, "crosses": "none"}
    meta = tables.write_data(tmp_path, table, request)
    train = pd.to_numeric(table.frames["train"]["x"])
    assert meta["schema"]["numeric"][0]["mean"] == pytest.approx(train.mean())
    assert meta["schema"]["numeric"][0]["max"] == train.max()
    space = dataset.feature_space(tmp_path, meta)
    # test's "zz" (8 rows) outnumbers train's "c": adapted on all splits, it would take c's index
    rows = {"x": tf.constant([1.0, 1.0]), "kind": tf.constant(["zz", "c"])}
    encoded = np.ravel(space(features.filled(rows, meta["schema"]))["kind"]).tolist()
    assert encoded[0] == 0 and encoded[1] != 0  # "zz" out of vocabulary, "c" in it


def test_the_feature_space_is_fitted_in_one_pass_like_adapt(tmp_path, monkeypatch):
    """01 fits each part on its whole column (FeatureSpace.adapt walks the data once per part:
    5.6 of the table smoke chain's CPU seconds): same vocabularies and statistics as adapt, the
    bins at the column's own quantiles; prepare_features never calls adapt."""
    from tables import frame

    rows = frame(600, seed=3)
    columns = {
        name: tf.constant(value) for name, value in features.raw_columns(rows, SCHEMA).items()
    }
    walked, fitted = features.build_feature_space(SCHEMA), features.build_feature_space(SCHEMA)
    walked.adapt(
        tf.data.Dataset.from_tensor_slices(features.filled(columns, SCHEMA)).batch(
            features.ADAPT_BATCH
        )
    )
    assert features.fit_in_one_pass(fitted, features.filled(columns, SCHEMA)) == "one pass"
    inputs = features.filled(columns, SCHEMA)
    want, got = walked(inputs), fitted(inputs)
    for name in want:
        if not name.endswith(features.BINNED):
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), name)
    bins = fitted.preprocessors["amount" + features.BINNED].bin_boundaries
    quantiles = np.quantile(rows["amount"], [0.25, 0.5, 0.75])  # a standard normal's
    assert len(bins) == features.NUMERIC_BINS - 1
    np.testing.assert_allclose(np.asarray(bins)[[3, 7, 11]], quantiles, atol=0.05)

    rows.to_parquet(tmp_path / "train.parquet")
    meta = {"schema": SCHEMA, "splits": {"train": {"file": "train.parquet"}}}

    def refused(*args, **kwargs):
        raise AssertionError("FeatureSpace.adapt: one pass over the data per part")

    monkeypatch.setattr(features.FeatureSpace, "adapt", refused)
    assert features.prepare_features(tmp_path, meta)["layout"] == features.layout(SCHEMA)
    assert (tmp_path / features.FEATURE_SPACE_FILE).is_file()


def test_train_rows_keeps_that_many_training_rows_and_says_so(tmp_path):
    """The smoke profile's 01 keeps 4,000 of census's training rows (02 and 03 fit on them): each
    class in proportion, validation and test whole (every score on the same rows), one note, and
    a folder of all rows is not reused for it."""
    path = tmp_path / "rows.csv"
    body = "x,kind,y\n" + "".join(f"{i % 7},{'abc'[i % 3]},{'nyy'[i % 3]}\n" for i in range(300))
    path.write_text(body, encoding="utf-8")
    options = {"data_dir": str(path), "label_column": "y", "crosses": "none", "seed": 0}
    whole = tables.prepare(tmp_path / "all", "csv", **options)
    kept = tables.prepare(tmp_path / "some", "csv", **options, train_rows=60)
    counts = {split: info["count"] for split, info in kept["splits"].items()}
    assert counts["train"] == 60 and whole["splits"]["train"]["count"] > 60
    assert counts["validation"] == whole["splits"]["validation"]["count"]
    assert counts["test"] == whole["splits"]["test"]["count"]
    assert kept["splits"]["train"]["per_class"] == [20, 40]  # n : y = 1 : 2, as in all rows
    note = f"train: kept 60 of {whole['splits']['train']['count']:,} rows (train_rows=60)"
    assert any(line.startswith(note) for line in kept["notes"])
    assert kept["request"]["train_rows"] == 60 and "train_rows" not in whole["request"]


def test_normalization_divides_by_the_std_not_the_variance():
    space = features.build_feature_space(SCHEMA)
    normalize = space.preprocessors["age"]
    assert float(np.ravel(normalize(np.array([[52.0]], np.float32)))[0]) == pytest.approx(1.0)


def test_training_rows_come_in_a_new_order_each_epoch(run):
    data = dataset.make_dataset(run, "train", 600, seed=3)
    first = np.concatenate([x.numpy() for x, _ in data])
    second = np.concatenate([x.numpy() for x, _ in data])
    assert len(first) == len(second) == 600
    assert not np.array_equal(first, second)  # each pass over the data reshuffles
    assert np.allclose(np.sort(first[:, 0]), np.sort(second[:, 0]))  # the same rows


def test_input_pipelines_read_disjoint_rows_that_cover_the_split(run):
    seen = []
    for index in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index)
        data = dataset.make_dataset(run, "test", 32, training=False, input_context=context)
        seen.append(np.concatenate([x.numpy() for x, _ in data]))
    inputs, _ = dataset.model_examples(run, "test", 200)
    np.testing.assert_allclose(seen[0], inputs[0::2], rtol=1e-6)
    np.testing.assert_allclose(seen[1], inputs[1::2], rtol=1e-6)


def test_each_categorical_column_gets_its_own_rows_of_the_embedding_table():
    columns = models.Columns(1, [3, 4, 5])
    numbers, ids = columns(np.array([[0.5, 1, 2, 0]], np.float32))
    assert np.ravel(numbers).tolist() == [0.5]
    assert np.ravel(ids).tolist() == [1, 3 + 2, 3 + 4 + 0]


def test_the_wide_side_sums_one_weight_per_column():
    slots = [{"name": c, "kind": "categorical", "size": 4} for c in "abc"]
    model = models.build_model("wide_deep", slots, 2, width=8, embed=8)
    for layer in model.layers:  # every weight 0 but the wide table's class-1 column
        for weight in layer.weights:
            weight.assign(np.zeros(weight.shape, weight.dtype))
    wide = model.get_layer("wide")
    wide.embeddings.assign(np.tile(np.array([[0.0, 1.0]], np.float32), (12, 1)))
    probability = float(model.predict(np.array([[1, 2, 3]], np.float32), verbose=0)[0, 1])
    assert probability == pytest.approx(1 / (1 + np.exp(-3.0)), rel=1e-5)  # logit 3, not 1


def test_a_dcn_cross_layer_keeps_its_input_when_its_weights_are_zero():
    cross = models.Cross()
    x0 = np.array([[1.0, 2.0]], np.float32)
    x = np.array([[3.0, -4.0]], np.float32)
    cross([x0, x])
    cross.dense.kernel.assign(np.zeros((2, 2), np.float32))
    cross.dense.bias.assign(np.zeros(2, np.float32))
    np.testing.assert_allclose(np.asarray(cross([x0, x])), x)  # x0 * (0 x + 0) + x


def test_the_decision_threshold_is_chosen_on_validation_not_test():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    noisy = np.clip(labels * 0.3 + rng.random(200) * 0.7, 0, 1)
    validation = (labels, np.stack([1 - noisy, noisy], axis=1))
    test_positive = np.clip(1 - labels * 0.5 - rng.random(200) * 0.3, 0, 1)
    test = (labels, np.stack([1 - test_positive, test_positive], axis=1))
    report = scores.binary_report(test, validation)
    chosen = scores.best_threshold(labels, noisy)
    assert chosen != scores.best_threshold(labels, test_positive)
    assert report["threshold"] == chosen and report["threshold_from"] == "validation (best F1)"
    assert report["test_accuracy_at_threshold"] == np.mean((test_positive >= chosen) == labels)


def test_the_best_threshold_is_the_one_of_highest_f1():
    # F1 at each threshold: 0.1 -> 0.667, 0.35 -> 0.8, 0.4 -> 0.5, 0.8 -> 0.667
    labels, positive = np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])
    assert scores.best_threshold(labels, positive) == pytest.approx(0.35)
    # ranked: a negative first (precision and recall 0 there: F1 0, not 0/0), the best F1 (0.5)
    # where precision + recall is exactly 1, a lower F1 (0.444) taking every row
    labels = np.array([0, 1, 0, 0, 0, 0, 1])
    positive = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    assert scores.best_threshold(labels, positive) == pytest.approx(0.8)
    # the best F1 at the highest threshold (only the top row positive) is a candidate too
    assert scores.best_threshold(np.array([0, 1]), np.array([0.2, 0.9])) == pytest.approx(0.9)


def test_binary_scores_without_validation_use_half_and_say_so():
    labels = np.array([0, 0, 1, 1, 1])
    positive = np.array([0.2, 0.4, 0.5, 0.9, 0.4])
    report = scores.binary_report((labels, np.stack([1 - positive, positive], axis=1)), None)
    assert (report["threshold"], report["threshold_from"]) == (0.5, "default")
    assert report["test_accuracy_at_0.5"] == pytest.approx(4 / 5)  # 0.5 counts as positive
    assert report["test_accuracy_at_threshold"] == pytest.approx(4 / 5)
    assert report["test_roc_auc"] == pytest.approx(5.5 / 6)
    assert report["test_brier"] == pytest.approx(np.mean((positive - labels) ** 2))
    assert report["test_positive_share"] == pytest.approx(0.6)
    calibration = report["test_curves"]["calibration"]
    assert calibration["counts"] == [0, 0, 1, 0, 2, 1, 0, 0, 0, 1]  # tenths of [0, 1]
    assert set(calibration) == {"predicted", "observed", "counts"}
    roc = report["test_curves"]["roc"]
    assert roc["fpr"][0] == 0 and roc["tpr"][-1] == 1


def test_curves_are_thinned_to_about_two_hundred_points_keeping_both_ends():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 5000)
    positive = np.round(rng.random(5000), 6)
    drawn = scores.curves(labels, positive)
    fpr = drawn["roc"]["fpr"]
    assert len(drawn["calibration"]["predicted"]) == len(drawn["calibration"]["observed"]) == 10
    assert 150 <= len(fpr) <= 260 and fpr[0] == 0.0 and fpr[-1] == 1.0
    assert drawn["pr"]["recall"][0] == 1.0 and drawn["pr"]["recall"][-1] == 0.0
    assert all(round(value, 4) == value for value in drawn["pr"]["precision"])
    assert scores.curves(np.ones(4, int), np.full(4, 0.5)) == {}


def test_each_class_present_gets_its_own_roc_curve():
    labels = np.array([0, 0, 1, 1, 0, 1])
    probabilities = np.array([[0.8, 0.2, 0], [0.6, 0.4, 0], [0.3, 0.7, 0]] * 2)
    said = scores.class_curves(labels, probabilities, ["a", "b", "c"])["roc_per_class"]
    assert set(said) == {"a", "b"}  # "c" is absent from the split: no curve
    assert said["b"]["auc"] == pytest.approx(6.5 / 9) and said["b"]["fpr"][0] == 0.0
    assert said["b"]["tpr"][-1] == 1.0 and said["a"]["fpr"] == [0.0, 0.3333, 0.3333, 1.0, 1.0]
    assert scores.class_curves(np.zeros(3, int), probabilities[:3], ["a", "b", "c"]) == {}
    later = scores.class_curves(labels + 1, probabilities[:, [2, 0, 1]], ["a", "b", "c"])
    assert set(later["roc_per_class"]) == {"b", "c"}  # "a" absent: the next ones still drawn


def test_the_lines_under_the_test_accuracy_say_every_score_measured():
    metrics = {
        "test_roc_auc": 0.91234, "test_pr_auc": 0.75, "test_accuracy_at_0.5": 0.8,
        "test_brier": 0.1, "threshold": 0.3456, "threshold_from": "validation (best F1)",
        "test_accuracy_at_threshold": 0.85, "test_positive_share": 0.25,
        "test_majority_class": "no", "test_majority_accuracy": 0.75, "test_dominated": False,
        "baseline": {
            "name": "boosted trees", "test_accuracy": 0.86, "roc_auc": 0.92, "pr_auc": None,
            "note": "fitted on train",
            "others": [{"name": "logistic", "test_accuracy": 0.8, "roc_auc": 0.9, "pr_auc": 0.7}],
        },
    }  # fmt: skip
    assert scores.test_lines(metrics) == [
        "  roc_auc 0.9123, pr_auc 0.7500, accuracy_at_0.5 0.8000, brier 0.1000",
        "  accuracy 0.8500 at threshold 0.346 (from validation (best F1)); positives: 25.0% of "
        "the test rows",
        "  answering 'no' to every row scores accuracy 0.7500",
        "  boosted trees: accuracy 0.8600, ROC AUC 0.9200",
        "    fitted on train",
        "  logistic: accuracy 0.8000, ROC AUC 0.9000, PR AUC 0.7000",
    ]
    assert scores.test_lines({}) == ["  no ranking score: the test split lacks a class"]


def test_the_majority_answer_dominates_from_nine_rows_in_ten():
    said = scores.majority(np.array([1] * 9 + [0]), [3, 7], [0, 1])
    assert said == {
        "test_majority_class": "1",
        "test_majority_accuracy": pytest.approx(0.9),
        "test_dominated": True,
    }
    empty = scores.majority(np.array([], int), [3, 7], ["a", "b"])
    assert empty["test_majority_accuracy"] == 0.0 and not empty["test_dominated"]
    assert not scores.majority(np.array([1] * 8 + [0] * 2), [3, 7], "ab")["test_dominated"]


@pytest.mark.parametrize(
    ("error", "clause"),
    [
        (ValueError("Bad magic bytes. Is it a file?\nmore"), "Bad magic bytes"),
        (ValueError("  "), "ValueError"),
        (OSError("no such file."), "no such file"),
        (ValueError("e.g. one. Two!  Three"), "e.g. one"),
        (ValueError("Stop! Then"), "Stop"),
        (ValueError("unknown codec X."), "unknown codec X"),
    ],
)
def test_a_library_error_becomes_its_first_clause(error, clause):
    assert sources._first_clause(error) == clause


def test_ranking_scores_are_named_and_none_where_a_class_is_missing():
    binary = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])
    said = scores.ranking_scores(np.array([0, 1, 0, 1]), binary)
    assert said == {"roc_auc": 1.0, "pr_auc": 1.0}
    nothing = {"roc_auc": None, "pr_auc": None}
    assert scores.ranking_scores(np.array([1, 1, 1, 1]), binary) == nothing
    three = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
    assert scores.ranking_scores(np.array([0, 1, 0, 1]), three) == nothing  # no class 2
    assert scores.ranking_scores(np.array([0, 1, 2, 0]), three) == {"roc_auc": 1.0, "pr_auc": None}


def test_the_schema_defaults_hash_above_a_thousand_values_and_cross_automatically():
    data = pd.DataFrame(
        {
            "id": [f"u{i}" for i in range(1001)],
            "city": ["paris", "rome"] * 500 + ["oslo"],
            "kind": ["a", "b", "c"] * 333 + ["d", "d"],
        },
        dtype=object,
    )
    schema, notes = infer_schema(data)
    assert [entry["hashed"] for entry in schema["categorical"]] == [True, False, False]
    assert schema["crosses"] == [["city", "kind"]] and schema["crossing_dim"] == 256
    assert any("'id'" in note for note in notes) and any("'city'" in note for note in notes)
    fewer, _ = infer_schema(data.iloc[:1000], crosses="none")
    assert not fewer["categorical"][0]["hashed"]


def test_kinds_follow_the_dtype_of_typed_columns():
    data = pd.DataFrame({"flag": [True, False, True], "n": [np.nan] * 3, "one": [2.5] * 3})
    assert kinds(infer_schema(data, crosses="none")[0]) == {
        "n": "numeric", "one": "numeric", "flag": "categorical",
    }  # fmt: skip
    single, _ = infer_schema(pd.DataFrame({"x": [3.0]}), crosses="none")
    assert single["numeric"][0]["missing_share"] == 0.0


def test_a_number_beyond_float32_is_refused_in_one_sentence_naming_its_row():
    edge = pd.DataFrame({"x": ["1", "3.4028234663852886e38"]}, dtype=object)
    assert infer_schema(edge, crosses="none")[0]["numeric"][0]["max"] == 3.4028234663852886e38
    data = pd.DataFrame({"x": ["1", "-inf", "2"]}, index=[5, 6, 7], dtype=object)
    with pytest.raises(SchemaError) as caught:
        infer_schema(data, crosses="none", place=lambda row: f"f.csv, line {row}")
    assert str(caught.value) == (
        "f.csv, line 6, column 'x': '-inf' is not allowed: a numeric column holds finite numbers "
        "within float32's range (±3.4e38); fix the value or leave the cell empty (missing)."
    )
    with pytest.raises(SchemaError) as caught:
        infer_schema(data.assign(x=["1", "a", "2"]), numeric=["x"], place=str)
    assert str(caught.value) == (
        "6, column 'x': 'a' is not a number, but the column is declared in numeric_columns; "
        "fix the value or declare it categorical."
    )


def test_auto_crosses_pair_the_four_most_varied_plain_categoricals_in_file_order():
    data = pd.DataFrame(
        {
            "id": [f"u{i}" for i in range(60)],  # hashed below: never crossed
            **{name: [f"{name}{i % int(name[1])}" for i in range(60)] for name in
               ("e5", "b2", "f6", "c3", "d4")},
        },
        dtype=object,
    )  # fmt: skip
    schema, _ = infer_schema(data, hash_above=50)
    assert schema["crosses"] == [
        ["e5", "f6"], ["e5", "c3"], ["e5", "d4"], ["f6", "c3"], ["f6", "d4"], ["c3", "d4"],
    ]  # fmt: skip


def test_the_vocabulary_is_by_count_then_name_and_each_note_names_its_row():
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 4, 50)
    values = [f"v{i:02d}" for i in range(50) for _ in range(counts[i])]
    data = pd.DataFrame({"v": values, "w": ["x"] * (len(values) - 1) + ["y"]}, dtype=object)
    data.index += 2  # file lines
    schema, notes = infer_schema(
        data, min_count=1, crosses="none", place=lambda row: f"f.csv, line {row}"
    )
    entry = schema["categorical"][0]
    assert entry["vocabulary"] == sorted(set(values), key=lambda v: (-values.count(v), v))
    assert entry["bins"] is None and entry["top"] == entry["vocabulary"][:5]
    _, notes = infer_schema(data, min_count=2, crosses="none", place=lambda r: f"line {r}")
    rare = next(v for v in sorted(set(values)) if values.count(v) == 1)
    assert notes[0] == (
        f"Column 'v': {sum(counts == 1)} value(s) seen fewer than min_count=2 times in train "
        f"(e.g. {rare!r} at line {values.index(rare) + 2}) go to the out-of-vocabulary bucket, "
        "as unseen values do."
    )
    _, notes = infer_schema(data, hash_above=40, crosses="none")
    assert notes[0] == (
        "Column 'v' has 50 distinct values in train (more than hash_above=40): hashed into 64 "
        "bins, no vocabulary."
    )


def test_a_float_column_of_whole_codes_is_read_as_their_digits():
    data = pd.DataFrame({"code": [1.0, 2.0, np.nan, 2.0, 3.0], "x": [0.5, 1.5, 0.5, 2.5, 1.5]})
    schema, _ = infer_schema(data, categorical=["code", "x"], crosses="none")
    code, x = schema["categorical"]
    assert code["top"] == ["2", "1", "3"] and code["missing_share"] == 0.2
    assert x["top"] == ["0.5", "1.5", "2.5"]


def test_csv_cells_are_text_as_written_and_a_bom_is_no_part_of_a_name(tmp_path):
    path = tmp_path / "rows.csv"
    rows = "".join(
        f'00{i % 3}, "x, {i % 5}",{("None", "#N/A")[i // 2 % 2]},{"ny"[i % 2]}\n' for i in range(40)
    )
    path.write_bytes(b"\xef\xbb\xbfzip,place,answer,y\n" + rows.encode("utf-8"))
    table = load_table("csv", path, label_column="y", categorical=["zip"], seed=0)
    assert table.renamed == {} and list(table.frames["train"].columns) == ["zip", "place", "answer"]
    seen = pd.concat(table.frames.values())
    assert set(seen["zip"]) == {"000", "001", "002"} and set(seen["place"]) == {
        f"x, {i}" for i in range(5)
    }
    assert set(seen["answer"]) == {"None", "#N/A"}  # pandas' own missing words are values here


def test_census_lines_without_a_header_are_numbered_from_one():
    line = (
        b"39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
        b"White, Male, 2174, 0, 40, United-States, <=50K\n"
    )
    frame = sources._read_csv(line * 3, "adult.data", header=False)
    assert list(frame.columns) == sources.CENSUS_COLUMNS and list(frame.index) == [1, 2, 3]
    assert frame.iloc[0]["workclass"] == "State-gov"


def test_unreadable_files_say_why_in_the_librarys_words(tmp_path):
    bad = tmp_path / "rows.csv"
    bad.write_bytes(b"a,y\n\xff\xfe,1\n")
    with pytest.raises(sources.TableError) as caught:
        load_table("csv", bad, label_column="y")
    assert "cannot be read as a UTF-8 CSV ('utf-8' codec can't decode byte 0xff" in str(
        caught.value
    )
    empty = tmp_path / "rows.parquet"
    empty.write_bytes(b"")
    with pytest.raises(sources.TableError) as caught:
        load_table("parquet", empty, label_column="y")
    assert str(caught.value) == (
        f"{empty} is empty: give a Parquet file with named columns and rows."
    )
    empty.write_bytes(b"PAR1 not parquet")
    with pytest.raises(sources.TableError) as caught:
        load_table("parquet", empty, label_column="y")
    assert re.search(
        r"cannot be read as Parquet \((?!None\)).+\): fix the file\.$", str(caught.value)
    )


def test_a_nested_column_and_a_label_copy_are_refused_in_full_sentences(tmp_path):
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"tags": [[1, 2], [3]], "y": [0, 1]}).to_parquet(path, index=False)
    with pytest.raises(sources.TableError) as caught:
        screens.refuse_nested(path.read_bytes(), "rows.parquet")
    assert str(caught.value) == (
        "rows.parquet, column 'tags': its type list<element: int64> holds several values per row, "
        "which a model input cannot take; a column holds one number or one text per row, so "
        "flatten it into columns or drop it."
    )
    frame = pd.DataFrame({"seen": ["a", None, "a", None]})
    with pytest.raises(sources.TableError) as caught:
        screens.refuse_leak(frame, np.array([0, 1, 0, 1]), ["no", "yes"], "rows.csv")
    assert str(caught.value) == (
        "rows.csv, column 'seen': its values match the label one to one on all 4 training rows "
        "('a' → 'no', '' → 'yes'), so it is a copy of the label (a target leak) that scores "
        "perfectly here and means nothing on new rows: remove the column."
    )


def test_named_crosses_keep_the_files_column_order():
    data = pd.DataFrame({"zone": ["n", "s"] * 3, "area": ["a", "b", "c"] * 2}, dtype=object)
    assert infer_schema(data, crosses="area*zone")[0]["crosses"] == [["zone", "area"]]


def test_label_variants_are_refused_with_their_group_named():
    values = pd.Series(["MAX", "max.", "min", "MAX"], dtype=object)
    with pytest.raises(sources.TableError) as caught:
        screens.refuse_label_variants(values, "f.csv", "y")
    assert str(caught.value) == (
        "f.csv, column 'y': the labels 'MAX' and 'max.' differ only in case or a final dot, so "
        "they would be separate classes: write each class one way."
    )
    empty = pd.Series([None, None], dtype=object)
    assert screens.date_columns(pd.DataFrame({"e": empty}), set(), "f.csv", "line") == ([], [])


def test_a_column_half_numbers_is_refused_and_a_third_is_categories():
    half = pd.Series(["1", "a", "2", "b"], index=[2, 3, 4, 5], dtype=object, name="c")
    with pytest.raises(sources.TableError) as caught:
        sources._check_mixed(half, "f.csv", "line")
    assert str(caught.value) == (
        "f.csv, line 3, column 'c': 'a' is not a number, though 2 of the column's 4 values are "
        "(2 are not); fix it, mark it missing with '?', or declare categorical_columns=c."
    )
    with pytest.raises(sources.TableError, match=r"\(1 is not\)"):
        sources._check_mixed(half.replace("b", "3"), "f.csv", "line")
    third = pd.Series(["a", "7", "b"], index=[2, 3, 4], dtype=object, name="c")
    assert sources._check_mixed(third, "f.csv", "line") == [
        "f.csv, column 'c': 1 numbers among 2 words (the first at line 3) are read as categories, "
        "like the words."
    ]


def test_a_label_unseen_in_training_is_refused_at_its_row():
    values = pd.Series(["a", "zz", "b", "yy"], index=[2, 3, 4, 5], dtype=object)
    with pytest.raises(sources.TableError) as caught:
        sources._ids(values, ["a", "b"], "t.csv", "line", "y")
    assert str(caught.value) == (
        "t.csv, line 3, column 'y': the label 'zz' is not one of the training classes ['a', 'b']."
    )
    assert sources._ids(values.iloc[[0, 2]], ["a", "b"], "t.csv", "line", "y").tolist() == [0, 1]


def test_a_users_file_is_refused_or_noted_word_for_word(tmp_path):
    with pytest.raises(sources.TableError) as caught:
        load_table("excel", tmp_path / "x.csv", label_column="y")
    assert str(caught.value) == (
        f"dataset='excel' is not a table source: use one of {sources.SOURCES}."
    )
    with pytest.raises(sources.TableError) as caught:
        load_table("csv", None, label_column="y")
    assert str(caught.value) == "data_dir='' is not a file: csv needs one."
    path = tmp_path / "rows.csv"
    path.write_text("x,e1,e2,y\n" + "".join(f"{i},,?,n\n" for i in range(6)), encoding="utf-8")
    with pytest.raises(sources.TableError) as caught:
        load_table("csv", path, label_column="y")
    assert str(caught.value) == (
        f"{path}, column 'y': every row has the label 'n', so there is nothing to tell apart: "
        "a classifier needs at least two classes."
    )
    with pytest.raises(sources.TableError) as caught:
        load_table("csv", path, label_column="z")
    assert str(caught.value) == (
        f"{path}, line 1: no column 'z' among ['x', 'e1', 'e2', 'y'], so name the label with "
        "label_column=."
    )
    path.write_text("x,e1,e2,y\n" + "".join(f"{i},,?,{'ny'[i % 2]}\n" for i in range(20)))
    notes = load_table("csv", path, label_column="y").notes
    assert (
        f"{path}: column(s) e1, e2 hold no value in any row (all missing) and were dropped."
        in notes
    )
