"""Step 1, writing the data: every source on tiny data, the split, the records and every refusal."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import lineage, progress
from {{ cookiecutter.package_name }}.artifacts import LINEAGE_FILE, MissingInputError
from {{ cookiecutter.package_name }}.tasks.image import records, shards, sources
from {{ cookiecutter.package_name }}.tasks.image.sources import SOURCES, DataError

# Exactly what the contract promises a reader: no package code needed to read the records.
FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
SMALL = {"synthetic_shape": (8, 8, 3), "synthetic_classes": 3, "synthetic_count": 60}
OFFLINE = Exception(
    "URL fetch failure on https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz: "
    "None -- [Errno -2] Name or service not known"
)


def read_records(path: Path) -> list[tuple[np.ndarray, int]]:
    """Every (image, label) of one shard, read with plain tf.data and tf.io."""
    out = []
    for record in tf.data.TFRecordDataset(str(path)):
        example = tf.io.parse_single_example(record, FEATURES)
        out.append((tf.io.decode_png(example["image"]).numpy(), int(example["label"])))
    return out


def read_split(data: Path, meta: dict, split: str) -> list[tuple[np.ndarray, int]]:
    """Every record of one split, in shard order."""
    return [item for name in meta["splits"][split]["shards"] for item in read_records(data / name)]


def write_image(path: Path, image: np.ndarray) -> Path:
    """An image file in the format its suffix names."""
    path.parent.mkdir(parents=True, exist_ok=True)
    encode = tf.io.encode_png if path.suffix.lower() == ".png" else tf.io.encode_jpeg
    path.write_bytes(encode(image).numpy())
    return path


def image(height: int, width: int, channels: int = 3, seed: int = 0) -> np.ndarray:
    """A random uint8 image."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)


@pytest.fixture
def folder(tmp_path) -> Path:
    """Three classes of 4 images each, PNG and JPEG, colour and grayscale, 16x16."""
    root = tmp_path / "images"
    for label, name in enumerate(("cat", "dog", "owl")):
        for index in range(4):
            suffix = (".png", ".jpg", ".jpeg", ".PNG")[index]
            channels = 1 if index == 0 else 3
            write_image(
                root / name / f"{index}{suffix}", image(16, 16, channels, 10 * label + index)
            )
    (root / "dog" / "notes.txt").write_text("not an image")
    (root / ".ipynb_checkpoints").mkdir()
    return root


def shard_files(data: Path) -> list[str]:
    """Every file in a data folder, hidden temporary files included."""
    return sorted(path.name for path in data.iterdir())


# digits, the default source


