"""A user's photo files → record bytes, in worker processes, without TensorFlow.

Two passes over the files, both spread over `workers` processes:

- `probe` opens each file's header (Pillow reads no pixels): its format, colour mode, size after
  the EXIF orientation, and whether the file ends where its format says it must (a truncated JPEG
  lacks its end-of-image marker). A zero-byte file, a text file named .jpg or a truncated photo is
  named here, before anything is written; a PNG named .jpg is simply read as the PNG it is.
- `encode` turns one file into the bytes a record holds. A JPEG that already has the size, the
  orientation and a colour mode TensorFlow decodes (RGB or greyscale) keeps its own bytes: no
  decode, no re-encode, no loss (its data is entropy-decoded once at 1/8 scale, to prove it whole).
  Any other file is decoded, turned upright (EXIF), converted to the data set's channels (CMYK to
  RGB, 16-bit to 8-bit, greyscale to RGB when other images have colour), resized, and encoded.

Why processes and not tf.data threads: decoding, resizing and encoding photos is CPU work in
C libraries, and one process was measured at ~20 photos/s when TensorFlow's PNG encoder did it.
The workers are started with "spawn" (fresh interpreters), because a process forked after
TensorFlow started its threads may inherit a held lock; they import this module only, which
imports Pillow and numpy, never TensorFlow (data/__init__.py loads its names lazily for that).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

# MPO: a camera's JPEG with a second picture appended. BMP, GIF and WebP are decoded and written
# again (an animated one's first frame); only JPEG and PNG carry an end marker checked cheaply.
READABLE = ("JPEG", "MPO", "PNG", "BMP", "GIF", "WEBP")
SAID = "a JPEG, PNG, BMP, GIF or WebP"
GREY_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F")
JPEG_END, PNG_END = b"\xff\xd9", b"IEND\xaeB`\x82"
ORIENTATION = 0x0112  # the EXIF tag; 1 is upright, 5-8 swap width and height
CHUNK = 8  # files handed to a worker at a time: fewer round trips, still an even spread


@dataclass(frozen=True)
class Probe:
    """What a file's header says: format, mode, upright size, EXIF orientation; or why it fails."""

    format: str = ""
    mode: str = ""
    height: int = 0
    width: int = 0
    orientation: int = 1
    error: str = ""
    frames: int = 1  # an animated GIF or WebP has more; the first is used

    @property
    def grey(self) -> bool:
        return self.mode in GREY_MODES


DENIED = "cannot be opened by this user (permission denied: chmod a+r gives read access)"


def probe(path: str) -> Probe:
    """Read the header of one file (no pixels); a failure comes back as `error`, never raised."""
    try:
        if os.path.getsize(path) == 0:
            return Probe(error="is empty (0 bytes)")
        with Image.open(path) as image:
            if image.format not in READABLE:
                return Probe(error=f"is a {image.format} image, not {SAID} image")
            orientation = int(image.getexif().get(ORIENTATION, 1) or 1)
            width, height = image.size
            if orientation in (5, 6, 7, 8):
                width, height = height, width
            # An MPO's second picture is a camera's extra (a depth map, a preview), not a frame.
            frames = 1 if image.format == "MPO" else int(getattr(image, "n_frames", 1) or 1)
            found = Probe(image.format, image.mode, height, width, orientation, frames=frames)
            if image.format not in ("JPEG", "MPO", "PNG") or not _ends_whole(path, image.format):
                image.load()  # no end marker: decode to tell trailing junk from truncation
            return found
    except UnidentifiedImageError:
        return Probe(error=f"is not an image (not {SAID} file's data)")
    except Image.DecompressionBombError as error:
        return Probe(error=_bomb(error))
    except PermissionError:  # not a truncated download: the file may be whole
        return Probe(error=DENIED)
    except (OSError, ValueError, SyntaxError) as error:
        return Probe(error=f"cannot be read ({_short(error)}), e.g. a truncated download")


