"""Step 4, the export: one exit from training, a versioned SavedModel TF Serving takes as it is.

    from <package>.export import export_savedmodel, check_parity, signature_text
    exported = export_savedmodel("artifacts/run", version=1)
    parity = check_parity("artifacts/run", exported["export_dir"])

What was trained is what is served: the serving signature takes raw uint8 images of the data set's
shape (any batch size), runs the model in inference mode (Dropout off, batch norm frozen) with its
rescaling inside, and returns probabilities, class ids and class names.

- savedmodel: the export itself, its signature as a dict and as `saved_model_cli` prints it
- parity: the export reloaded in a fresh process against the Keras model, metrics/export.json
- rest: TF Serving's REST `:predict` request and answer, and a client for it
"""

from .parity import TOLERANCE, check_parity, export_metrics
from .rest import (
    ServingError,
    answer_rest,
    parse_rest_response,
    predict_rest,
    rest_payload,
    rest_url,
    server_ready,
)
from .savedmodel import (
    EXPORT_FOLDER,
    INPUT_NAME,
    MODEL_NAME,
    OUTPUTS,
    SIGNATURE,
    ExportError,
    check_export,
    check_version,
    describe_signature,
    export_savedmodel,
    graph_ops,
    saved_model_cli_command,
    signature_text,
)

__all__ = [
    "EXPORT_FOLDER",
    "INPUT_NAME",
    "MODEL_NAME",
    "OUTPUTS",
    "SIGNATURE",
    "TOLERANCE",
    "ExportError",
    "ServingError",
    "answer_rest",
    "check_export",
    "check_parity",
    "check_version",
    "describe_signature",
    "export_metrics",
    "export_savedmodel",
    "graph_ops",
    "parse_rest_response",
    "predict_rest",
    "rest_payload",
    "rest_url",
    "saved_model_cli_command",
    "server_ready",
    "signature_text",
]
