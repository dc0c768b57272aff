"""An image folder as people fill it: every format the README names is read, what is skipped or
merged is said with its reason, and a file no decoder should open is named in one sentence."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import assert_one_sentence
from PIL import Image

from {{ cookiecutter.package_name }}.tasks.image import pipeline, records
from {{ cookiecutter.package_name }}.tasks.image.data_step import describe_meta
from {{ cookiecutter.package_name }}.tasks.image.sources import DataError

SIDE = 16
# One solid colour per file, all distinct, so each image can be found again in the records.
FILES = {
    "cat/a.jpg": ("JPEG", (200, 30, 30)),
    "cat/b.bmp": ("BMP", (30, 200, 30)),
    "cat/c.gif": ("GIF", (30, 30, 200)),
    "cat/m.jpg": ("MPO", (120, 60, 20)),  # a camera's JPEG with a second picture: no animation
    "dog/d.png": ("PNG", (200, 200, 30)),
    "dog/e.webp": ("WEBP", (30, 200, 200)),
    "dog/f.gif": ("GIF", (200, 30, 200)),
}


def solid(colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (SIDE, SIDE), colour)


def write(root: Path, name: str, kind: str, colour: tuple[int, int, int]) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    image = solid(colour)
    if kind in ("GIF", "MPO"):  # a second frame of another colour, which is not used
        options = {"duration": 100} if kind == "GIF" else {"quality": 100}
        image.save(path, kind, save_all=True, append_images=[solid((0, 0, 0))], **options)
    elif kind == "WEBP":
        image.save(path, "WEBP", lossless=True)
    else:
        image.save(path, kind, **({"quality": 100} if kind == "JPEG" else {}))
    return path


def colours(run: Path) -> list[tuple[int, ...]]:
    """The mean colour of every image in the run's records, train and validation."""
    found = []
    for split in ("train", "validation"):
        for images, _ in pipeline.make_dataset(run, split, 64, training=False):
            found += [tuple(int(v) for v in np.round(x.mean(axis=(0, 1)))) for x in images.numpy()]
    return found


def test_bmp_gif_and_webp_files_are_read_like_jpeg_and_png(tmp_path: Path) -> None:
    """Every file of the README's list, WebP too, is a record with its own colours; an animated
    GIF gives its first frame, and a note says so."""
    for name, (kind, colour) in FILES.items():
        write(tmp_path / "src", name, kind, colour)
    meta = records.prepare(
        tmp_path / "run", "image_folder", data_dir=tmp_path / "src", val_fraction=0.34
    )
    counts = {split: meta["splits"][split]["count"] for split in meta["splits"]}
    assert sum(counts.values()) == len(FILES), counts
    found = colours(tmp_path / "run")
    for name, (_, colour) in FILES.items():
        near = [c for c in found if max(abs(a - b) for a, b in zip(c, colour, strict=True)) <= 2]
        assert near, f"{name}: {colour} not among {found}"
    assert "2 animated image(s): the first frame of each is used." in meta["notes"]


def test_files_skipped_and_sub_folders_merged_are_said_with_the_reason(tmp_path: Path) -> None:
    """A .txt and a .heic are skipped, a nested folder is merged into its class: the notes (in
    meta.json and in what the data step prints) name them; hidden files pass without a word."""
    root = tmp_path / "src"
    for name, (kind, colour) in FILES.items():
        write(root, name, kind, colour)
    write(root, "dog/puppies/g.png", "PNG", (90, 90, 90))
    write(root, "dog/puppies/h.png", "PNG", (160, 160, 160))
    (root / "cat" / "notes.txt").write_text("to sort")
    (root / "cat" / "IMG_0001.heic").write_bytes(b"\0\0\0\x18ftypheic")
    (root / "cat" / ".DS_Store").write_bytes(b"\0")
    meta = records.prepare(tmp_path / "run", "image_folder", data_dir=root, val_fraction=0.34)
    assert sum(split["count"] for split in meta["splits"].values()) == len(FILES) + 2
    said = describe_meta(meta)
    skipped = [note for note in meta["notes"] if "skipped" in note]
    assert skipped and skipped[0].startswith("2 file(s) skipped"), meta["notes"]
    assert ".heic, .txt" in skipped[0] and str(root / "cat") in skipped[0]
    assert ".DS_Store" not in skipped[0]
    merged = "2 image(s) in sub-folders merged into their class: dog/puppies/ (2)"
    assert any(note.startswith(merged) for note in meta["notes"]), meta["notes"]
    for note in meta["notes"]:
        assert note in said
        assert_one_sentence(note)


def bomb_jpeg(height: int, width: int) -> bytes:
    """A small JPEG whose header (SOF0) declares height x width: what a decompression bomb or a
    damaged header looks like to a decoder, without the bytes."""
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(out, "JPEG")
    data = bytearray(out.getvalue())
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(data)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_jpeg_declaring_20000x20000_pixels_is_named_in_one_sentence(
    tmp_path: Path, workers: int
) -> None:
    """Pillow's DecompressionBombError from a worker process: one sentence naming the file and
    why, no traceback, nothing written."""
    root = tmp_path / "src"
    for name in ("cat/a.jpg", "cat/b.png", "dog/c.jpg", "dog/d.png"):
        write(root, name, name[-3:].upper().replace("JPG", "JPEG"), (9, 90, 190))
    bomb = root / "dog" / "huge.jpg"
    bomb.write_bytes(bomb_jpeg(20000, 20000))
    with pytest.raises(DataError) as refused:
        records.prepare(
            tmp_path / "run", "image_folder", data_dir=root, workers=workers, val_fraction=0.5
        )
    said = str(refused.value)
    assert_one_sentence(said)
    assert said.startswith(f"{bomb} is not a readable image: it declares 400,000,000 pixels")
    assert "decompression bombs" in said
    assert not (tmp_path / "run" / "data").exists()


def test_a_file_this_user_may_not_read_is_said_so_not_called_a_truncated_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file without read permission (tests run as root here, so open() is made to refuse)."""
    from {{ cookiecutter.package_name }}.tasks.image import photo_io

    path = write(tmp_path, "cat/a.jpg", "JPEG", (9, 90, 190))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(photo_io.Image, "open", refuse)
    said = photo_io.probe(str(path)).error
    assert said == photo_io.DENIED and "permission denied" in said
    assert "truncated" not in said
    monkeypatch.setattr(photo_io, "open", refuse, raising=False)
    assert photo_io.encode((str(path), SIDE, SIDE, 3, "jpeg", 95)) == (None, said, False)


def test_tensorflow_reads_the_bomb_header_too() -> None:
    """The test's bomb is a real one: its header says 20000x20000 to TensorFlow as to Pillow."""
    shape = tf.io.extract_jpeg_shape(bomb_jpeg(20000, 20000)).numpy().tolist()
    assert shape == [20000, 20000, 3]
