"""The shared input reader (data/reader.py), through the fake task (rows in memory) and through
TFRecord shards of the same rows: what each input pipeline or worker reads, repeat or one epoch,
the batches' shapes, the seeded order, the tf.data options, and the refusals."""

from __future__ import annotations

from pathlib import Path

import fake_task as fake
import numpy as np
import pytest
import tensorflow as tf

from {{ cookiecutter.package_name }}.data import DataError, reader

FEATURES = {
    "x": tf.io.FixedLenFeature([fake.FEATURES], tf.float32),
    "y": tf.io.FixedLenFeature([], tf.int64),
}
POLICY = tf.data.experimental.AutoShardPolicy


def rows(run: Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    with np.load(run / "data" / f"{split}.npz") as arrays:
        return arrays["x"], arrays["y"]


def ids(batches: tf.data.Dataset) -> list[float]:
    """Each example's first feature: a float that names its row."""
    return [float(x) for features, _ in batches for x in features.numpy()[:, 0]]


def write_shards(run: Path, shards: int) -> list[str]:
    """The training rows as `shards` TFRecord files, row i in shard i % shards."""
    vectors, labels = rows(run)
    paths = [str(run / f"train-{index}.tfrecord") for index in range(shards)]
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    for index, (vector, label) in enumerate(zip(vectors, labels, strict=True)):
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=vector)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }
            )
        )
        writers[index % shards].write(example.SerializeToString())
    for writer in writers:
        writer.close()
    return paths


def decode(records: tf.data.Dataset) -> tf.data.Dataset:
    def one(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(record, FEATURES)
        return example["x"], tf.cast(example["y"], tf.int32)

    return records.map(one)


def from_files(paths: list[str], batch_size: int = 16, **options) -> tf.data.Dataset:
    def source(_: str) -> reader.Source:
        return reader.Source(paths, fake.COUNTS["train"], reading)

    def reading(plan: reader.Plan) -> reader.Reading:
        return reader.Reading(decode=decode, shuffle_buffer=plan.count, cycle=4, block=2)

    return reader.read(source, ["train"], "train", batch_size, **options)


def test_batches_have_the_tasks_shapes_and_dtypes(fake_run: Path, fake_task) -> None:
    spec = fake_task.build_inputs(fake_run, "train", 32).element_spec
    assert spec[0].shape.as_list() == [None, fake.FEATURES] and spec[0].dtype == tf.float32
    assert spec[1].shape.as_list() == [None] and spec[1].dtype == tf.int32
    dropped = fake_task.build_inputs(fake_run, "train", 40, drop_remainder=True).element_spec
    assert dropped[0].shape.as_list() == [40, fake.FEATURES]


def test_one_epoch_without_repeat_and_endless_with_it(fake_run: Path, fake_task) -> None:
    vectors, _ = rows(fake_run)
    sizes = [len(y) for _, y in fake_task.build_inputs(fake_run, "train", 40)]
    assert sizes == [40, 40, 16]
    once = ids(fake_task.build_inputs(fake_run, "train", 32))
    assert sorted(once) == sorted(vectors[:, 0].tolist())
    endless = fake_task.build_inputs(fake_run, "train", 32, repeat=True).take(7)
    assert len(ids(endless)) == 7 * 32


def test_the_seed_fixes_the_order_and_every_epoch_has_a_new_one(fake_run: Path, fake_task) -> None:
    def epochs(seed: int) -> list[list[float]]:
        data = fake_task.build_inputs(fake_run, "train", 32, seed=seed, repeat=True).take(6)
        order = ids(data)
        return [order[:96], order[96:]]

    first, again, other = epochs(1), epochs(1), epochs(2)
    assert first == again
    assert first[0] != first[1] and sorted(first[0]) == sorted(first[1])
    assert first[0] != other[0]
    validation = ids(fake_task.build_inputs(fake_run, "validation", 16))
    assert validation == rows(fake_run, "validation")[0][:, 0].tolist()


@pytest.mark.parametrize("pipelines", [2, 3])
def test_each_input_pipeline_reads_its_own_rows_in_per_replica_batches(
    fake_run: Path, fake_task, pipelines: int
) -> None:
    seen = []
    for index in range(pipelines):
        context = tf.distribute.InputContext(pipelines, index, num_replicas_in_sync=2)
        data = fake_task.build_inputs(fake_run, "train", 16, input_context=context)
        assert max(len(y) for _, y in data) == 8
        assert data.options().experimental_distribute.auto_shard_policy == POLICY.OFF
        seen.append(set(ids(data)))
    assert all(not a & b for i, a in enumerate(seen) for b in seen[i + 1 :])
    assert sorted(set().union(*seen)) == sorted(rows(fake_run)[0][:, 0].tolist())


@pytest.mark.parametrize(("shards", "pipelines"), [(4, 2), (2, 3)], ids=["by-file", "by-record"])
def test_each_worker_reads_its_own_shards_or_records(
    fake_run: Path, fake_task, shards: int, pipelines: int
) -> None:
    paths = write_shards(fake_run, shards)
    seen = []
    for index in range(pipelines):
        context = tf.distribute.InputContext(pipelines, index, num_replicas_in_sync=1)
        seen.append(ids(from_files(paths, 8, input_context=context, seed=3)))
        assert seen[-1] == ids(from_files(paths, 8, input_context=context, seed=3))
    parts = [set(part) for part in seen]
    assert sum(map(len, seen)) == 96 and sorted(set().union(*parts)) == sorted(
        rows(fake_run)[0][:, 0].tolist()
    )


@pytest.mark.parametrize(("workers", "policy"), [(1, "FILE"), (4, "FILE"), (5, "DATA")])
def test_the_auto_shard_policy_suits_the_workers_for_shard_files(
    fake_run: Path, fake_task, workers: int, policy: str
) -> None:
    data = from_files(write_shards(fake_run, 4), num_workers=workers)
    assert data.options().experimental_distribute.auto_shard_policy == getattr(POLICY, policy)


@pytest.mark.parametrize("value", [True, False])
def test_deterministic_lands_in_the_options(fake_run: Path, fake_task, value: bool) -> None:
    data = fake_task.build_inputs(fake_run, "train", 16, deterministic=value)
    assert data.options().deterministic is value
    assert data.options().experimental_distribute.auto_shard_policy == POLICY.OFF


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"split": "nope"}, "split='nope'"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"num_workers": True}, "num_workers=True"),
        ({"cache": "yes"}, "cache='yes'"),
        ({"batch_size": 9, "input_context": tf.distribute.InputContext(1, 0, 2)}, "batch_size=9"),
    ],
)
def test_bad_options_are_refused_in_one_sentence(
    fake_run: Path, fake_task, options: dict, named: str
) -> None:
    options = {"split": "train", "batch_size": 16, **options}
    with pytest.raises(DataError) as refused:
        fake_task.build_inputs(fake_run, **options)
    message = str(refused.value)
    assert named in message and message.endswith(".") and ". " not in message


def test_a_task_without_augmentation_refuses_it_with_its_own_sentence(fake_run: Path) -> None:
    sentence = "augment=True is not an option of this task: use augment=False."
    with pytest.raises(DataError, match=sentence):
        reader.read(lambda _: None, ["train"], "train", 8, augment=True, no_augment=sentence)
