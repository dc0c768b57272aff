"""Step 1 on a folder of real photographs: JPEG shards, parallel writing, the read regimes, the
cache decision, the decode-only reference, and every kind of bad file a real photo folder holds."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence
from photos import make_photo_folder
from PIL import Image

from {{ cookiecutter.package_name }}.tasks.image import benchmark, cache, decode, photo_io, pipeline, records
from {{ cookiecutter.package_name }}.tasks.image.sources import DataError

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def record_bytes(data: Path, meta: dict, split: str = "train") -> list[bytes]:
    """The encoded image of every record of a split, in shard order, read with plain tf.io."""
    out = []
    for name in meta["splits"][split]["shards"]:
        for record in tf.data.TFRecordDataset(str(data / name)):
            out.append(tf.io.parse_single_example(record, FEATURES)["image"].numpy())
    return out


def all_images(run: Path, split: str = "train") -> np.ndarray:
    return np.concatenate([x for x, _ in pipeline.make_dataset(run, split, 64, training=False)])


def save(path: Path, image: Image.Image, kind: str = "JPEG", **options) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, kind, **options)
    return path


def smooth(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A smooth colour image (compresses like a photo, survives JPEG within a few levels)."""
    rows, cols = np.mgrid[0:height, 0:width]
    phase = seed * 0.7
    channels = [np.sin(rows / 7 + phase + k) + np.cos(cols / 9 - k) for k in range(3)]
    return ((np.stack(channels, -1) + 2) * 63).astype(np.uint8)


@pytest.fixture(scope="module")
def photo_folder(tmp_path_factory) -> Path:
    return make_photo_folder(tmp_path_factory.mktemp("photos"), 12, 3, (160, 240), seed=1)


@pytest.fixture(scope="module")
def photo_run(tmp_path_factory, photo_folder) -> Path:
    run = tmp_path_factory.mktemp("run")
    records.prepare(run, "image_folder", data_dir=photo_folder, image_size=96, workers=1)
    return run


# --- writing -------------------------------------------------------------------------------------


def test_photos_are_written_as_jpeg_within_the_source_bytes(photo_run: Path) -> None:
    """encoding=auto keeps photos JPEG: the shards are not larger than the folder they came from."""
    meta = records.read_meta(photo_run)
    write = meta["write"]
    assert meta["encoding"] == "jpeg" and meta["jpeg_quality"] == 95
    assert write["shard_bytes"] <= 1.1 * write["source_bytes"], write
    assert write["examples_per_sec"] > 0 and write["workers"] == 1


def test_a_jpeg_of_the_right_size_keeps_its_own_bytes(tmp_path: Path) -> None:
    """No resize, upright, RGB: the record holds the file's bytes, not a decode and re-encode."""
    for label in ("a", "b"):
        for index in range(3):
            save(tmp_path / "src" / label / f"{index}.jpg", Image.fromarray(smooth(64, 80, index)))
    meta = records.prepare(tmp_path / "run", "image_folder", data_dir=tmp_path / "src", shards=1)
    files = {path.read_bytes() for path in (tmp_path / "src").rglob("*.jpg")}
    stored = record_bytes(tmp_path / "run" / "data", meta) + record_bytes(
        tmp_path / "run" / "data", meta, "validation"
    )
    assert set(stored) == files and meta["write"]["kept_original_files"] == 6


def test_workers_write_the_same_shards_as_one_process(tmp_path: Path, photo_folder: Path) -> None:
    """Two worker processes write byte-identical shards in the same order as one process."""
    metas = {}
    for workers in (1, 2):
        metas[workers] = records.prepare(
            tmp_path / f"run{workers}",
            "image_folder",
            data_dir=photo_folder,
            image_size=64,
            workers=workers,
        )
    assert metas[2]["write"]["workers"] == 2
    for name in metas[1]["splits"]["train"]["shards"]:
        one = (tmp_path / "run1" / "data" / name).read_bytes()
        assert one == (tmp_path / "run2" / "data" / name).read_bytes()


def test_a_script_without_a_main_guard_can_use_workers(tmp_path: Path, photo_folder: Path) -> None:
    """Spawned workers do not re-run the caller's script (which would prepare again, and fail)."""
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from {{ cookiecutter.package_name }}.tasks.image import records
            meta = records.prepare({str(tmp_path / "run")!r}, "image_folder",
                                   data_dir={str(photo_folder)!r}, image_size=32, workers=2)
            print("written by", meta["write"]["workers"])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("written by 2") == 1


