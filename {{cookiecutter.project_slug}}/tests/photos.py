"""A folder of real photographs for tests and benchmarks, made from scikit-image's sample photos.

Solid colours and noise compress and decode nothing like photographs, so the data step's numbers
for a user's photo folder are measured on photographs: each class is one of the photos that
scikit-image ships (the astronaut, the cat, a cup of coffee, a rocket, a motorcycle, the Hubble deep
field, ...), and each image a random crop of it, rescaled so its longer side lies in `size_range`,
sometimes mirrored, saved as JPEG at a quality drawn from 70 to 95 like a camera or a web export.

    from photos import make_photo_folder
    make_photo_folder(tmp_path / "photos", n_per_class=500, classes=6, size_range=(200, 450))

Needs Pillow and scikit-image's bundled files only (skimage is imported for its folder, nothing
else). Also runnable: `python tests/photos.py OUT_DIR [N_PER_CLASS] [CLASSES]`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

# Colour photographs first (the default classes), then greyscale ones (stored as RGB JPEGs).
PHOTOS = {
    "astronaut": "astronaut.png",
    "chelsea": "chelsea.png",
    "coffee": "coffee.png",
    "rocket": "rocket.jpg",
    "motorcycle": "motorcycle_left.png",
    "hubble": "hubble_deep_field.jpg",
    "retina": "retina.jpg",
    "ihc": "ihc.png",
    "camera": "camera.png",
    "coins": "coins.png",
    "moon": "moon.png",
    "brick": "brick.png",
    "grass": "grass.png",
    "gravel": "gravel.png",
}
QUALITY_RANGE = (70, 95)  # JPEG quality of each saved image, drawn uniformly


def photo_dir() -> Path:
    """scikit-image's folder of bundled sample images (found without importing skimage)."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("scikit-image is not installed: pip install scikit-image (dev extra).")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def make_photo_folder(
    path: str | Path,
    n_per_class: int = 50,
    classes: int | Sequence[str] = 6,
    size_range: tuple[int, int] = (200, 450),
    seed: int = 0,
) -> Path:
    """Write path/<class>/<class>_00000.jpg ...: n_per_class random crops of each class's photo.

    `classes` is a count (the first of PHOTOS) or names from PHOTOS. The same arguments always
    write the same bytes. Returns `path`.
    """
    names = list(PHOTOS)[:classes] if isinstance(classes, int) else list(classes)
    unknown = [name for name in names if name not in PHOTOS]
    if unknown or not names or (isinstance(classes, int) and classes > len(PHOTOS)):
        raise ValueError(f"classes={classes!r}: use 1 to {len(PHOTOS)} or names of {list(PHOTOS)}")
    low, high = size_range
    if not 16 <= low <= high:
        raise ValueError(f"size_range={size_range!r}: use (low, high) with 16 <= low <= high")
    root = Path(path)
    rng = np.random.default_rng(seed)
    for name in names:
        with Image.open(photo_dir() / PHOTOS[name]) as opened:
            photo = opened.convert("RGB")
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(n_per_class):
            image = _random_view(photo, rng, int(rng.integers(low, high + 1)))
            quality = int(rng.integers(QUALITY_RANGE[0], QUALITY_RANGE[1] + 1))
            image.save(folder / f"{name}_{index:05d}.jpg", "JPEG", quality=quality)
    return root


def _random_view(photo: Image.Image, rng: np.random.Generator, longer: int) -> Image.Image:
    """A crop of 25-100 % of the photo's area, aspect 3:4 to 4:3, longer side `longer` pixels."""
    width, height = photo.size
    area = rng.uniform(0.25, 1.0) * width * height
    aspect = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
    crop_w = int(min(width, max(16, round(np.sqrt(area * aspect)))))
    crop_h = int(min(height, max(16, round(np.sqrt(area / aspect)))))
    left = int(rng.integers(0, width - crop_w + 1))
    top = int(rng.integers(0, height - crop_h + 1))
    view = photo.crop((left, top, left + crop_w, top + crop_h))
    scale = longer / max(crop_w, crop_h)
    size = (max(1, round(crop_w * scale)), max(1, round(crop_h * scale)))
    view = view.resize(size, Image.Resampling.BICUBIC)
    if rng.random() < 0.5:
        view = view.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return view


if __name__ == "__main__":
    out = make_photo_folder(
        sys.argv[1],
        int(sys.argv[2]) if len(sys.argv) > 2 else 500,
        int(sys.argv[3]) if len(sys.argv) > 3 else 6,
    )
    files = list(out.rglob("*.jpg"))
    size = sum(file.stat().st_size for file in files)
    each = size / len(files) / 1e3
    print(f"{len(files)} photos in {out}: {size / 1e6:.1f} MB, {each:.1f} kB each")