def encode(task: tuple[str, int, int, int, str, int]) -> tuple[bytes | None, str, bool]:
    """(path, height, width, channels, encoding, quality) → (record bytes, "", kept) or
    (None, why, False); kept is True when the bytes are the file's own."""
    path, height, width, channels, encoding, quality = task
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        with Image.open(io.BytesIO(data)) as image:
            orientation = int(image.getexif().get(ORIENTATION, 1) or 1)
            if (
                encoding == "jpeg"
                and image.format in ("JPEG", "MPO")
                and image.mode in (("L",) if channels == 1 else ("L", "RGB"))
                and orientation == 1
                and image.size == (width, height)
            ):
                image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))
                image.load()  # every byte entropy-decoded: a broken file fails here
                return data, "", True
            if image.format in ("JPEG", "MPO"):  # decode at 1/2, 1/4 or 1/8 scale when that is
                wanted = (height, width) if orientation in (5, 6, 7, 8) else (width, height)
                image.draft("L" if channels == 1 else "RGB", wanted)  # still >= the target
            image.load()
            upright = _channels(ImageOps.exif_transpose(image), channels)
        if upright.size != (width, height):
            upright = upright.resize((width, height), Image.Resampling.BILINEAR)
        out = io.BytesIO()
        if encoding == "jpeg":
            upright.save(out, "JPEG", quality=quality)
        else:
            upright.save(out, "PNG", compress_level=6)
        return out.getvalue(), "", False
    except Image.DecompressionBombError as error:
        return None, _bomb(error), False
    except PermissionError:
        return None, DENIED, False
    except (OSError, ValueError, SyntaxError) as error:
        return None, f"cannot be decoded ({_short(error)})", False


def resolve_workers(workers: int | str) -> int:
    """workers='auto' is the cores this process may use; a number is taken as it is."""
    if workers == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # macOS and Windows have no affinity call
            return max(1, os.cpu_count() or 1)
    return int(workers)


@contextmanager
def mapper(workers: int) -> Iterator[Callable[[Callable[[Any], Any], Iterable[Any]], Iterator]]:
    """An ordered, lazy map over `workers` spawned processes (in this process when 1)."""
    if workers <= 1:
        yield map
        return
    context = multiprocessing.get_context("spawn")
    with _main_hidden():
        pool = context.Pool(workers)  # the workers start here, and need nothing of __main__
    with pool:
        yield lambda function, items: pool.imap(function, items, chunksize=CHUNK)


@contextmanager
def _main_hidden() -> Iterator[None]:
    """Start workers without re-running the caller's script in them.

    A spawned worker first imports the parent's __main__ (found by its __spec__ or __file__),
    so a user's script that calls prepare() at top level, without the `if __name__ ==
    "__main__":` guard, would call it again in every worker and fail. The workers need only this
    module, so __main__ is made anonymous while they start, and restored at once.
    """
    main = sys.modules.get("__main__")
    saved = {
        key: main.__dict__[key] for key in ("__spec__", "__file__") if main and key in main.__dict__
    }
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def _channels(image: Image.Image, channels: int) -> Image.Image:
    """Pixels as 8-bit greyscale (channels 1) or RGB: 16-bit scaled, CMYK and palettes converted."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L"):  # 16-bit greyscale: keep the top 8 bits
        pixels = np.asarray(image, dtype=np.int64)
        image = Image.fromarray((np.clip(pixels, 0, 65535) >> 8).astype(np.uint8))
    elif image.mode == "F":
        image = Image.fromarray(np.clip(np.asarray(image), 0, 255).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        image = image.convert("RGBA")
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image)  # transparent parts become white
    return image.convert("L" if channels == 1 else "RGB")


def _ends_whole(path: str, kind: str) -> bool:
    """The file ends with its format's end marker (trailing zero padding allowed)."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - 64))
        tail = handle.read().rstrip(b"\0")
    return tail.endswith(PNG_END if kind == "PNG" else JPEG_END)


def _bomb(error: Image.DecompressionBombError) -> str:
    """Pillow refuses to open an image whose header declares more pixels than it decodes safely
    (a decompression bomb, or a scan far larger than any training size): why, in words."""
    found = re.search(r"\((\d+) pixels\)", str(error))
    declared = f"{int(found.group(1)):,} pixels" if found else "more pixels than that"
    return (
        f"declares {declared} in its header, more than the {2 * Image.MAX_IMAGE_PIXELS:,} that "
        "Pillow decodes safely (its guard against decompression bombs)"
    )


def _short(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return (lines[0].rstrip(".") if lines else "") or type(error).__name__
