"""The tf.data pipeline and its benchmark, on tiny shards written here in the data contract format.

Every image carries its record's id in two pixels, so a test can tell exactly which records an
epoch delivered and in what order. No timing is asserted: rates vary from machine to machine.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml
from helpers import Ticks, assert_one_sentence

from {{ cookiecutter.package_name }} import artifacts, data, lineage
from {{ cookiecutter.package_name }}.data import timing
from {{ cookiecutter.package_name }}.data.pipeline import auto_shard_policy
from {{ cookiecutter.package_name }}.prepare import entry
from {{ cookiecutter.package_name }}.tasks.image import benchmark, data_step, pipeline

SHAPE = (6, 5, 3)  # not square, three channels: the static shape must come from meta.json
CLASSES = ["a", "b", "c"]
SPLITS = {"train": (50, 3), "validation": (14, 2)}  # records, shards


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder whose data/ holds train (3 shards) and validation (2 shards) records."""
    run = tmp_path_factory.mktemp("run")
    write_shards(run / "data", SHAPE, SPLITS)
    return run


def write_shards(folder: Path, shape: tuple[int, ...], splits: dict[str, tuple[int, int]]) -> None:
    """Shards and meta.json as data_step.prepare writes them; record i has id i and label i % 3."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    meta_splits, first = {}, 0
    for split, (count, shards) in splits.items():
        ids = list(range(first, first + count))
        first += count
        names = [f"{split}-{i:05d}-of-{shards:05d}.tfrecord" for i in range(shards)]
        for index, name in enumerate(names):
            with tf.io.TFRecordWriter(str(folder / name)) as writer:
                for record in ids[index::shards]:
                    image = rng.integers(0, 256, shape, dtype=np.uint8)
                    image[0, 0, :2] = (record % 256, record // 256 + 1)
                    writer.write(_example(image, record % len(CLASSES)))
        per_class = Counter(CLASSES[i % len(CLASSES)] for i in ids)
        meta_splits[split] = {"count": count, "per_class": dict(per_class), "shards": names}
    meta = {
        "dataset": "synthetic",
        "classes": CLASSES,
        "num_classes": len(CLASSES),
        "image_shape": list(shape),
        "encoding": "png",
        "seed": 0,
        "val_fraction": 0.2,
        "splits": meta_splits,
        "source": {"data_dir": None},
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _example(image: np.ndarray, label: int) -> bytes:
    feature = {
        "image": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
        ),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def epoch(dataset: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """One pass: (images, labels, batch sizes), all batches concatenated."""
    images, labels = [], []
    for batch_images, batch_labels in dataset:
        images.append(batch_images.numpy())
        labels.append(batch_labels.numpy())
    return np.concatenate(images), np.concatenate(labels), [len(batch) for batch in labels]


def ids(images: np.ndarray) -> list[int]:
    """The record ids written into pixel (0, 0) of each image."""
    return [int(low) + 256 * (int(high) - 1) for low, high in images[:, 0, 0, :2]]


def expected_ids(split: str) -> list[int]:
    start = 0 if split == "train" else SPLITS["train"][0]
    return list(range(start, start + SPLITS[split][0]))


@pytest.mark.parametrize("split", ["train", "validation"])
def test_element_spec_is_uint8_images_and_int32_labels_with_static_shape(
    run_dir: Path, split: str
) -> None:
    """Batches are uint8 [B, H, W, C] and int32 [B], with H, W, C known before the first batch."""
    images, labels = data_step.make_dataset(run_dir, split, batch_size=8).element_spec
    assert (images.dtype, images.shape.as_list()) == (tf.uint8, [None, *SHAPE])
    assert (labels.dtype, labels.shape.as_list()) == (tf.int32, [None])
    fixed = data_step.make_dataset(run_dir, split, batch_size=8, drop_remainder=True).element_spec
    assert fixed[0].shape.as_list() == [8, *SHAPE]


@pytest.mark.parametrize("cache", [True, False])
def test_training_delivers_every_record_once_per_epoch(run_dir: Path, cache: bool) -> None:
    """Without repeat, each training epoch holds every record exactly once, with its own label."""
    dataset = data_step.make_dataset(run_dir, "train", batch_size=16, cache=cache)
    for _ in range(2):
        images, labels, sizes = epoch(dataset)
        assert sorted(ids(images)) == expected_ids("train")
        assert [label for _, label in sorted(zip(ids(images), labels, strict=True))] == [
            i % 3 for i in expected_ids("train")
        ]
        assert sizes == [16, 16, 16, 2]


def test_validation_is_complete_and_in_the_same_order_every_time(run_dir: Path) -> None:
    """Validation is not shuffled: every epoch and every rebuild gives the same sequence."""
    dataset = data_step.make_dataset(run_dir, "validation", batch_size=4)
    first, second = epoch(dataset)[0], epoch(dataset)[0]
    rebuilt = epoch(data_step.make_dataset(run_dir, "validation", batch_size=4, cache=False))[0]
    assert sorted(ids(first)) == expected_ids("validation")
    assert ids(first) == ids(second) == ids(rebuilt)


@pytest.mark.parametrize("cache", [True, False])
def test_shuffle_changes_every_epoch_and_repeats_under_the_seed(run_dir: Path, cache: bool) -> None:
    """A new order each epoch (the cache does not freeze it); the same seed, the same orders."""

    def orders(seed: int) -> list[list[int]]:
        dataset = data_step.make_dataset(
            run_dir, "train", batch_size=16, cache=cache, seed=seed, deterministic=True
        )
        return [ids(epoch(dataset)[0]) for _ in range(2)]

    first, again, other = orders(7), orders(7), orders(8)
    assert first[0] != first[1]
    assert first == again
    assert first != other


def test_cache_on_and_off_give_the_same_examples(run_dir: Path) -> None:
    """Caching changes speed only: the same multiset of (image, label) in both splits."""
    for split in ("train", "validation"):
        found = []
        for cache in (True, False):
            images, labels, _ = epoch(data_step.make_dataset(run_dir, split, 8, cache=cache))
            pairs = zip(images, labels, strict=True)
            found.append(sorted((image.tobytes(), int(label)) for image, label in pairs))
        assert found[0] == found[1]


def test_augment_translates_training_images_only(run_dir: Path) -> None:
    """augment shifts training images by a few pixels, anew each epoch and reproducibly under the
    seed, keeping uint8, shape, order and labels; validation is untouched."""
    options = dict(batch_size=16, seed=3, deterministic=True)
    plain_set = data_step.make_dataset(run_dir, "train", **options)
    augmented_set = data_step.make_dataset(run_dir, "train", augment=True, **options)
    assert augmented_set.element_spec == plain_set.element_spec
    shift = max(1, round(pipeline.TRANSLATE * min(SHAPE[:2])))
    offsets, first = [], None
    for _ in range(2):
        plain, augmented = epoch(plain_set), epoch(augmented_set)
        first = augmented[0] if first is None else first
        np.testing.assert_array_equal(plain[1], augmented[1])  # same order, same labels
        assert augmented[0].dtype == np.uint8 and augmented[0].shape == plain[0].shape
        pairs = zip(plain[0], augmented[0], strict=True)
        offsets.append([_translation(before, after, shift) for before, after in pairs])
    assert None not in offsets[0] + offsets[1], "an augmented image is not a translation"
    assert len(set(offsets[0])) > 1 and offsets[0] != offsets[1]
    rebuilt = data_step.make_dataset(run_dir, "train", augment=True, **options)
    np.testing.assert_array_equal(epoch(rebuilt)[0], first)
    val = dict(batch_size=4)
    np.testing.assert_array_equal(
        epoch(data_step.make_dataset(run_dir, "validation", augment=True, **val))[0],
        epoch(data_step.make_dataset(run_dir, "validation", **val))[0],
    )


def _translation(original: np.ndarray, moved: np.ndarray, shift: int) -> tuple[int, int] | None:
    """The (dy, dx) that turns original into moved, edges filled with zeros; else None."""
    height, width = original.shape[:2]
    padded = np.pad(original, [(shift, shift), (shift, shift), (0, 0)])
    for dy in range(2 * shift + 1):
        for dx in range(2 * shift + 1):
            if np.array_equal(padded[dy : dy + height, dx : dx + width], moved):
                return dy - shift, dx - shift
    return None


@pytest.mark.parametrize("value", [True, False])
def test_deterministic_sets_the_dataset_option(run_dir: Path, value: bool) -> None:
    """deterministic=True/False lands in tf.data.Options, where tf.data reads it."""
    dataset = data_step.make_dataset(run_dir, "train", deterministic=value)
    assert dataset.options().deterministic is value


@pytest.mark.parametrize("pipelines", [2, 4], ids=["by-file", "by-record"])
def test_input_context_splits_records_disjointly_with_per_replica_batches(
    run_dir: Path, pipelines: int
) -> None:
    """Each input pipeline reads its own records (by shard when there are enough), and batches
    batch_size / replicas; together they read every record once."""
    seen = []
    for index in range(pipelines):
        context = tf.distribute.InputContext(
            num_input_pipelines=pipelines, input_pipeline_id=index, num_replicas_in_sync=2
        )
        dataset = data_step.make_dataset(run_dir, "train", 16, input_context=context)
        images, _, sizes = epoch(dataset)
        assert sizes[0] == 8 and max(sizes) == 8
        assert dataset.options().experimental_distribute.auto_shard_policy == (
            tf.data.experimental.AutoShardPolicy.OFF
        )
        seen.append(set(ids(images)))
    assert all(not a & b for i, a in enumerate(seen) for b in seen[i + 1 :])
    assert sorted(set().union(*seen)) == expected_ids("train")


@pytest.mark.parametrize(
    ("shards", "workers", "policy"),
    [(4, 1, "FILE"), (4, 4, "FILE"), (3, 4, "DATA"), (1, 2, "DATA")],
)
def test_auto_shard_policy_is_file_only_when_every_worker_gets_a_shard(
    shards: int, workers: int, policy: str
) -> None:
    """FILE needs a shard per worker; with fewer, every worker reads all and keeps its part."""
    expected = getattr(tf.data.experimental.AutoShardPolicy, policy)
    assert auto_shard_policy(shards, workers) == expected


@pytest.mark.parametrize(("workers", "policy"), [(1, "FILE"), (3, "FILE"), (4, "DATA")])
def test_make_dataset_sets_the_auto_shard_policy_for_its_workers(
    run_dir: Path, workers: int, policy: str
) -> None:
    """The train split has 3 shards: FILE for up to 3 workers, DATA for more."""
    dataset = data_step.make_dataset(run_dir, "train", num_workers=workers)
    expected = getattr(tf.data.experimental.AutoShardPolicy, policy)
    assert dataset.options().experimental_distribute.auto_shard_policy == expected


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"split": "test"}, "split='test'"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"batch_size": True}, "batch_size=True"),
        ({"num_workers": 0}, "num_workers=0"),
        (
            {
                "batch_size": 9,
                "input_context": tf.distribute.InputContext(num_replicas_in_sync=2),
            },
            "batch_size=9",
        ),
    ],
)
def test_bad_arguments_are_refused_in_one_sentence(run_dir: Path, kwargs: dict, named: str) -> None:
    """A bad split, batch size or worker count raises DataError naming the value."""
    with pytest.raises(data.DataError, match=named.replace("(", r"\(")) as caught:
        data_step.make_dataset(run_dir, **kwargs)
    assert str(caught.value).count(". ") == 0 and str(caught.value).endswith(".")


def test_missing_data_step_names_the_notebook_to_run(tmp_path: Path) -> None:
    """A run folder without data/meta.json points at 01_data instead of failing deep in tf.data."""
    with pytest.raises(artifacts.MissingInputError, match="01_data"):
        data_step.make_dataset(tmp_path)


def test_examples_per_class_reads_a_few_of_each_class_in_class_order(run_dir: Path) -> None:
    """The notebook's sample grid gets per_class decoded images of every class, grouped by class."""
    images, labels = pipeline.examples_per_class(run_dir, "validation", per_class=3)
    assert images.dtype == np.uint8 and images.shape == (9, *SHAPE)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert all(record % 3 == label for record, label in zip(ids(images), labels, strict=True))


