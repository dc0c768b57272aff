"""The task seam: what differs between image, text and table classification, behind one interface.

A project holds one task's folder (the post-gen hook removes the others, as it does a declined
part), and every step asks `current()` for what depends on the task; nothing else in the package
names a task. Which folder that is, seam.py finds without importing TensorFlow, for steps.py and the
runner; `current()` imports it.

What each task's `tasks/<folder>/task.py` gives the steps:

    NAME, NOUN                 the bake's answer ("image_classification"); "images", "texts", "rows"
    data_step() here           module of step 1 (relative to the package): its Params, check, run
    model_state(meta)          what a checkpoint depends on beyond training values (image shape)
    make_dataset(...)          (model inputs, int32 labels) batches of a split; the image signature
    longest_batches(data, meta)  optional: make_dataset's batches padded to the longest input
                               length (the batch-size finder probes memory at that shape)
    raw_examples(...)          the first examples of a split as the export's serving_default takes
                               them (uint8 pixels, strings; a table's rows as a structured array,
                               one field per column: tasks.outputs.feed passes them), with labels
    model_examples(...)        the same examples as the trained model (and ONNX) takes them
    MODELS, DEFAULT_MODEL      the model names every step and the finders accept
    build_model, check_model   (name, meta, *, weights, width, dropout) → a Keras model / a refusal
    KNOBS                      the task's own builders' width and dropout: default, width's range
    RECIPE_CHOICES             the task's own recipe values a search may choose among, the
                               default first ({"augment": LEVELS} for images; none for text)
    model_spec(model)          the TensorSpec of the trained model's input (ONNX export)
    build_archive(model, meta, run_dir)   the SavedModel's endpoints (raw input in)
    MODEL_SIGNATURE            the endpoint that takes model_examples (parity of converted models)
    client_encoder(run_dir)    where MODEL_SIGNATURE is not serving_default: raw examples -> its
                               input, as a client of a converted model runs it (05's end to end)
    RAW_STRINGS                optional: serving_default takes strings (converters meet string ops):
                               True, or the words naming which (tables: the category columns)
    length_ranges(meta)        optional: (fewest, most) tokens of each length bucket, where the
                               model input's length varies: an engine's profiles (lengths.py)
    INT8                       "static" (calibrated on training examples) or "dynamic" quantization
    baseline(run_dir)          a scikit-learn model trained on the same split, scored on test
    test_extras(..., predict)  what the task adds to the test scores (confused pairs, mistakes;
                               tables: ROC/PR AUC, the threshold chosen on validation via predict)
    DRAWERS                    optional: {step: {figure: drawer}} of the task's own figures
    rest_payload(raw)          TF Serving's REST body for raw examples
    serving_examples(run_dir, meta, count, seed)   what a load test's requests carry, raw:
                               random uint8 images of the data's shape, the validation texts
    bench_model(quick)         gpu-bench's reference: model name, size, classes, and in words
    synthetic_meta(size, num_classes)   a meta build_model takes, for synthetic data (gpu-bench)
    synthetic_batch(meta, count, seed)  (inputs, int64 labels) of that meta: random uint8 images
                               `size` a side, random int64 token ids `size` long
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..seam import folder


def current() -> ModuleType:
    """The task's answers (tasks/<folder>/task.py), imported now: it imports TensorFlow."""
    return importlib.import_module(f"{__name__}.{folder()}.task")
