"""What a user's photo file becomes (photo_io), tested file by file in this process: transparent
parts turned white, EXIF orientations turned upright with their sides swapped, the JPEG quality
meta.json states, the header check's sentences, and the workers that leave __main__ as it was."""

from __future__ import annotations

import io
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile, ImageOps

from {{ cookiecutter.package_name }}.tasks.image import photo_io

WHITE, RED = (255, 255, 255), (255, 0, 0)


def save(path: Path, image: Image.Image, kind: str = "PNG", **options) -> str:
    image.save(path, kind, **options)
    return str(path)


def pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image)


def exif(orientation: int) -> bytes:
    tags = Image.Exif()
    tags[photo_io.ORIENTATION] = orientation
    return tags.tobytes()


def noisy_jpeg(side: int) -> bytes:
    """A JPEG of seeded noise (10,431 bytes at side 128): its scan data is most of the file."""
    rng = np.random.default_rng(0)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(out, "JPEG")
    return out.getvalue()


def drafted(path: str, height: int, width: int, channels: int, stored: tuple[int, int]) -> bytes:
    """What encode should write (PNG): the JPEG decoded at the smallest scale that still covers
    `stored` (the target's sides as stored, before the EXIF turn), turned upright, resized."""
    mode = "L" if channels == 1 else "RGB"
    with Image.open(path) as image:
        image.draft(mode, stored)
        image.load()
        upright = ImageOps.exif_transpose(image).convert(mode)
    out = io.BytesIO()
    upright.resize((width, height), Image.Resampling.BILINEAR).save(out, "PNG", compress_level=6)
    return out.getvalue()


def no_pixels(*args, **kwargs):
    raise AssertionError("pixels decoded where the header was enough")