@pytest.fixture(scope="module")
def measured_with_clock(run_dir: Path) -> tuple[dict, Ticks]:
    """One small benchmark with every step, shared by the checks below (timings are not checked):
    a clock that moves 1 ms a read gives every pipeline a few epochs of the 50 records in its
    2 s budget; the clock is kept to see the budget read."""
    clock = Ticks(0.001)
    return data_step.benchmark_pipeline(run_dir, 8, seconds=2, steps=True, clock=clock), clock


@pytest.fixture(scope="module")
def measured(measured_with_clock: tuple[dict, Ticks]) -> dict:
    return measured_with_clock[0]


@pytest.fixture(scope="module")
def too_short(run_dir: Path) -> dict:
    """Half a second a batch in a 1 s budget: no pipeline gets MIN_BATCHES."""
    return data_step.benchmark_pipeline(run_dir, 8, seconds=1, steps=True, clock=Ticks(0.5))


def test_benchmark_reports_positive_rates_and_says_what_it_compares(measured: dict) -> None:
    """Rates are positive and finite; the result names its basis, the map and the pipelines."""
    rates = [
        "examples_per_sec",
        "first_epoch_examples_per_sec",
        "naive_examples_per_sec",
        "naive_first_epoch_examples_per_sec",
        "speedup_vs_naive",
        "first_epoch_speedup_vs_naive",
    ]
    for key in rates:
        assert math.isfinite(measured[key]) and measured[key] > 0, key
    assert measured["examples_per_epoch"] == 50 and measured["too_short"] is False
    assert "parse" in measured["map_description"] and "decode" in measured["map_description"]
    assert measured["input_bound"] is None and "03_train" in measured["verdict"]
    assert "cache" in measured["pipeline"] and "steady state" in measured["speedup_basis"]


