"""TF-TRT: TensorFlow's own TensorRT converter, on the SavedModel of 04_export.

Only TensorFlow builds with TensorRT have it: pip TensorFlow since 2.18 has none, TF 2.17 and
older, and vendor containers (NVIDIA NGC), do. int8 calibrates on training examples from the data
pipeline, like the other backends.
"""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from ..export.files import SIGNATURE
from ..tasks import current
from .base import Job, Predict, gpu_visible, latest_export, run_savedmodel
from .calibration import calibration_batches, calibration_inputs


def tf_trt_available(precision: str) -> tuple[bool, str]:
    strings = current().export.raw_strings  # TF-TRT converts serving_default
    if isinstance(strings, str):  # the task says which of its inputs are strings (tables)
        return False, (
            f"TF-TRT would convert serving_default, which takes strings ({strings}), and "
            "TensorRT takes no string ops; ONNX and the TensorRT engine run the string-free "
            f"{current().export.model_signature!r} signature."
        )
    if strings:
        return False, (
            "TF-TRT would convert serving_default, which takes strings and tokenizes them in the "
            "graph, and TensorRT takes no string ops; the TensorRT engine runs the token ids."
        )
    if not tf.sysconfig.get_build_info().get("is_tensorrt_build", False):
        return False, "this TensorFlow was built without TensorRT."
    if not gpu_visible():
        return False, "no GPU visible."
    return True, f"TF-TRT (TrtGraphConverterV2) on the SavedModel ({precision})."


def tf_trt_convert(job: Job) -> Path:
    """A TF-TRT SavedModel in optimized/tf_trt_<precision>/."""
    from tensorflow.python.compiler.tensorrt import trt_convert

    mode = {
        "fp32": trt_convert.TrtPrecisionMode.FP32,
        "fp16": trt_convert.TrtPrecisionMode.FP16,
        "int8": trt_convert.TrtPrecisionMode.INT8,
    }
    int8 = job.precision == "int8"
    converter = trt_convert.TrtGraphConverterV2(
        input_saved_model_dir=str(latest_export(job.run_dir)),
        input_saved_model_signature_key=SIGNATURE,
        precision_mode=mode[job.precision],
        use_calibration=int8,
    )
    if int8:
        inputs = calibration_inputs(job.run_dir, job.calibration_examples)

        def calibration_input_fn():
            for batch in calibration_batches(inputs):
                yield (tf.constant(batch),)

        converter.convert(calibration_input_fn=calibration_input_fn)
    else:
        converter.convert()
    target = job.out_dir / f"tf_trt_{job.precision}"
    converter.save(str(target))
    return target


def tf_trt_load(path: Path, job: Job) -> Predict:
    return run_savedmodel(tf.saved_model.load(str(path)).signatures[SIGNATURE])