def test_worker_processes_do_not_load_tensorflow() -> None:
    """The module the workers import stays free of TensorFlow (data/__init__ loads lazily)."""
    module = "{{ cookiecutter.package_name }}.tasks.image.photo_io"
    code = f"import sys; import {module}; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_a_file_failing_while_written_leaves_nothing_behind(
    tmp_path: Path, photo_folder: Path, monkeypatch
) -> None:
    """A file that breaks after the check stops the step, naming it, with no shard or meta.json."""
    real = photo_io.encode

    def flaky(task):
        return (
            (None, "cannot be decoded (broken data)", False) if "_00005" in task[0] else real(task)
        )

    monkeypatch.setattr(photo_io, "encode", flaky)
    with pytest.raises(DataError, match=r"_00005\.jpg is not a readable image") as error:
        records.prepare(tmp_path, "image_folder", data_dir=photo_folder, image_size=32, workers=1)
    assert_one_sentence(str(error.value))
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == []


# --- the bad-input list of a real photo folder ----------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Two classes of RGB JPEGs, 48x64, to which each test adds one awkward file."""
    for label in ("cat", "dog"):
        for index in range(3):
            image = Image.fromarray(smooth(48, 64, index + (label == "dog") * 5))
            save(tmp_path / "src" / label / f"{index}.jpg", image, quality=95)
    return tmp_path / "src"


def prepared(tmp_path: Path, folder: Path, **options) -> tuple[dict, np.ndarray]:
    options = {"val_fraction": 0.25, "shards": 1, **options}
    meta = records.prepare(tmp_path / "run", "image_folder", data_dir=folder, **options)
    return meta, np.concatenate(
        [all_images(tmp_path / "run"), all_images(tmp_path / "run", "validation")]
    )


def test_cmyk_jpeg_becomes_rgb_with_its_colours(tmp_path: Path, mixed: Path) -> None:
    """A CMYK JPEG (print workflows) is converted to RGB, its colours kept."""
    colour = smooth(48, 64, 9)
    save(mixed / "cat" / "cmyk.jpg", Image.fromarray(colour).convert("CMYK"), quality=95)
    meta, _ = prepared(tmp_path, mixed)
    assert meta["image_shape"] == [48, 64, 3]
    data = tmp_path / "run" / "data"
    images = [
        tf.io.decode_jpeg(x).numpy()
        for x in record_bytes(data, meta) + record_bytes(data, meta, "validation")
    ]
    errors = [np.abs(image.astype(int) - colour).mean() for image in images]
    assert min(errors) < 4, errors  # one record is the CMYK photo, back in RGB


def test_16_bit_png_keeps_its_top_8_bits(tmp_path: Path) -> None:
    """A 16-bit greyscale PNG (scanners, microscopes) is scaled to 8 bits, not clipped to white."""
    ramp = (np.arange(16 * 16, dtype=np.uint16).reshape(16, 16) * 257).astype(np.uint16)
    for label in ("a", "b"):
        for index in range(2):
            save(
                tmp_path / "src" / label / f"{index}.png",
                Image.fromarray((ramp >> 8).astype(np.uint8)),
                "PNG",
            )
    save(tmp_path / "src" / "a" / "deep.png", Image.fromarray(ramp), "PNG")
    meta, images = prepared(tmp_path, tmp_path / "src", val_fraction=0.5)
    assert meta["encoding"] == "png" and meta["image_shape"] == [16, 16, 1]
    for image in images:  # all five are the same ramp, the 16-bit one included
        np.testing.assert_array_equal(image[..., 0], (ramp >> 8).astype(np.uint8))


def test_greyscale_jpeg_among_rgb_is_kept_and_read_as_rgb(tmp_path: Path, mixed: Path) -> None:
    """A greyscale JPEG keeps its bytes; reading gives three equal channels like the others."""
    grey = save(mixed / "dog" / "grey.jpg", Image.fromarray(smooth(48, 64)[..., 0]), quality=90)
    meta, images = prepared(tmp_path, mixed)
    assert meta["image_shape"] == [48, 64, 3]
    data = tmp_path / "run" / "data"
    assert grey.read_bytes() in record_bytes(data, meta) + record_bytes(data, meta, "validation")
    assert any(
        (image[..., 0] == image[..., 1]).all() and (image[..., 1] == image[..., 2]).all()
        for image in images
    )


