"""Turning serialized records into images: which of the two regimes, and the work of each.

Two costs meet in every record: a fixed cost per call (parse one Example, hand a tensor between
threads: tens of microseconds) and the decode itself, which grows with the pixels. Which one
dominates decides the pipeline (measured on 2 cores, notebook 01 measures yours):

- **batched** — small images (8×8 digits, 32×32 CIFAR): the fixed cost dominates, so serialized
  records are batched before one vectorized `parse_example`, and the batch's images are decoded
  inside the same call. Parallel per-record calls barely help here.
- **per record** — photos (224×224 JPEG: about a millisecond each to decode): decoding dominates,
  and decoding a whole batch inside one call would make it serial. Each record is parsed and
  decoded by its own call, many in parallel, so every core decodes.

`read_regime` picks by image size (BATCH_PARSE_MAX_PIXELS); the shards' encoding (meta.json)
says which decoder. `random_crop_record` decodes only a random window of a JPEG
(`decode_and_crop_jpeg`), so a training crop costs less than a full decode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import tensorflow as tf

BATCH_PARSE_MAX_PIXELS = 64 * 64  # images up to this many pixels per channel: the batched regime
CROP_AREA = (0.35, 1.0)  # share of the image a random training crop keeps
FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
Decoder = Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]]


def read_regime(image_shape: Sequence[int]) -> str:
    """'batched' for images of at most BATCH_PARSE_MAX_PIXELS pixels, else 'per_record'."""
    pixels = math.prod(int(side) for side in image_shape[:2])
    return "batched" if pixels <= BATCH_PARSE_MAX_PIXELS else "per_record"


def decode_image(data: tf.Tensor, shape: Sequence[int], encoding: str = "png") -> tf.Tensor:
    """Encoded bytes → uint8 image with the static shape meta.json gives (the model sees it)."""
    channels = int(shape[-1])
    if encoding == "jpeg":
        image = tf.io.decode_jpeg(data, channels=channels)
    else:
        image = tf.io.decode_png(data, channels=channels)
    return tf.ensure_shape(image, [int(side) for side in shape])


def decode_record(
    serialized: tf.Tensor, image_shape: Sequence[int], encoding: str = "png"
) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized Example → (uint8 image of image_shape, int32 label): the per-record work."""
    example = tf.io.parse_single_example(serialized, FEATURES)
    image = decode_image(example["image"], image_shape, encoding)
    return image, tf.cast(example["label"], tf.int32)


def record_decoder(shape: Sequence[int], encoding: str) -> Decoder:
    """The per-record regime's map function."""

    def decode(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return decode_record(serialized, shape, encoding)

    return decode


def batch_decoder(shape: Sequence[int], encoding: str) -> Decoder:
    """The batched regime's map function: a batch of serialized Examples → (images, labels).

    parse_example handles the whole batch in one op; image decoding has no batched op, so map_fn
    decodes image by image inside the same call, which still saves the per-record overhead.
    """
    shape = [int(side) for side in shape]

    def decode(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        examples = tf.io.parse_example(serialized, FEATURES)
        images = tf.map_fn(
            lambda data: decode_image(data, shape, encoding),
            examples["image"],
            fn_output_signature=tf.TensorSpec(shape, tf.uint8),
        )
        return images, tf.cast(examples["label"], tf.int32)

    return decode


def parse_bytes(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized Example → (encoded image bytes, int32 label), nothing decoded yet."""
    example = tf.io.parse_single_example(serialized, FEATURES)
    return example["image"], tf.cast(example["label"], tf.int32)


def random_crop_record(shape: Sequence[int]) -> Callable[..., tuple[tf.Tensor, tf.Tensor]]:
    """(JPEG bytes, label, seed pair) → a random crop decoded straight from the JPEG, resized.

    The window keeps CROP_AREA of the image at an aspect of 3:4 to 4:3
    (`stateless_sample_distorted_bounding_box`); `decode_and_crop_jpeg` decodes only the blocks
    that window touches, so the crop costs less than decoding the whole photo.
    """
    shape = [int(side) for side in shape]

    def crop(data: tf.Tensor, label: tf.Tensor, seed: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            tf.io.extract_jpeg_shape(data),
            bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]),
            seed=seed,
            min_object_covered=0.0,
            aspect_ratio_range=(3 / 4, 4 / 3),
            area_range=CROP_AREA,
            max_attempts=10,
            use_image_if_no_bounding_boxes=True,
        )
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.io.decode_and_crop_jpeg(data, window, channels=shape[-1])
        image = tf.image.resize(image, shape[:2], method="bilinear", antialias=True)
        image = tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)
        return tf.ensure_shape(image, shape), label

    return crop