def halves(height: int, width: int) -> np.ndarray:
    """RGB, white top half over a black bottom half: which way is up shows after any turn."""
    image = np.zeros((height, width, 3), np.uint8)
    image[: height // 2] = 255
    return image


def test_transparent_parts_become_white_and_opaque_parts_keep_their_colour(tmp_path) -> None:
    """RGBA and LA: an opaque pixel keeps its colour, a transparent one is white, never black."""
    rgba = np.zeros((4, 8, 4), np.uint8)
    rgba[:, :4] = (255, 0, 0, 255)  # opaque red
    rgba[:, 4:] = (0, 0, 255, 0)  # transparent blue
    path = save(tmp_path / "rgba.png", Image.fromarray(rgba, "RGBA"))
    data, why, kept = photo_io.encode((path, 4, 8, 3, "png", 95))
    assert (why, kept) == ("", False)
    out = pixels(data)
    assert (out[:, :4] == RED).all() and (out[:, 4:] == WHITE).all()
    la = np.zeros((4, 8, 2), np.uint8)
    la[:, :4] = (100, 255)
    la[:, 4:] = (30, 0)
    path = save(tmp_path / "la.png", Image.fromarray(la, "LA"))
    out = pixels(photo_io.encode((path, 4, 8, 1, "png", 95))[0])
    assert out.shape == (4, 8) and (out[:, :4] == 100).all() and (out[:, 4:] == 255).all()


def test_a_palette_image_with_a_transparent_colour_is_white_there(tmp_path) -> None:
    """A GIF-style palette whose colour 0 is transparent: those pixels are white, not black."""
    image = Image.fromarray(np.repeat([[1, 1, 0, 0]], 3, axis=0).astype(np.uint8), "P")
    image.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    path = save(tmp_path / "palette.png", image, transparency=0)
    out = pixels(photo_io.encode((path, 3, 4, 3, "png", 95))[0])
    assert (out[:, :2] == RED).all() and (out[:, 2:] == WHITE).all()
    with_alpha = image.convert("PA")  # a palette with an alpha band: its alpha 0 is white too
    with_alpha.info.pop("transparency", None)
    with_alpha.putpixel((0, 0), (1, 0))
    out = np.asarray(photo_io._channels(with_alpha, 3))
    assert tuple(out[0, 0]) == WHITE and tuple(out[0, 1]) == RED


def test_a_jpeg_with_an_exif_turn_is_decoded_upright_not_kept(tmp_path) -> None:
    """Orientation 3 (upside down) keeps the size, but the bytes are not the upright photo."""
    stored = Image.fromarray(halves(48, 64)).transpose(Image.Transpose.ROTATE_180)
    path = save(tmp_path / "turned.jpg", stored, "JPEG", quality=95, exif=exif(3))
    data, why, kept = photo_io.encode((path, 48, 64, 3, "jpeg", 95))
    assert (why, kept) == ("", False) and data != Path(path).read_bytes()
    out = pixels(data).astype(int)
    assert out[:24].mean() > 240 and out[24:].mean() < 15


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientations_5_to_8_swap_width_and_height(tmp_path, orientation: int) -> None:
    """A photo stored 48 wide, 64 high: orientations 5-8 (turned a quarter) are 64 wide, 48 high."""
    stored = Image.fromarray(halves(64, 48))
    path = save(tmp_path / "phone.jpg", stored, "JPEG", quality=90, exif=exif(orientation))
    found = photo_io.probe(path)
    swapped = orientation >= 5
    assert (found.height, found.width) == ((48, 64) if swapped else (64, 48))
    assert (found.format, found.mode, found.orientation, found.error) == (
        "JPEG",
        "RGB",
        orientation,
        "",
    )
    data, _, kept = photo_io.encode((path, found.height, found.width, 3, "jpeg", 95))
    assert pixels(data).shape == (found.height, found.width, 3)
    assert kept is (orientation == 1)


@pytest.mark.parametrize("orientation", [5, 6, 7, 8])
def test_a_turned_jpeg_is_drafted_by_its_stored_sides_not_its_upright_ones(
    tmp_path, orientation: int
) -> None:
    """A JPEG may be decoded at 1/2, 1/4 or 1/8 scale (a draft) when that still covers the target.
    Stored 800 wide and 100 high, turned a quarter to 80 wide and 10 high: stored, that is 10
    wide and 80 high, which 1/8 scale (100x12) does not cover, so the photo is decoded whole;
    asking with the upright sides would take 1/8 scale and lose detail."""
    rows, cols = np.mgrid[0:100, 0:800]
    stored = Image.fromarray(((rows * 7 + cols * 13) % 256).astype(np.uint8)).convert("RGB")
    path = save(tmp_path / "big.jpg", stored, "JPEG", quality=95, exif=exif(orientation))
    with Image.open(path) as image:
        whole = ImageOps.exif_transpose(image).convert("RGB")
    reference = io.BytesIO()
    whole.resize((80, 10), Image.Resampling.BILINEAR).save(reference, "PNG", compress_level=6)
    assert photo_io.encode((path, 10, 80, 3, "png", 95))[0] == reference.getvalue()


def test_a_photo_far_larger_than_its_target_is_decoded_at_a_smaller_scale(tmp_path) -> None:
    """A 512x512 JPEG (or a camera's MPO) for a 64x64 target is decoded at 1/8 scale, in
    greyscale when the data set is; not decoded whole and shrunk (8x8 times the work)."""
    path = tmp_path / "big.jpg"
    path.write_bytes(noisy_jpeg(512))
    for channels in (3, 1):
        data = photo_io.encode((str(path), 64, 64, channels, "png", 95))[0]
        assert data == drafted(str(path), 64, 64, channels, (64, 64))
    with Image.open(path) as image:
        mpo = save(tmp_path / "camera.mpo", image, "MPO", save_all=True, append_images=[image])
        wide = save(tmp_path / "wide.jpg", image.resize((800, 100)), "JPEG")
    assert photo_io.encode((wide, 10, 80, 3, "png", 95))[0] == drafted(wide, 10, 80, 3, (80, 10))
    assert photo_io.encode((mpo, 64, 64, 3, "png", 95))[0] == drafted(mpo, 64, 64, 3, (64, 64))


def test_a_camera_s_mpo_is_one_frame_kept_as_it_is(tmp_path, monkeypatch) -> None:
    """An MPO (a JPEG with a depth map or preview appended) is one picture, checked by its header
    alone, and kept byte for byte when its size fits; an EXIF orientation of 0 means upright."""
    first = Image.fromarray(halves(32, 48))
    mpo = save(tmp_path / "camera.jpg", first, "MPO", save_all=True, append_images=[first])
    zero = save(tmp_path / "zero.jpg", first, "JPEG", exif=exif(0))
    assert photo_io.encode((mpo, 32, 48, 3, "jpeg", 95)) == (Path(mpo).read_bytes(), "", True)
    assert photo_io.encode((zero, 32, 48, 3, "jpeg", 95))[2] is True
    monkeypatch.setattr(ImageFile.ImageFile, "load", no_pixels)
    assert photo_io.probe(mpo) == photo_io.Probe("MPO", "RGB", 32, 48)
    assert photo_io.probe(zero) == photo_io.Probe("JPEG", "RGB", 32, 48)


def test_a_re_encoded_photo_has_the_jpeg_quality_meta_json_states(tmp_path) -> None:
    """A PNG written as JPEG at quality 95 has the quantization tables of quality 95 (not 75)."""
    image = Image.fromarray(halves(32, 32))
    path = save(tmp_path / "a.png", image)
    for quality in (95, 60):
        reference = io.BytesIO()
        image.save(reference, "JPEG", quality=quality)
        data, _, kept = photo_io.encode((path, 32, 32, 3, "jpeg", quality))
        assert data == reference.getvalue() and kept is False
    reference = io.BytesIO()
    image.save(reference, "PNG", compress_level=6)
    assert photo_io.encode((path, 32, 32, 3, "png", 95))[0] == reference.getvalue()


def test_greyscale_and_colour_jpegs_are_kept_only_when_their_channels_fit(tmp_path) -> None:
    """Grey JPEG: kept for 1 or 3 channels; RGB JPEG: kept for 3, made grey for 1."""
    grey = save(tmp_path / "g.jpg", Image.fromarray(halves(16, 16)[..., 0]), "JPEG")
    colour = save(tmp_path / "c.jpg", Image.fromarray(halves(16, 16)), "JPEG")
    assert photo_io.encode((grey, 16, 16, 1, "jpeg", 95))[2] is True
    assert photo_io.encode((grey, 16, 16, 3, "jpeg", 95))[2] is True
    assert photo_io.encode((colour, 16, 16, 3, "jpeg", 95)) == (
        Path(colour).read_bytes(),
        "",
        True,
    )
    data, _, kept = photo_io.encode((colour, 16, 16, 1, "jpeg", 95))
    assert kept is False and pixels(data).shape == (16, 16)
    assert photo_io.encode((colour, 16, 16, 3, "png", 95))[2] is False
    assert photo_io.encode((colour, 8, 16, 3, "jpeg", 95))[2] is False  # another size


def test_16_bit_and_float_greyscale_become_8_bit_without_clipping(tmp_path) -> None:
    ramp = (np.arange(256, dtype=np.uint16).reshape(16, 16) * 257).astype(np.uint16)
    path = save(tmp_path / "deep.png", Image.fromarray(ramp))
    out = pixels(photo_io.encode((path, 16, 16, 1, "png", 95))[0])
    np.testing.assert_array_equal(out, np.arange(256).reshape(16, 16))
    for mode in ("I;16B", "I;16L"):  # big- and little-endian 16-bit: the top byte either way
        deep = Image.frombytes(
            mode, (2, 1), bytes([1, 2, 254, 3] if mode == "I;16B" else [2, 1, 3, 254])
        )
        np.testing.assert_array_equal(np.asarray(photo_io._channels(deep, 1)), [[1, 254]])
    wide = Image.fromarray(np.array([[-5, 0, 513, 65535, 70000]], np.int32))  # mode I: clipped
    np.testing.assert_array_equal(np.asarray(photo_io._channels(wide, 1)), [[0, 0, 2, 255, 255]])
    floats = Image.fromarray(np.array([[-5.0, 0.0, 100.7, 300.0]], np.float32), "F")
    np.testing.assert_array_equal(np.asarray(photo_io._channels(floats, 1)), [[0, 0, 100, 255]])


def test_the_header_check_names_what_is_wrong_in_words(tmp_path) -> None:
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    text = tmp_path / "text.jpg"
    text.write_text("not a photo\n")
    tiff = save(tmp_path / "scan.jpg", Image.new("RGB", (4, 4)), "TIFF")
    whole = save(tmp_path / "whole.jpg", Image.fromarray(halves(32, 32)), "JPEG")
    cut = tmp_path / "cut.jpg"  # a download stopped at 60 %: the header is whole, the scan not
    cut.write_bytes(noisy_jpeg(128)[: 10431 * 6 // 10])
    assert photo_io.probe(str(empty)) == photo_io.Probe(error="is empty (0 bytes)")
    assert photo_io.probe(str(text)).error == (
        "is not an image (not a JPEG, PNG, BMP, GIF or WebP file's data)"
    )
    assert photo_io.probe(tiff).error == "is a TIFF image, not a JPEG, PNG, BMP, GIF or WebP image"
    assert photo_io.probe(str(cut)).error == (
        "cannot be read (image file is truncated (128 bytes not processed)), e.g. a truncated "
        "download"
    )
    assert photo_io.encode((str(cut), 128, 128, 3, "png", 95)) == (
        None,
        "cannot be decoded (image file is truncated (128 bytes not processed))",
        False,
    )
    padded = tmp_path / "padded.jpg"
    padded.write_bytes(Path(whole).read_bytes() + b"\0" * 100)  # a camera's zero padding
    assert photo_io.probe(str(padded)) == photo_io.Probe("JPEG", "RGB", 32, 32)


def test_a_whole_jpeg_is_checked_by_its_header_and_end_marker_alone(tmp_path, monkeypatch) -> None:
    """probe reads no pixels of a JPEG that ends with its end marker (zero padding after it
    allowed): a folder of a million photos is checked in seconds. (Pillow decodes a PNG to look
    for its EXIF, so a PNG is not spared.)"""
    jpeg = save(tmp_path / "a.jpg", Image.fromarray(halves(32, 32)), "JPEG")
    padded = tmp_path / "padded.jpg"
    padded.write_bytes(Path(jpeg).read_bytes() + b"\0" * 40)
    monkeypatch.setattr(ImageFile.ImageFile, "load", no_pixels)
    for path in (jpeg, str(padded)):
        assert photo_io.probe(path) == photo_io.Probe("JPEG", "RGB", 32, 32)
    junk = tmp_path / "junk.jpg"  # bytes after the end marker: decoded, to tell it from a cut
    junk.write_bytes(Path(jpeg).read_bytes() + b"\0XX")
    with pytest.raises(AssertionError, match="pixels decoded"):
        photo_io.probe(str(junk))


def test_a_denied_file_and_a_decompression_bomb_are_said_so(tmp_path, monkeypatch) -> None:
    path = save(tmp_path / "a.png", Image.new("RGB", (40, 30)))

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch:
        patch.setattr(photo_io.Image, "open", denied)
        assert photo_io.probe(path).error == photo_io.DENIED
        assert photo_io.encode((path, 30, 40, 3, "png", 95)) == (None, photo_io.DENIED, False)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 500)  # 1,200 pixels: over twice the limit
    said = "declares 1,200 pixels in its header, more than the 1,000 that Pillow decodes safely"
    assert photo_io.probe(path).error.startswith(said)
    assert photo_io.encode((path, 30, 40, 3, "png", 95)) == (
        None,
        photo_io.probe(path).error,
        False,
    )
    assert photo_io._bomb(Image.DecompressionBombError("no number")).startswith(
        "declares more pixels than that in its header"
    )
    assert photo_io._short(ValueError("first line.\nsecond")) == "first line"
    assert photo_io._short(OSError("no marker X.")) == "no marker X"
    assert photo_io._short(ValueError("")) == "ValueError"


def test_an_animated_gif_has_its_frames_counted_and_a_bmp_is_decoded(tmp_path) -> None:
    frames = [Image.new("RGB", (8, 8), colour) for colour in (RED, WHITE, (0, 0, 255))]
    gif = tmp_path / "moving.gif"
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    assert (photo_io.probe(str(gif)).frames, photo_io.probe(str(gif)).format) == (3, "GIF")
    bmp = save(tmp_path / "a.bmp", Image.new("L", (8, 4)), "BMP")
    assert photo_io.probe(bmp) == photo_io.Probe("BMP", "L", 4, 8)
    assert photo_io.probe(bmp).grey and not photo_io.Probe(mode="RGB").grey


def test_workers_start_with_main_anonymous_and_leave_it_as_it_was(monkeypatch) -> None:
    """While workers start, __main__ has no __file__ and no __spec__ (a script without a main
    guard is not re-run); after, both are the script's again, and an interactive one stays so."""
    script = types.ModuleType("__main__")
    script.__file__, script.__spec__ = "/home/user/train.py", object()
    spec = script.__spec__
    monkeypatch.setitem(sys.modules, "__main__", script)
    with photo_io._main_hidden():
        assert "__file__" not in vars(script) and script.__spec__ is None
    assert script.__file__ == "/home/user/train.py" and script.__spec__ is spec
    interactive = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", interactive)
    with photo_io._main_hidden():
        assert interactive.__spec__ is None
    assert "__file__" not in vars(interactive) and interactive.__spec__ is None
    with photo_io.mapper(1) as pmap:
        assert pmap is map


def test_two_workers_map_in_order_and_restore_main(monkeypatch) -> None:
    script = types.ModuleType("__main__")
    script.__file__ = "/home/user/train.py"
    monkeypatch.setitem(sys.modules, "__main__", script)
    with photo_io.mapper(2) as pmap:
        assert script.__file__ == "/home/user/train.py"
        assert list(pmap(abs, range(-20, 0))) == list(range(20, 0, -1))


def test_workers_auto_are_the_cores_this_process_may_use(monkeypatch) -> None:
    assert photo_io.resolve_workers("3") == 3
    assert photo_io.resolve_workers("auto") == len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert photo_io.resolve_workers("auto") == 1
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert photo_io.resolve_workers("auto") == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert photo_io.resolve_workers("auto") == 6
