"""What moving augmentation off the CPU pipeline buys: training examples/s, tf.data against device.

The same Keras augmentation layers (augment.py), the same model, data, batch and steps, timed two
ways in one process: (a) in the tf.data pipeline, as a `map` on the host's CPU cores, before the
batch is handed to the step; (b) inside the training step, where the step runs (the GPU, when there
is one). Each way runs a warm-up call (tracing), then `repeats` timed calls of `steps` steps; the
step function also times its wait for input, so the result says whether (a) starved the step.

On a machine without a GPU both ways compute on the same CPU cores, so the ratio there shows the
cost of the mechanism, not the gain: the claim is for a GPU, and is measured by running this there.

    python -m <package>.tasks.image.augment_bench --run-dir artifacts/<run> [--level light] \
        [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import keras
import tensorflow as tf

from ...progress import line
from ...replica import make_train_steps
from .. import read_meta
from . import models
from .augment import LEVELS, make_augmenter
from .task import TASK


def measure(
    run_dir: str | os.PathLike[str],
    *,
    level: str = "light",
    model: str = "small_cnn",
    batch_size: int = 64,
    steps: int = 30,
    repeats: int = 3,
    seed: int = 0,
) -> dict[str, Any]:
    """{"tf_data": {...}, "device": {...}, "device_vs_tf_data": ratio, "verdict": sentence}."""
    meta = read_meta(run_dir)
    classes, shape = int(meta["num_classes"]), meta["image_shape"]
    gpus = len(tf.config.list_physical_devices("GPU"))
    results = {}
    for where in ("tf_data", "device"):
        keras.utils.set_random_seed(seed)
        net = models.build_model(model, shape, classes)
        optimizer = keras.optimizers.Adam(1e-3)
        optimizer.build(net.trainable_variables)
        augmenter = make_augmenter(level, classes, seed)
        dataset = TASK.build_inputs(run_dir, "train", batch_size, repeat=True, drop_remainder=True)
        if where == "tf_data":
            dataset = dataset.map(augmenter, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
        train_steps = make_train_steps(
            tf.distribute.get_strategy(),
            net,
            optimizer,
            task=TASK,
            global_batch=batch_size,
            loss_scaling=False,
            jit=False,
            augment=augmenter if where == "device" else _unchanged,
            num_classes=classes,
        )
        iterator = iter(dataset)
        train_steps(iterator, tf.constant(steps))  # warm-up: traces, fills the pipeline
        seconds = waited = 0.0
        for repeat in range(repeats):
            started = time.perf_counter()
            _, wait = train_steps(iterator, tf.constant(steps))
            seconds += time.perf_counter() - started
            waited += float(wait)
            line(f"augment={level} in {where}: timed call {repeat + 1}/{repeats}")
        results[where] = {
            "examples_per_sec": steps * repeats * batch_size / seconds,
            "input_wait_fraction": waited / seconds,
        }
    ratio = results["device"]["examples_per_sec"] / results["tf_data"]["examples_per_sec"]
    where = f"{gpus} GPU(s)" if gpus else "no GPU: both ways ran on the same CPU cores"
    return {
        **results,
        "level": level,
        "model": model,
        "image_shape": shape,
        "batch_size": batch_size,
        "steps": steps * repeats,
        "gpus": gpus,
        "device_vs_tf_data": ratio,
        "verdict": (
            f"augment={level} on the device trains at {ratio:.2f}x the examples/s of augment in "
            f"tf.data ({results['device']['examples_per_sec']:,.0f} against "
            f"{results['tf_data']['examples_per_sec']:,.0f}; input wait "
            f"{results['device']['input_wait_fraction']:.0%} against "
            f"{results['tf_data']['input_wait_fraction']:.0%}), {model} on {shape}, {where}."
        ),
    }


def _unchanged(images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The device way's loss path with nothing done: both ways then compute the same loss."""
    return images, labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a run folder holding data/ (01_data)")
    parser.add_argument("--level", default="light", choices=LEVELS[1:], help="augment level")
    parser.add_argument("--model", default="small_cnn", help="model name (models.MODELS)")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--steps", type=int, default=30, help="steps per timed call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per way")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = measure(
        args.run_dir,
        level=args.level,
        model=args.model,
        batch_size=args.batch_size,
        steps=args.steps,
        repeats=args.repeats,
    )
    print(json.dumps(result, indent=1) if args.json else result["verdict"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