def test_benchmark_steps_add_one_optimization_at_a_time(measured: dict) -> None:
    """The table starts with the naive pipeline and ends with the one make_dataset builds."""
    names = [row["name"] for row in measured["steps"]]
    assert names[0] == "naive" and names[-1] == "+ prefetch" and len(names) == 6
    assert measured["steps"][-1]["examples_per_sec"] == measured["examples_per_sec"]
    assert "| naive |" in benchmark.steps_table(measured)


def test_the_benchmark_takes_its_time_budget_not_the_datas(
    measured_with_clock: tuple[dict, Ticks],
) -> None:
    """However many records, the benchmark reads the clock for about `seconds`: every timed
    pipeline stops at its share (here a share is ~4 batches of an epoch of 7), warm-ups included."""
    result, clock = measured_with_clock
    assert 1.8 <= clock.now <= 2.2, clock.now
    assert result["benchmark_seconds"] == 2 and result["timed_seconds"] <= 2


def test_the_smoke_profile_gives_the_data_benchmark_seconds_not_the_default_minute() -> None:
    """The smoke chain's goal is under 60 s in all: its data benchmark (26.8 s of 47 s of
    01_data with the old count-bound benchmark) gets the least allowed, 1 s (6 s was 5 s of the
    chain's wall on 2 cores, all of their CPU), too short to compare, as 01 says."""
    profile = Path(__file__).parents[1] / "configs" / "smoke.yaml"
    smoke = yaml.safe_load(profile.read_text(encoding="utf-8"))["notebooks"]["01_data"]
    assert smoke.get("benchmark_seconds", data_step.Params().benchmark_seconds) == 1