def test_digits_writes_shards_and_meta_with_counts_per_split_and_class(tmp_path):
    """The default source gives 1797 8x8x1 images, shards under final names and a full meta.json."""
    meta = records.prepare(tmp_path, shards=3)
    data = tmp_path / "data"
    assert meta["reused"] is False
    assert meta["classes"] == [str(digit) for digit in range(10)] and meta["num_classes"] == 10
    assert meta["image_shape"] == [8, 8, 1] and meta["encoding"] == "png"
    assert (meta["seed"], meta["val_fraction"], meta["source"]["data_dir"]) == (42, 0.2, None)
    train, validation = meta["splits"]["train"], meta["splits"]["validation"]
    assert train["count"] + validation["count"] == 1797
    assert sum(train["per_class"].values()) == train["count"]
    assert train["shards"] == [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert shard_files(data) == sorted(["meta.json", *train["shards"], *validation["shards"]])
    on_disk = json.loads((data / "meta.json").read_text())
    assert on_disk == {key: value for key, value in meta.items() if key != "reused"}
    assert records.read_meta(tmp_path) == on_disk
    labels = [label for _, label in read_split(data, meta, "validation")]
    assert dict(Counter(str(label) for label in labels)) == validation["per_class"]


def test_digits_pixels_span_0_to_255():
    """The 0..16 digit values are spread over uint8's range, so the PNGs are not near-black."""
    source = sources.load_digits()
    assert source.images.dtype == np.uint8 and source.images.shape == (1797, 8, 8, 1)
    assert source.images.min() == 0 and source.images.max() == 255


def test_image_size_resizes_an_in_memory_source(tmp_path):
    """digits with image_size=16 writes 16x16 images and says how many were resized."""
    meta = records.prepare(tmp_path, image_size=16, shards=1)
    assert meta["image_shape"] == [16, 16, 1] and meta["resized"] == 1797
    first, _ = read_records(tmp_path / "data" / meta["splits"]["validation"]["shards"][0])[0]
    assert first.shape == (16, 16, 1)


# the split


def test_split_is_stratified_with_each_class_rounded_to_val_fraction():
    """Each class gives round(n x val_fraction) examples to validation, none to both splits."""
    labels = np.repeat(np.arange(3), [10, 21, 7])
    split = records.split_indices(labels, ["a", "b", "c"], 0.25, seed=1)
    val_counts = np.bincount(labels[split["validation"]], minlength=3)
    assert val_counts.tolist() == [3, 5, 2]
    assert not set(split["train"]) & set(split["validation"])
    assert len(split["train"]) + len(split["validation"]) == len(labels)


def test_same_seed_writes_the_same_shards_and_another_seed_another_split(tmp_path):
    """A seed fixes the split down to the bytes of every shard; another seed changes it."""
    metas = {
        name: records.prepare(tmp_path / name, "synthetic", seed=seed, shards=2, **SMALL)
        for name, seed in (("a", 7), ("b", 7), ("c", 8))
    }
    for name in metas["a"]["splits"]["train"]["shards"]:
        assert (tmp_path / "a/data" / name).read_bytes() == (
            tmp_path / "b/data" / name
        ).read_bytes()
    a = read_split(tmp_path / "a/data", metas["a"], "validation")
    c = read_split(tmp_path / "c/data", metas["c"], "validation")
    assert [x.tobytes() for x, _ in a] != [x.tobytes() for x, _ in c]
    assert metas["a"]["splits"]["validation"]["per_class"] == {"0": 4, "1": 4, "2": 4}


def test_record_round_trip_gives_identical_pixels_and_labels(tmp_path):
    """Decoding every record gives back exactly the source's images with their labels."""
    meta = records.prepare(tmp_path, "synthetic", shards=2, seed=3, **SMALL)
    source = sources.load_synthetic(SMALL["synthetic_shape"], 3, 60, seed=3)
    written = [
        item
        for split in ("train", "validation")
        for item in read_split(tmp_path / "data", meta, split)
    ]
    assert all(pixels.dtype == np.uint8 and pixels.shape == (8, 8, 3) for pixels, _ in written)
    expected = Counter(
        (pixels.tobytes(), int(label))
        for pixels, label in zip(source.images, source.labels, strict=True)
    )
    assert Counter((pixels.tobytes(), label) for pixels, label in written) == expected


def test_write_progress_counts_every_image_of_each_split(tmp_path, monkeypatch, capsys):
    """The last line of each split's progress says all of its images (it said 47/48)."""
    monkeypatch.setenv(progress.PROGRESS_ENV, "lines")
    meta = records.prepare(tmp_path, "synthetic", shards=2, test_fraction=0.2, **SMALL)
    said = capsys.readouterr().out
    for split, info in meta["splits"].items():
        count = info["count"]
        assert f"TFRecords, {split}: {count}/{count} image(s)" in said, said


def test_synthetic_images_follow_shape_classes_and_count(tmp_path):
    """synthetic_shape, _classes and _count decide what is written, for any benchmark size."""
    meta = records.prepare(
        tmp_path, "synthetic", synthetic_shape=(12, 10, 1), synthetic_classes=4, synthetic_count=40
    )
    assert meta["image_shape"] == [12, 10, 1] and meta["classes"] == ["0", "1", "2", "3"]
    assert meta["splits"]["train"]["count"] + meta["splits"]["validation"]["count"] == 40


# reuse, rewrite and interruption


def test_same_request_reuses_the_data_and_another_rewrites_it_cleanly(tmp_path):
    """A re-run with the same parameters rewrites nothing; other parameters leave no old shard."""
    first = records.prepare(tmp_path, "synthetic", shards=4, **SMALL)
    data = tmp_path / "data"
    stamps = {name: (data / name).stat().st_mtime_ns for name in shard_files(data)}
    again = records.prepare(tmp_path, "synthetic", shards=4, **SMALL)
    assert again["reused"] is True and again["splits"] == first["splits"]
    assert {name: (data / name).stat().st_mtime_ns for name in shard_files(data)} == stamps
    other = records.prepare(tmp_path, "synthetic", shards=2, **SMALL)
    assert other["reused"] is False
    names = [*other["splits"]["train"]["shards"], *other["splits"]["validation"]["shards"]]
    assert shard_files(data) == sorted(["meta.json", *names])
    assert all("-of-00002" in name for name in names)


def test_prepare_records_the_data_lineage_and_another_seed_changes_it(tmp_path):
    """lineage.json always holds the current data's fingerprint: after a write, after a reuse,
    and after a re-prepare with another seed, which gives another fingerprint."""
    records.prepare(tmp_path, "synthetic", seed=1, shards=2, **SMALL)
    first = lineage.read(tmp_path)["data"]
    assert first["step"] == "data" and first["inputs"] == {}
    assert first["fingerprint"] == lineage.fingerprint(tmp_path, "data") is not None
    (tmp_path / LINEAGE_FILE).unlink()
    assert records.prepare(tmp_path, "synthetic", seed=1, shards=2, **SMALL)["reused"] is True
    assert lineage.read(tmp_path)["data"]["fingerprint"] == first["fingerprint"]
    records.prepare(tmp_path, "synthetic", seed=2, shards=2, **SMALL)
    second = lineage.read(tmp_path)["data"]["fingerprint"]
    assert second == lineage.fingerprint(tmp_path, "data") != first["fingerprint"]


def test_interrupted_write_leaves_no_shard_no_temp_file_and_no_meta(tmp_path, monkeypatch):
    """A failure mid-way leaves no final-named partial shard and no meta.json (not reusable)."""
    records.prepare(tmp_path, "synthetic", **SMALL)  # a complete earlier run with other parameters
    real, calls = shards._example, []

    def failing(png: bytes, label: int) -> bytes:
        calls.append(label)
        if len(calls) == 30:  # in the second train shard: the first is complete by then
            raise KeyboardInterrupt
        return real(png, label)

    monkeypatch.setattr(shards, "_example", failing)
    with pytest.raises(KeyboardInterrupt):
        records.prepare(tmp_path, "synthetic", seed=1, shards=2, **SMALL)
    assert shard_files(tmp_path / "data") == []
    with pytest.raises(MissingInputError, match="01_data"):
        records.read_meta(tmp_path)


def test_shard_writer_renames_only_a_complete_shard(tmp_path):
    """When records run out early, the shard is not renamed into place and its temp file is gone."""
    target = tmp_path / "train-00000-of-00001.tfrecord"
    with pytest.raises(RuntimeError, match="1 records written, 2 expected"):
        shards._write_shard(target, iter([(b"png", 0)]), expected=2)
    assert list(tmp_path.iterdir()) == []


def test_read_meta_names_the_notebook_to_run_first(tmp_path):
    """Without data/meta.json the next step stops with one sentence naming 01_data."""
    with pytest.raises(MissingInputError, match=r"meta\.json is missing: run 01_data first"):
        records.read_meta(tmp_path)


# image_folder


def test_image_folder_reads_png_and_jpeg_classes_from_sorted_folders(tmp_path, folder):
    """Sorted folder names are the classes; PNG and JPEG of any case count, other files do not."""
    meta = records.prepare(
        tmp_path / "run", "image_folder", data_dir=folder, val_fraction=0.25, shards=2
    )
    assert meta["classes"] == ["cat", "dog", "owl"]
    assert meta["image_shape"] == [16, 16, 3]  # one colour image makes every image colour
    assert meta["splits"]["validation"]["per_class"] == {"cat": 1, "dog": 1, "owl": 1}
    assert meta["splits"]["train"]["count"] == 9
    assert meta["source"]["data_dir"] == str(folder.resolve())
    data = tmp_path / "run" / "data"
    pngs = read_split(data, meta, "train") + read_split(data, meta, "validation")
    assert {pixels.shape for pixels, _ in pngs} == {(16, 16, 3)}


def test_image_folder_keeps_grayscale_images_single_channel(tmp_path):
    """A folder of grayscale images is written with one channel, pixel for pixel."""
    gray = image(8, 8, 1, seed=5)
    for name in ("a", "b"):
        for index in range(2):
            write_image(tmp_path / "gray" / name / f"{index}.png", gray)
    meta = records.prepare(
        tmp_path / "run", "image_folder", data_dir=tmp_path / "gray", val_fraction=0.5, shards=1
    )
    assert meta["image_shape"] == [8, 8, 1]
    pixels, _ = read_records(tmp_path / "run/data" / meta["splits"]["train"]["shards"][0])[0]
    np.testing.assert_array_equal(pixels, gray)


def test_image_folder_changed_on_disk_is_written_again(tmp_path, folder):
    """An added image changes the folder's fingerprint, so the same parameters do not reuse."""
    records.prepare(tmp_path / "run", "image_folder", data_dir=folder, val_fraction=0.25)
    write_image(folder / "owl" / "4.png", image(16, 16, 3, seed=99))
    meta = records.prepare(tmp_path / "run", "image_folder", data_dir=folder, val_fraction=0.25)
    assert meta["reused"] is False and meta["splits"]["train"]["per_class"]["owl"] == 4


def test_mixed_sizes_are_resized_to_the_most_common_size(tmp_path, folder):
    """With image_size None, the odd-sized image is resized to the size most images have."""
    write_image(folder / "cat" / "odd.png", image(20, 12, 3))
    meta = records.prepare(tmp_path / "run", "image_folder", data_dir=folder, val_fraction=0.25)
    assert meta["image_shape"] == [16, 16, 3] and meta["resized"] == 1
    skipped, resized = meta["notes"]  # the fixture's dog/notes.txt is said skipped first
    assert skipped.startswith("1 file(s) skipped") and resized == "1 image(s) resized to 16x16."
    data = tmp_path / "run" / "data"
    shapes = {
        x.shape for split in ("train", "validation") for x, _ in read_split(data, meta, split)
    }
    assert shapes == {(16, 16, 3)}


def test_image_size_resizes_every_image_of_a_folder(tmp_path, folder):
    """image_size=24 writes 24x24 images whatever the files' sizes."""
    write_image(folder / "cat" / "odd.png", image(20, 12, 3))
    meta = records.prepare(
        tmp_path / "run", "image_folder", data_dir=folder, image_size=24, val_fraction=0.25
    )
    assert meta["image_shape"] == [24, 24, 3] and meta["resized"] == 13


def test_mixed_sizes_refused_name_two_files_and_their_sizes(tmp_path, folder):
    """mixed_sizes='refuse' stops before writing, naming one file of each size."""
    odd = write_image(folder / "owl" / "odd.png", image(20, 12, 3))
    with pytest.raises(DataError, match="have mixed sizes") as error:
        records.prepare(
            tmp_path / "run",
            "image_folder",
            data_dir=folder,
            mixed_sizes="refuse",
            val_fraction=0.25,
        )
    message = str(error.value)
    assert f"{odd} is 20x12" in message and "is 16x16" in message and "image_size" in message
    assert not (tmp_path / "run").exists()


def test_corrupt_jpeg_is_named_and_nothing_is_written(tmp_path, folder):
    """A truncated JPEG stops the step with one sentence naming the file."""
    good = folder / "dog" / "1.jpg"
    bad = folder / "dog" / "broken.jpg"
    bad.write_bytes(good.read_bytes()[:200])
    with pytest.raises(DataError, match="is not a readable image") as error:
        records.prepare(tmp_path / "run", "image_folder", data_dir=folder, val_fraction=0.25)
    assert str(bad) in str(error.value)
    assert not (tmp_path / "run").exists()


def test_empty_class_folder_is_named(tmp_path, folder):
    """A class folder with no image is refused by name (a typo'd or forgotten folder)."""
    (folder / "emu").mkdir()
    (folder / "emu" / "readme.txt").write_text("todo")
    with pytest.raises(DataError, match=r"emu holds no \.jpg, .* or \.webp image"):
        records.prepare(tmp_path / "run", "image_folder", data_dir=folder)


def test_single_class_folder_is_refused(tmp_path):
    """One class folder cannot train a classifier: the sentence names it and asks for two."""
    write_image(tmp_path / "one" / "only" / "a.png", image(8, 8))
    with pytest.raises(DataError, match=r"single class folder \(only\).*at least two"):
        records.prepare(tmp_path / "run", "image_folder", data_dir=tmp_path / "one")


def test_images_without_class_folders_are_refused(tmp_path):
    """Images straight in data_dir get a sentence that shows the expected layout."""
    write_image(tmp_path / "flat" / "a.png", image(8, 8))
    with pytest.raises(DataError, match="has no class sub-folders"):
        records.prepare(tmp_path / "run", "image_folder", data_dir=tmp_path / "flat")


def test_class_with_one_image_cannot_be_split(tmp_path, folder):
    """A class with a single image cannot give one to each split: the class is named."""
    write_image(tmp_path / "few" / "a" / "1.png", image(8, 8))
    write_image(tmp_path / "few" / "a" / "2.png", image(8, 8))
    write_image(tmp_path / "few" / "b" / "1.png", image(8, 8))
    with pytest.raises(DataError, match="Class 'b' has 1 example"):
        records.prepare(tmp_path / "run", "image_folder", data_dir=tmp_path / "few")


def test_val_fraction_too_small_for_a_class_names_the_usable_range(tmp_path):
    """val_fraction=0.01 leaves a 30-image class no validation image: the usable range is given."""
    two_classes = {**SMALL, "synthetic_classes": 2}
    usable = r"val_fraction=0\.01 leaves class '0' .* at least 0\.0167 and below 0\.9833\.$"
    with pytest.raises(DataError, match=usable):
        records.prepare(tmp_path, "synthetic", val_fraction=0.01, **two_classes)
    with pytest.raises(DataError, match=r"val_fraction=0\.99 .* without a training example"):
        records.prepare(tmp_path, "synthetic", val_fraction=0.99, **two_classes)
    assert not (tmp_path / "data").exists()


# tfrecord


def test_tfrecord_source_copies_checked_shards_with_the_same_records(tmp_path):
    """Shards from an earlier run are checked and copied; every record and count is kept."""
    first = records.prepare(tmp_path / "a", "synthetic", shards=2, **SMALL)
    meta = records.prepare(tmp_path / "b", "tfrecord", data_dir=tmp_path / "a" / "data")
    assert meta["dataset"] == "tfrecord" and meta["origin"]["dataset"] == "synthetic"
    assert (meta["classes"], meta["image_shape"]) == (first["classes"], first["image_shape"])
    assert meta["splits"] == first["splits"]
    for split in ("train", "validation"):
        old = read_split(tmp_path / "a" / "data", first, split)
        new = read_split(tmp_path / "b" / "data", meta, split)
        assert [(x.tobytes(), y) for x, y in old] == [(x.tobytes(), y) for x, y in new]
    again = records.prepare(tmp_path / "b", "tfrecord", data_dir=tmp_path / "a" / "data")
    assert again["reused"] is True


def test_truncated_tfrecord_is_named_and_nothing_is_copied(tmp_path):
    """A shard cut short (an interrupted copy) is refused by name before anything is copied."""
    first = records.prepare(tmp_path / "a", "synthetic", shards=2, **SMALL)
    shard = tmp_path / "a" / "data" / first["splits"]["validation"]["shards"][1]
    shard.write_bytes(shard.read_bytes()[:-40])
    with pytest.raises(DataError, match="is truncated or corrupt") as error:
        records.prepare(tmp_path / "b", "tfrecord", data_dir=tmp_path / "a" / "data")
    assert str(shard) in str(error.value)
    assert not (tmp_path / "b").exists()


def test_tfrecord_meta_that_does_not_match_its_shards_is_refused(tmp_path):
    """A meta.json whose counts disagree with the records is named, with both counts."""
    records.prepare(tmp_path / "a", "synthetic", shards=2, **SMALL)
    meta_path = tmp_path / "a" / "data" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["splits"]["train"]["per_class"]["0"] += 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(DataError, match=r"meta\.json does not match its shards: the train"):
        records.prepare(tmp_path / "b", "tfrecord", data_dir=tmp_path / "a" / "data")


def test_tfrecord_folder_without_meta_or_with_a_missing_shard_is_refused(tmp_path):
    """Shards need their meta.json, and every shard meta.json lists must be there."""
    first = records.prepare(tmp_path / "a", "synthetic", shards=2, **SMALL)
    data = tmp_path / "a" / "data"
    (data / first["splits"]["train"]["shards"][0]).unlink()
    with pytest.raises(DataError, match=r"lists the shard 'train-00000-of-00002\.tfrecord'"):
        records.prepare(tmp_path / "b", "tfrecord", data_dir=data)
    (data / "meta.json").unlink()
    with pytest.raises(DataError, match=r"has no meta\.json"):
        records.prepare(tmp_path / "b", "tfrecord", data_dir=data)


# keras.datasets


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "cifar10"])
def test_keras_source_offline_fails_in_one_sentence(tmp_path, monkeypatch, name):
    """Without internet, keras' download error becomes one sentence naming the offline sources."""

    def offline():
        raise OFFLINE

    monkeypatch.setattr(getattr(keras.datasets, name), "load_data", offline)
    with pytest.raises(DataError) as error:
        records.prepare(tmp_path, name)
    message = str(error.value)
    assert message.startswith(f"Downloading {name} through keras.datasets failed (URL fetch")
    assert "dataset='digits'" in message and "dataset='image_folder'" in message
    assert "\n" not in message and message.count(". ") == 0
    assert not (tmp_path / "data").exists()