def test_exif_rotated_photo_is_turned_upright(tmp_path: Path, mixed: Path) -> None:
    """A phone photo stored sideways with EXIF orientation 6 is written the way it is seen."""
    upright = np.zeros((48, 64, 3), np.uint8)
    upright[:, :32] = 255  # seen: white left half, black right half
    stored = Image.fromarray(upright).transpose(Image.Transpose.ROTATE_90)  # 64 high, 48 wide
    exif = Image.Exif()
    exif[photo_io.ORIENTATION] = 6
    save(mixed / "cat" / "phone.jpg", stored, quality=95, exif=exif.tobytes())
    meta, images = prepared(tmp_path, mixed)
    assert meta["image_shape"] == [48, 64, 3] and meta["resized"] == 0
    assert "1 image(s) turned upright by their EXIF orientation." in meta["notes"]
    halves = [(image[:, :32].mean(), image[:, 32:].mean()) for image in images]
    assert any(left > 240 and right < 15 for left, right in halves), halves


def test_png_named_jpg_is_read_as_the_png_it_is(tmp_path: Path) -> None:
    """A PNG saved with a .jpg name is read by its content, pixel for pixel."""
    pixels = smooth(16, 16, 3)
    for label in ("a", "b"):
        for index in range(2):
            save(tmp_path / "src" / label / f"{index}.jpg", Image.fromarray(pixels), "PNG")
    meta, images = prepared(tmp_path, tmp_path / "src", val_fraction=0.5)
    assert meta["encoding"] == "png"
    for image in images:
        np.testing.assert_array_equal(image, pixels)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "is empty (0 bytes)"),
        (b"holiday pictures, see the other folder\n", "is not an image"),
        ("truncated", "cannot be read"),
    ],
    ids=["zero-byte", "text-named-jpg", "truncated-jpeg"],
)
def test_unreadable_file_is_named_before_anything_is_written(
    tmp_path: Path, mixed: Path, content, says: str
) -> None:
    """Zero bytes, text named .jpg, a JPEG cut off mid-download: one sentence naming the file."""
    bad = mixed / "dog" / "bad.jpg"
    if content == "truncated":
        good = io.BytesIO()
        Image.fromarray(smooth(48, 64, 7)).save(good, "JPEG", quality=95)
        content = good.getvalue()[: len(good.getvalue()) // 2]
    bad.write_bytes(content)
    with pytest.raises(DataError, match="is not a readable image") as error:
        records.prepare(tmp_path / "run", "image_folder", data_dir=mixed)
    assert str(bad) in str(error.value) and says in str(error.value)
    assert_one_sentence(str(error.value))
    assert not (tmp_path / "run" / "data").exists()


def test_a_class_with_one_photo_is_refused_naming_the_class(tmp_path: Path, mixed: Path) -> None:
    """One photo cannot be both trained on and validated: the class is named, nothing written."""
    save(mixed / "owl" / "only.jpg", Image.fromarray(smooth(48, 64, 2)))
    with pytest.raises(DataError, match="Class 'owl' has 1 example") as error:
        records.prepare(tmp_path / "run", "image_folder", data_dir=mixed)
    assert_one_sentence(str(error.value))
    assert not (tmp_path / "run" / "data").exists()


def test_an_in_memory_source_at_photo_size_is_written_as_jpeg(tmp_path: Path) -> None:
    """encoding=auto: 64x64 and larger images are JPEG even from memory; smaller stay PNG."""
    small = {"synthetic_classes": 2, "synthetic_count": 20}
    big = records.prepare(tmp_path / "big", "synthetic", synthetic_shape=(64, 64, 3), **small)
    tiny = records.prepare(tmp_path / "tiny", "synthetic", synthetic_shape=(8, 8, 3), **small)
    assert (big["encoding"], tiny["encoding"]) == ("jpeg", "png")
    assert all_images(tmp_path / "big").shape[1:] == (64, 64, 3)


def test_jpeg_shards_can_be_the_source_of_another_run(tmp_path: Path, photo_run: Path) -> None:
    """dataset='tfrecord' checks and copies JPEG shards as it does PNG ones."""
    meta = records.prepare(tmp_path, "tfrecord", data_dir=photo_run / "data")
    assert meta["encoding"] == "jpeg" and meta["image_shape"] == [96, 96, 3]
    np.testing.assert_array_equal(all_images(tmp_path), all_images(photo_run))


def test_bad_write_settings_are_refused_in_one_sentence(tmp_path: Path, mixed: Path) -> None:
    for options, fragment in (
        ({"encoding": "webp"}, "encoding='webp'"),
        ({"jpeg_quality": 0}, "jpeg_quality=0"),
        ({"workers": 0}, "workers=0"),
        ({"workers": "all"}, "workers='all'"),
    ):
        with pytest.raises(DataError, match=fragment) as error:
            records.prepare(tmp_path / "run", "image_folder", data_dir=mixed, **options)
        assert_one_sentence(str(error.value))


# --- reading -------------------------------------------------------------------------------------


def test_the_read_regime_follows_the_image_size() -> None:
    """Digits are parsed in batches; photos decoded one record per parallel call."""
    assert decode.read_regime((8, 8, 1)) == "batched"
    assert decode.read_regime((32, 32, 3)) == "batched"
    assert decode.read_regime((224, 224, 3)) == "per_record"
    line = pipeline.describe(image_shape=(224, 224, 3), encoding="jpeg")
    assert "map(parse_single_example + decode_jpeg, parallel)" in line and "batch(256)" not in line


def test_uncached_photos_are_shuffled_before_decoding_every_record_once(photo_run: Path) -> None:
    """Without a cache, photos are shuffled as small encoded records, a new order each epoch."""
    line = pipeline.describe(pipeline.Stages(cache=False), image_shape=(96, 96, 3), encoding="jpeg")
    assert line.index("shuffle(encoded records)") < line.index("decode_jpeg")
    dataset = pipeline.make_dataset(photo_run, "train", 64, cache=False, seed=5)
    epochs = [np.concatenate([y for _, y in dataset]) for _ in range(2)]
    count = records.read_meta(photo_run)["splits"]["train"]["count"]
    assert len(epochs[0]) == count and sorted(epochs[0]) == sorted(epochs[1])
    firsts = [np.concatenate([x for x, _ in dataset.take(1)]) for _ in range(2)]
    assert not np.array_equal(firsts[0], firsts[1])


def test_augment_on_photos_crops_while_decoding(photo_run: Path) -> None:
    """augment=True on JPEG photos decodes a random window (decode_and_crop_jpeg), resized back."""
    line = pipeline.describe(augment=True, image_shape=(96, 96, 3), encoding="jpeg")
    assert "decode_and_crop_jpeg" in line and "translate" not in line
    plain = pipeline.make_dataset(photo_run, "train", 8, training=True, cache=False, seed=3)
    crops = pipeline.make_dataset(
        photo_run, "train", 8, training=True, cache=False, augment=True, seed=3
    )
    (a, labels_a), (b, labels_b) = next(iter(plain)), next(iter(crops))
    assert b.shape == (8, 96, 96, 3) and b.dtype == tf.uint8
    np.testing.assert_array_equal(labels_a, labels_b)  # the same records, in the same order
    assert not np.array_equal(a.numpy(), b.numpy())


def test_cache_auto_caches_only_what_fits_the_memory_share(monkeypatch) -> None:
    """cache='auto' says in one sentence whether it caches, and why."""
    monkeypatch.setattr(cache, "available_memory", lambda: 4 * 10**9)
    small = cache.decide("auto", 1000, (224, 224, 3))  # 150 MB of 1 GB allowed
    big = cache.decide("auto", 100_000, (224, 224, 3))  # 15 GB
    assert small["cache"] is True and big["cache"] is False
    assert (
        big["cache_budget_bytes"] == 10**9
        and "exceed 25% of the available memory" in big["cache_reason"]
    )
    assert_one_sentence(big["cache_reason"])
    assert cache.decide(True, 100_000, (224, 224, 3))["cache"] is True
    with pytest.raises(DataError, match="cache='yes'"):
        cache.decide("yes", 1, (8, 8, 1))


def test_benchmark_reports_the_cold_epoch_against_a_decode_only_pipeline(photo_run: Path) -> None:
    """Every pipeline has a cold-epoch rate; the decode-only reference and the ratio to it are
    reported, and named as a reference: a pipeline that beats it is not said to beat a limit."""
    result = benchmark.benchmark_pipeline(photo_run, 16, seconds=4, steps=True, rounds=1)
    assert result["read_regime"] == "per_record" and result["encoding"] == "jpeg"
    assert "batch before parse" not in [row["name"] for row in result["steps"]]
    assert all(row["first_epoch_examples_per_sec"] > 0 for row in result["steps"])
    assert result["decode_only_examples_per_sec"] > 0
    assert result["cold_examples_per_sec"] > 0
    if result["too_short"]:  # a busy machine: no ratio is written (issue 42 §1.6)
        assert result["cold_vs_decode_only"] is None and result["cold_speedup_vs_naive"] is None
    else:
        assert result["cold_vs_decode_only"] == pytest.approx(
            result["cold_examples_per_sec"] / result["decode_only_examples_per_sec"]
        )
        assert result["cold_speedup_vs_naive"] > 0
    assert "configured, no cache" not in [row["name"] for row in result["steps"]]
    assert not [key for key in result if "limit" in key]
    if not result["too_short"]:
        assert "decode-only" in result["verdict"] and "limit" not in result["verdict"]
    assert result["cache_reason"].endswith(".")