def test_a_pipeline_stops_inside_an_epoch_when_its_share_is_used() -> None:
    """An epoch of 1,000 batches timed for 50 ticks of 1 ms is cut after about 50 batches."""
    endless = tf.data.Dataset.range(1000).map(lambda i: (i, tf.zeros([8], tf.int32)))
    counts, _, batches, cut = timing._time_epochs(endless, 0.05, Ticks(0.001))
    assert len(counts) == 1 and 45 <= batches[0] <= 50 and counts[0] == 8 * batches[0] and cut


def test_a_benchmark_too_short_to_compare_says_so_instead_of_a_ratio(too_short: dict) -> None:
    """Half a second a batch in a 1 s budget: no pipeline gets MIN_BATCHES, so no ratio is told."""
    result = too_short
    assert result["too_short"] is True and result["input_bound"] is None
    assert result["verdict"].startswith("Too short to compare the pipelines")
    assert "benchmark_seconds=60" in result["verdict"] and "×" not in result["verdict"]
    assert "| too short |" in benchmark.steps_table(result)
    assert "first epochs only" in result["speedup_basis"]


def test_a_benchmark_too_short_to_compare_writes_no_ratio(run_dir: Path, too_short: dict) -> None:
    """Issue 42 §1.6: the smoke's 6 s wrote speedup_vs_naive 0.012 beside "too short to compare".
    Every ratio is null in metrics/data.json, a sibling key says why; the rates stay."""
    result = too_short
    written = json.loads(json.dumps(data_step.data_metrics(data.read_meta(run_dir), result)))
    ratios = [key for key in data.report.RATIO_KEYS if key in written]
    assert "speedup_vs_naive" in ratios and len(ratios) == 6
    assert {key: written[key] for key in ratios} == dict.fromkeys(ratios)
    assert [row["speedup_vs_naive"] for row in written["steps"]] == [None] * 6
    assert written["speedup_vs_naive_reason"] == result["verdict"]
    assert written["examples_per_sec"] > 0 and written["naive_examples_per_sec"] > 0
    assert benchmark.times(written["speedup_vs_naive"]) == "not measured (too short)"


