"""What a photo folder is written as: the size chosen for mixed sizes (the most common), the
shard files (renamed into place when whole, their temporary files cleared) and how records are
read back. The seeded split every task shares is tested in test_data_split_shared.py."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from {{ cookiecutter.package_name }}.tasks.image import decode, image_folder, photo_io, shards
from {{ cookiecutter.package_name }}.tasks.image.image_source import DataError, Source


def save(path: Path, image: Image.Image, kind: str = "PNG", **options) -> str:
    image.save(path, kind, **options)
    return str(path)


def halves(height: int, width: int) -> np.ndarray:
    """RGB, white top half over a black bottom half."""
    image = np.zeros((height, width, 3), np.uint8)
    image[: height // 2] = 255
    return image


def probed(tmp_path, found: list[photo_io.Probe], mixed_sizes: str = "resize", size=None):
    """inspect_image_folder on a two-class folder whose headers say `found` (no files opened)."""
    files = [tmp_path / f"{index}.jpg" for index in range(len(found))]
    labels = np.arange(len(found)) % 2
    scan = image_folder.FolderScan(tmp_path, ["a", "b"], files, labels, "f", ["scanned."])
    answers = dict(zip(map(str, files), found, strict=True))

    def pmap(function, paths):
        assert function is photo_io.probe
        return map(answers.get, paths)

    return image_folder.inspect_image_folder(scan, size, mixed_sizes, pmap)


def test_mixed_sizes_are_resized_to_the_most_common_size_not_the_first(tmp_path) -> None:
    small, big = photo_io.Probe("JPEG", "RGB", 10, 20), photo_io.Probe("PNG", "L", 30, 40)
    turned = photo_io.Probe("JPEG", "RGB", 30, 40, orientation=6, frames=2)
    source = probed(tmp_path, [small, big, turned])
    assert source.image_shape == (30, 40, 3) and source.resized == 1
    assert source.formats == ["JPEG", "PNG", "JPEG"]
    assert source.notes == [
        "scanned.",
        "1 image(s) resized to 30x40.",
        "1 image(s) turned upright by their EXIF orientation.",
        "1 animated image(s): the first frame of each is used.",
    ]
    assert (source.dataset, source.classes, source.files) == (
        "image_folder",
        ["a", "b"],
        [tmp_path / f"{index}.jpg" for index in range(3)],
    )
    assert list(source.labels) == [0, 1, 0]
    same = probed(tmp_path, [big, big], "refuse")
    assert (same.image_shape, same.resized, same.notes) == ((30, 40, 1), 0, ["scanned."])
    asked = probed(tmp_path, [small, big], "refuse", size=24)
    assert (asked.image_shape, asked.resized) == ((24, 24, 3), 2)
    third = photo_io.Probe("PNG", "RGB", 5, 5)
    with pytest.raises(DataError, match=r"is 10x20 and .*1\.jpg is 30x40: set image_size"):
        probed(tmp_path, [small, big, third], "refuse")
    with pytest.raises(DataError) as refused:
        probed(tmp_path, [small, big, turned], "refuse")
    assert str(refused.value) == (
        f"Images in {tmp_path} have mixed sizes, e.g. {tmp_path / '0.jpg'} is 10x20 and "
        f"{tmp_path / '1.jpg'} is 30x40: set image_size to resize them all, or "
        "mixed_sizes='resize' to resize them to the most common size (30x40)."
    )


def test_a_bad_header_is_named_with_how_many_more_fail(tmp_path, monkeypatch) -> None:
    shown = []

    def track(items, total, what, unit):
        shown.append((total, what, unit))
        return items

    monkeypatch.setattr(image_folder, "track", track)
    good, bad = photo_io.Probe("JPEG", "RGB", 8, 8), photo_io.Probe(error="is empty (0 bytes)")
    cut = photo_io.Probe(error="cannot be read (broken data)")
    with pytest.raises(DataError) as refused:
        probed(tmp_path, [good, bad])
    assert str(refused.value) == (
        f"{tmp_path / '1.jpg'} is not a readable image: it is empty (0 bytes); fix or remove it "
        "(allowed: JPEG, PNG, BMP, GIF and WebP files that open in an image viewer)."
    )
    assert shown == [(2, "Checking images", "image")]
    with pytest.raises(DataError) as refused:
        probed(tmp_path, [good, bad, cut])
    assert str(refused.value) == (
        f"{tmp_path / '1.jpg'} is not a readable image: it is empty (0 bytes) (1 more file(s) "
        f"fail too, e.g. {tmp_path / '2.jpg'}); fix or remove it (allowed: JPEG, PNG, BMP, GIF "
        "and WebP files that open in an image viewer)."
    )


def test_clearing_shards_removes_meta_shards_and_half_written_files_only(tmp_path) -> None:
    names = [
        "meta.json",
        "train-00000-of-00002.tfrecord",
        "test-00001-of-00002.tfrecord",
        ".validation-00000-of-00001.tfrecord.tmp-k2j4",
        "notes.txt",
        "train-0-of-2.tfrecord",
        "train-00000-of-00002.tfrecord.bak",
    ]
    for name in names:
        (tmp_path / name).write_text("x")
    shards.clear_shards(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(names[4:])
    shards.clear_shards(tmp_path)  # no meta.json: nothing to remove, no error
    assert shards.shard_name("validation", 3, 12) == "validation-00003-of-00012.tfrecord"


def test_photos_are_written_as_jpeg_and_small_lossless_sources_as_png() -> None:
    def source(height: int, width: int, formats=None) -> Source:
        return Source("x", ["a"], np.zeros(1), (height, width, 3), formats=formats)

    assert shards.choose_encoding("auto", source(64, 64)) == "jpeg"
    assert shards.choose_encoding("auto", source(63, 64)) == "png"
    assert shards.choose_encoding("auto", source(8, 8, ["PNG", "MPO"])) == "jpeg"
    assert shards.choose_encoding("auto", source(8, 8, ["JPEG"])) == "jpeg"
    assert shards.choose_encoding("auto", source(8, 8, ["PNG"])) == "png"
    assert shards.choose_encoding("png", source(224, 224, ["JPEG"])) == "png"


def test_file_records_come_in_split_order_with_their_labels_and_kept_count(tmp_path) -> None:
    kept_jpeg = save(tmp_path / "a.jpg", Image.fromarray(halves(8, 8)), "JPEG")
    png = save(tmp_path / "b.png", Image.fromarray(halves(8, 8)))
    source = Source("image_folder", ["a", "b"], np.array([0, 1]), (8, 8, 3))
    source.files = [Path(kept_jpeg), Path(png)]
    kept = [4]  # counted on from the splits before
    out = list(shards._file_records(source, np.array([1, 0]), "jpeg", 95, map, kept))
    assert [label for _, label in out] == [1, 0] and kept == [5]
    assert out[1][0] == Path(kept_jpeg).read_bytes() and out[0][0][:2] == b"\xff\xd8"
    Path(png).write_bytes(b"")
    with pytest.raises(DataError) as refused:
        list(shards._file_records(source, np.array([0, 1]), "jpeg", 95, map, kept))
    said = str(refused.value)
    assert said.startswith(f"{png} is not a readable image: it cannot be decoded (cannot ident")
    assert said.endswith(
        "); fix or remove it (allowed: JPEG and PNG files that open in an image viewer)."
    )


def test_a_shard_is_renamed_into_place_only_when_every_record_is_in(tmp_path) -> None:
    png = io.BytesIO()
    Image.fromarray(halves(4, 6)).save(png, "PNG")
    path = tmp_path / shards.shard_name("train", 0, 1)
    seen = []

    def records():
        seen.extend(p.name for p in tmp_path.iterdir())  # while the shard is being written
        yield png.getvalue(), 1
        yield png.getvalue(), 0

    shards._write_shard(path, records(), 2)
    assert len(seen) == 1 and seen[0].startswith(".train-00000-of-00001.tfrecord.tmp-")
    read = [shards.parse_record(record) for record in tf.data.TFRecordDataset(str(path))]
    assert [int(label) for _, label in read] == [1, 0]
    np.testing.assert_array_equal(read[0][0].numpy(), halves(4, 6))
    short = tmp_path / shards.shard_name("validation", 0, 1)
    with pytest.raises(RuntimeError, match="^validation-00000-of-00001.tfrecord: 1 records "):
        shards._write_shard(short, [(png.getvalue(), 1)], 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_shard_is_copied_under_a_temporary_name_beside_it(tmp_path, monkeypatch) -> None:
    """A copied shard appears under its name only when whole; a full disk leaves nothing."""
    shard = tmp_path / "old.tfrecord"
    shard.write_bytes(b"records")
    copied = tmp_path / "copy" / "train-00000-of-00001.tfrecord"
    copied.parent.mkdir()
    real, targets = shards.shutil.copyfile, []

    def copyfile(source, target):
        targets.append(Path(target))
        return real(source, target)

    monkeypatch.setattr(shards.shutil, "copyfile", copyfile)
    shards._copy_file(shard, copied)
    assert copied.read_bytes() == b"records" and targets[0].parent == copied.parent
    assert targets[0].name.startswith(".train-00000-of-00001.tfrecord.tmp-")

    def full(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shards.shutil, "copyfile", full)
    with pytest.raises(OSError, match="No space left on device"):
        shards._copy_file(shard, copied.parent / "validation-00000-of-00001.tfrecord")
    assert sorted(p.name for p in copied.parent.iterdir()) == [copied.name]


def tf_example(data: bytes, label: int) -> bytes:
    """A record as shards.py writes it, built here: mutmut must not link this TensorFlow test
    (map_fn hangs in mutmut's forked children) to a mutated function."""
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_records_decode_to_the_shape_and_label_meta_json_gives() -> None:
    image = halves(4, 6)
    example = tf_example(tf.io.encode_png(image).numpy(), 3)
    jpeg = tf_example(tf.io.encode_jpeg(image, quality=100).numpy(), 2)
    pixels_, label = decode.record_decoder((4, 6, 3), "png")(tf.constant(example))
    assert label.dtype == tf.int32 and int(label) == 3
    np.testing.assert_array_equal(pixels_.numpy(), image)
    pixels_, label = decode.record_decoder((4, 6, 3), "jpeg")(tf.constant(jpeg))
    assert int(label) == 2 and np.abs(pixels_.numpy().astype(int) - image).max() < 16
    images, labels = decode.batch_decoder((4, 6, 3), "png")(tf.constant([example, example]))
    assert images.shape == (2, 4, 6, 3) and labels.dtype == tf.int32
    assert list(labels.numpy()) == [3, 3]
    np.testing.assert_array_equal(images.numpy()[1], image)
    data, label = decode.parse_bytes(tf.constant(example))
    assert data.numpy() == tf.io.encode_png(image).numpy() and label.dtype == tf.int32
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        decode.decode_image(tf.io.encode_png(image), (6, 4, 3))


def test_images_up_to_64x64_are_read_in_batches_larger_ones_per_record() -> None:
    assert decode.read_regime((64, 64, 3)) == "batched"
    assert decode.read_regime((8, 8, 1)) == "batched"
    assert decode.read_regime((64, 65, 1)) == "per_record"
    assert decode.read_regime((224, 224, 3)) == "per_record"