def test_keras_source_pools_train_and_test_with_class_names(tmp_path, monkeypatch):
    """cifar10-shaped arrays (labels N x 1) become 32x32x3 records with CIFAR's class names."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(40, 32, 32, 3), dtype=np.uint8)
    y = np.arange(40).reshape(-1, 1) % 10
    parts = ((x[:30], y[:30]), (x[30:], y[30:]))
    monkeypatch.setattr(keras.datasets.cifar10, "load_data", lambda: parts)
    meta = records.prepare(tmp_path, "cifar10", val_fraction=0.5, shards=1)
    assert meta["classes"][:3] == ["airplane", "automobile", "bird"]
    assert meta["image_shape"] == [32, 32, 3]
    assert meta["splits"]["validation"]["per_class"]["truck"] == 2


# every bad-input sentence, before anything is written


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"dataset": "imagenet"}, "dataset='imagenet' is not a known source: use one of digits, "),
        ({"dataset": "image_folder"}, "dataset='image_folder' needs data_dir: a folder with one"),
        ({"dataset": "tfrecord"}, "dataset='tfrecord' needs data_dir: a folder with the shards"),
        ({"data_dir": "somewhere"}, "data_dir='somewhere' is only read by dataset='image_folder'"),
        ({"image_size": 7}, "image_size=7 is not allowed: use a whole number from 8 to 4096"),
        ({"image_size": 24.0}, "image_size=24.0 is not allowed"),
        ({"image_size": True}, "image_size=True is not allowed"),
        ({"mixed_sizes": "crop"}, "mixed_sizes='crop' is not allowed: use 'resize'"),
        ({"val_fraction": 0}, "val_fraction=0 is not allowed: use a number between 0 and 1"),
        ({"val_fraction": 1.0}, "val_fraction=1.0 is not allowed"),
        ({"val_fraction": "0.2"}, "val_fraction='0.2' is not a number"),
        ({"shards": 0}, "shards=0 is not allowed: use a whole number >= 1"),
        ({"shards": 2.5}, "shards=2.5 is not allowed"),
        ({"seed": "x"}, "seed='x' is not allowed: use a whole number"),
        (
            {"dataset": "synthetic", "synthetic_shape": (8, 8, 2)},
            "synthetic_shape=(8, 8, 2) is not allowed: use [height, width, channels]",
        ),
        (
            {"dataset": "synthetic", "synthetic_classes": 1},
            "synthetic_classes=1 is not allowed: use a whole number >= 2",
        ),
        (
            {"dataset": "synthetic", "synthetic_count": 5},
            "synthetic_count=5 is not allowed: use a whole number >= 20",
        ),
    ],
)
def test_bad_parameters_are_refused_in_one_sentence_naming_the_value(tmp_path, kwargs, fragment):
    """Each bad value gets one sentence naming it and what is allowed; no file is written."""
    with pytest.raises(DataError) as error:
        records.prepare(tmp_path, **kwargs)
    assert fragment in str(error.value)
    assert_one_sentence(str(error.value))
    assert list(tmp_path.iterdir()) == []


def test_unknown_dataset_sentence_lists_every_source(tmp_path):
    """The refusal of an unknown dataset names all the sources there are."""
    with pytest.raises(DataError) as error:
        records.prepare(tmp_path, "imagenet")
    assert all(name in str(error.value) for name in SOURCES)


@pytest.mark.parametrize("dataset", ["image_folder", "tfrecord"])
def test_data_dir_that_does_not_exist_is_named(tmp_path, dataset):
    """A mistyped data_dir is named in full, before anything else happens."""
    missing = tmp_path / "no" / "such"
    with pytest.raises(DataError, match=re.escape(f"data_dir {missing} does not exist")):
        records.prepare(tmp_path / "run", dataset, data_dir=missing)
    assert not (tmp_path / "run").exists()


def test_tfrecord_refuses_image_size_and_its_own_data_folder(tmp_path):
    """Copied shards cannot be resized, and a run cannot copy its own data folder onto itself."""
    records.prepare(tmp_path, "synthetic", **SMALL)
    data = tmp_path / "data"
    with pytest.raises(DataError, match="image_size=24 does not apply to dataset='tfrecord'"):
        records.prepare(tmp_path / "b", "tfrecord", data_dir=data, image_size=24)
    with pytest.raises(DataError, match="is this run's own data folder"):
        records.prepare(tmp_path, "tfrecord", data_dir=data)
    assert (data / "meta.json").is_file()


def test_the_data_step_says_what_it_prepares_before_it(tmp_path: Path, monkeypatch, capsys) -> None:
    """01's longest silent stretch (reading the images, writing the shards) is announced first."""
    from {{ cookiecutter.package_name }}.prepare import entry
    from {{ cookiecutter.package_name }}.tasks.image import data_step

    seen: list[str] = []

    def prepare(*_args, **_kwargs):
        seen.append(capsys.readouterr().out)
        raise RuntimeError("reached")

    monkeypatch.setattr(data_step, "prepare", prepare)
    with pytest.raises(RuntimeError, match="reached"):
        entry.run(str(tmp_path / "run"), data_step.Params())
    assert f"{progress.MARK}Preparing digits: reading the images" in seen[0]