def test_a_benchmark_long_enough_keeps_its_ratios(measured: dict) -> None:
    """Only a too-short benchmark is withheld: a measured one keeps its ratio, with no reason."""
    assert measured["speedup_vs_naive"] > 0 and "speedup_vs_naive_reason" not in measured
    assert benchmark.times(measured["speedup_vs_naive"]).endswith("x")


def test_a_cold_epoch_faster_than_the_decode_only_pipeline_is_not_said_over_a_limit() -> None:
    """The parse-and-decode-only pipeline is a reference, not a bound (a cold epoch beat it at
    109 %): the verdict gives the share of a decode-only pipeline and names no limit."""
    result = {
        "examples_per_sec": 2000.0,
        "first_epoch_examples_per_sec": 1100.0,
        "decode_only_examples_per_sec": 1000.0,
        "cold_examples_per_sec": 1090.0,
        "speedup_vs_naive": 2.0,
        "naive_examples_per_sec": 1000.0,
    }
    verdict = benchmark.input_bound_verdict(result, None)["verdict"]
    assert "1,090 cold, without a cache: 109% of a decode-only pipeline's 1,000/s" in verdict
    assert "limit" not in verdict


def test_the_cache_size_is_the_training_splits_not_a_repeated_copy(measured: dict) -> None:
    """The decoded bytes said and decided on are the 50 training images, once."""
    assert measured["cache_bytes"] == 50 * math.prod(SHAPE)


@pytest.mark.parametrize(("model_rate", "bound"), [(1e-3, False), (1e12, True), (None, None)])
def test_benchmark_verdict_compares_with_the_model_rate(
    measured: dict, model_rate: float | None, bound: bool | None
) -> None:
    """A model slower than the pipeline is not input-bound, a faster one is, none gives None: the
    verdict on the shared benchmark's rates (the benchmark's own passing of the rate: below)."""
    result = benchmark.input_bound_verdict(measured, model_rate)
    assert result["input_bound"] is bound
    assert result["verdict"].endswith(".")
    if bound is not None:
        assert ("not input-bound" in result["verdict"]) is (not bound)


