"""Step 4, the export: one exit from training, a versioned SavedModel TF Serving takes as it is.

    from <package> import export
    params = export.Params(version=1, overwrite=False)
    export.check(run_dir, params)           # values, inputs, lineage: one sentence if refused
    metrics = export.run(run_dir, params)   # export, parity, saved_model_cli, metrics/export.json

What was trained is what is served: the serving signature takes raw examples as a client sends
them (any batch size), runs the model in inference mode (Dropout off, batch norm frozen) with its
preprocessing inside, and returns probabilities, class ids and class names.

- params: Params and check, the step's contract before any model is loaded
- files: model.keras and SavedModel folders, checked cheaply and loaded with one sentence if broken
- savedmodel: the export itself, its signature as a dict and as `saved_model_cli` prints it
- parity: the export reloaded in a fresh process against the Keras model
- entry: run, which does it all and writes metrics/export.json
- rest: TF Serving's REST `:predict` request and answer, and a client for it (with the serving
  part: a project that declined it has no rest module, and export has none of its names)
"""

import importlib.util

from ..env.devices import configure_memory_growth
from ..tasks import current as _task
from ..tasks.outputs import call_signature
from .entry import run
from .files import (
    SIGNATURE,
    signature_table,
)
from .params import ExportError, Params, check, export_target
from .parity import TOLERANCE, check_parity
from .savedmodel import (
    MODEL_NAME,
    export_savedmodel,
    graph_ops,
    saved_model_cli_command,
    signature_text,
)

INPUT_NAME = _task().export.raw_input  # serving_default's one input: "images", "text"

# This step's TensorFlow shares the GPU with the parity process and TF Serving: grow GPU
# memory as needed, not reserve nearly all of it at the first op. On import, so before any op
# of a notebook or the CLI (TF_FORCE_GPU_ALLOW_GROWTH does it only where it is set).
MEMORY_GROWTH = configure_memory_growth()

__all__ = [
    "signature_table",
    "INPUT_NAME",
    "MODEL_NAME",
    "SIGNATURE",
    "TOLERANCE",
    "ExportError",
    "Params",
    "call_signature",
    "check",
    "check_parity",
    "export_savedmodel",
    "export_target",
    "graph_ops",
    "run",
    "saved_model_cli_command",
    "signature_text",
]

if importlib.util.find_spec(f"{__name__}.rest"):  # the serving part's; gone where it was declined
    from .rest import (
        ServingError,
        answer_rest,
        parse_rest_response,
        predict_rest,
        rest_payload,
        rest_url,
        server_ready,
    )

    __all__ += ["ServingError", "answer_rest", "parse_rest_response", "predict_rest"]
    __all__ += ["rest_payload", "rest_url", "server_ready"]