def test_the_benchmark_judges_by_the_model_rate_it_is_given(run_dir: Path) -> None:
    """benchmark_pipeline hands model_examples_per_sec to its verdict: a model far faster than any
    pipeline makes it input-bound."""
    result = data_step.benchmark_pipeline(
        run_dir, 8, seconds=1, model_examples_per_sec=1e12, rounds=1, clock=Ticks(0.001)
    )
    assert result["input_bound"] is True and "not input-bound" not in result["verdict"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seconds": 0},
        {"seconds": 3601},
        {"seconds": "60"},
        {"model_examples_per_sec": 0},
        {"batch_size": 2.5},
        {"rounds": 0},
    ],
)
def test_benchmark_refuses_bad_settings_before_reading(tmp_path: Path, kwargs: dict) -> None:
    """Bad settings fail in one sentence naming them, even before the data step has run."""
    (name,) = kwargs
    with pytest.raises(data.DataError, match=name):
        data_step.benchmark_pipeline(tmp_path, **kwargs)


# the step contract


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"val_fraction": 1.5}, "val_fraction=1.5"),
        ({"shards": 0}, "shards=0"),
        ({"batch_size": -5}, "batch_size=-5"),
        ({"image_size": 3}, "image_size=3"),
        ({"dataset": "imagenet"}, "dataset='imagenet'"),
        ({"dataset": "image_folder"}, "dataset='image_folder' needs data_dir"),
        ({"benchmark_seconds": 0.5}, "benchmark_seconds=0.5"),
        ({"benchmark_seconds": 1e9}, "benchmark_seconds=1000000000.0"),
        ({"benchmark_seconds": True}, "benchmark_seconds=True"),
        ({"cache": "yes"}, "cache='yes'"),
        ({"augment": 1}, "augment=1"),
    ],
)
def test_check_refuses_every_bad_value_in_one_sentence_and_writes_nothing(
    tmp_path: Path, values: dict, named: str
) -> None:
    """The runner's pre-flight (inputs=False) covers every parameter, before anything is read."""
    run = tmp_path / "run"
    with pytest.raises(data.DataError) as refused:
        entry.check(run, data_step.Params(**values), inputs=False)
    assert named in str(refused.value)
    assert_one_sentence(str(refused.value))
    assert not run.exists()


def test_check_refuses_a_data_dir_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(data.DataError) as refused:
        entry.check(tmp_path, data_step.Params(dataset="image_folder", data_dir=str(missing)))
    assert f"data_dir {missing} does not exist" in str(refused.value)
    assert_one_sentence(str(refused.value))


def test_run_prepares_benchmarks_and_writes_the_metrics_with_lineage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """data_step.run writes data/, metrics/data.json (counts, benchmark, steps) and the data
    lineage."""
    params = data_step.Params(shards=1, benchmark_seconds=1)
    metrics = entry.run(tmp_path, params, verbose=True)
    said = capsys.readouterr().out
    assert "about 1 s, whatever the data" in said and "01_data.benchmark_seconds=N" in said
    written = json.loads((tmp_path / artifacts.METRICS_DIR / "data.json").read_text())
    assert written == json.loads(json.dumps(metrics))
    fingerprint = lineage.fingerprint(tmp_path, "data")
    assert metrics["lineage"] == {"reads": {}, "writes": {"data": fingerprint}}
    assert lineage.read(tmp_path)["data"]["fingerprint"] == fingerprint
    assert metrics["dataset"] == "digits" and metrics["shards"] == {"train": 1, "validation": 1}
    assert metrics["train_count"] + metrics["validation_count"] == 1797
    assert [row["name"] for row in metrics["steps"]][0] == "naive"
