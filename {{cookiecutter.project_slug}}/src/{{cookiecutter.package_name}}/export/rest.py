"""TF Serving's REST API: the `:predict` request for raw examples, its answer, and a small client.

The task builds the request body (rest_payload): the columnar form, {"signature_name":
"serving_default", "inputs": {name: [...]}}, the whole batch as one nested list, or the row form,
{"instances": [...]}, one entry per example. TF Serving answers the columnar form as {"outputs":
{name: [...]}} and the row form as {"predictions": [...]}, one dict per example;
parse_rest_response reads both into one numpy array per output. answer_rest computes TF
Serving's answer with the SavedModel in this process, so a payload can be checked end to end
without a server."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from ..artifacts import StepError
from ..tasks import current as task
from .params import ExportError
from .savedmodel import MODEL_NAME

OUTPUT_DTYPES = {"probabilities": np.float32, "class_ids": np.int64, "class_names": np.str_}
# what a task's serving_default adds on input unlike its training data (issue 42 §3.7)
OUTPUT_DTYPES |= {"oov_share": np.float32, "out_of_range": np.str_, "missing_share": np.float32}
REST_PORT = 8501


class ServingError(RuntimeError):
    """TF Serving did not answer, or answered with an error: the message says which and why."""


def rest_url(
    model_name: str = MODEL_NAME,
    host: str = "127.0.0.1",
    port: int = REST_PORT,
    version: int | None = None,
    label: str | None = None,
) -> str:
    """The `:predict` URL of a model on TF Serving: the version its policy picks, a version
    (`/versions/N`) or a label (`/labels/stable`, `/labels/canary`), not both."""
    if version is not None and label is not None:
        raise ExportError(f"version={version} and label={label!r}: name one of them, not both.")
    pinned = f"/versions/{int(version)}" if version is not None else ""
    pinned = f"/labels/{label}" if label is not None else pinned
    return f"http://{host}:{port}/v1/models/{model_name}{pinned}:predict"


def rest_payload(raw: Any) -> dict[str, Any]:
    """The JSON body of a `:predict` request for a batch of raw examples, as the task sends them
    (the task's rest_payload); anything else is one sentence."""
    try:
        return task().export.rest_payload(raw)
    except StepError as error:
        raise ExportError(str(error)) from None


def parse_rest_response(response: dict[str, Any]) -> dict[str, np.ndarray]:
    """TF Serving's answer as one numpy array per output (columnar or row form)."""
    if "error" in response:
        raise ServingError(f"TF Serving answered with an error: {response['error']}")
    if "outputs" in response and isinstance(response["outputs"], dict):
        columns = response["outputs"]
    elif "predictions" in response and response["predictions"]:
        rows = response["predictions"]
        columns = {name: [row[name] for row in rows] for name in rows[0]}
    else:
        keys = ", ".join(sorted(response)) or "none"
        raise ServingError(
            f"The answer has no named outputs (keys: {keys}): expected TF Serving's 'outputs' "
            "or 'predictions' for a signature with several outputs."
        )
    dtypes = OUTPUT_DTYPES
    return {name: np.asarray(column, dtype=dtypes.get(name)) for name, column in columns.items()}


def predict_rest(url: str, examples: Any, timeout: float = 30.0) -> dict[str, np.ndarray]:
    """Send raw examples to TF Serving's REST `:predict` URL (see rest_url), parse its answer."""
    body = json.dumps(rest_payload(examples)).encode("utf-8")
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return parse_rest_response(json.loads(answer.read()))
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", errors="replace").strip()[:300]
        raise ServingError(f"{url} answered HTTP {error.code}: {detail or error.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        reason = getattr(error, "reason", error)
        raise ServingError(f"No answer from {url} ({reason}): is TF Serving running?") from None


def server_ready(url: str, timeout: float = 2.0) -> bool:
    """Whether TF Serving answers for the model of a `:predict` URL with a version AVAILABLE."""
    status = url.rsplit(":predict", 1)[0]
    try:
        with urllib.request.urlopen(status, timeout=timeout) as answer:
            states = json.loads(answer.read()).get("model_version_status", [])
    except (OSError, ValueError):
        return False
    return any(state.get("state") == "AVAILABLE" for state in states)


def answer_rest(signature: Callable[..., dict[str, tf.Tensor]], payload: dict[str, Any]) -> dict:
    """TF Serving's answer to `payload`, computed by a loaded signature in this process: columnar
    ("outputs") to a columnar request, one row per instance ("predictions") to a row-form one."""
    specs = signature.structured_input_signature[1]  # "images", "text"; a table: its columns
    columns = payload.get("inputs", {})
    if not set(specs) <= set(columns) and "instances" not in payload:
        wanted = sorted(specs)[0]
        return {"error": f"The request has no inputs[{wanted!r}] nor instances: use rest_payload."}
    row_form = not set(specs) <= set(columns)
    instances = payload["instances"] if row_form else None
    objects = isinstance(instances, list) and bool(instances) and isinstance(instances[0], dict)
    if len(specs) > 1 or objects:  # named columns (a table of one too): rows are JSON objects
        try:
            given = columns_of(payload["instances"] if row_form else _rows(columns), specs)
        except StepError as error:
            return {"error": str(error)}
    else:
        ((name, spec),) = specs.items()
        rows = payload["instances"] if row_form else columns[name]
        try:
            where = "instances" if row_form else f"inputs[{name!r}]"
            given = {name: one_input(rows, spec, where)}
        except StepError as error:  # TF Serving answers a bad body with {"error": ...} too
            return {"error": str(error)}
    outputs = {}
    for name, value in signature(**given).items():
        array = value.numpy()
        if array.dtype == object:
            array = np.array([item.decode("utf-8") for item in array.ravel()]).reshape(array.shape)
        outputs[name] = array.tolist()
    if row_form:
        rows = zip(*outputs.values(), strict=True)
        return {"predictions": [dict(zip(outputs, row, strict=True)) for row in rows]}
    return {"outputs": outputs}


def one_input(rows: Any, spec: tf.TensorSpec, where: str = "instances") -> tf.Tensor:
    """A signature's single input from JSON (strings for text, nested integers for images), or
    one sentence naming the first value its type cannot take (issue 45: numbers, nulls and
    objects reached the model, or NumPy's own error)."""
    strings = spec.dtype == tf.string
    hint = "a list of strings, one per text" if strings else "the examples as nested lists"

    def refuse(what: str) -> Any:
        raise StepError(f"{what}: send {hint} (rest_payload builds the body).")

    if not isinstance(rows, list) or not rows:
        return refuse(f"{where} must be a non-empty list, not {type(rows).__name__}")
    if strings:
        odd = [(i, row) for i, row in enumerate(rows) if not isinstance(row, str)]
        if odd:
            index, value = odd[0]
            return refuse(f"{where}[{index}] is {value!r}, not a string")
        return tf.constant(rows, tf.string)
    try:
        array = np.asarray(rows, dtype=spec.dtype.as_numpy_dtype)
    except (TypeError, ValueError, OverflowError) as error:
        reason = str(error).splitlines()[0].rstrip(".")
        return refuse(f"{where} cannot be read as {spec.dtype.name} ({reason})")
    if not spec.shape.is_compatible_with(array.shape):
        return refuse(f"{where} has the shape {list(array.shape)}, not {spec.shape.as_list()}")
    return tf.constant(array, dtype=spec.dtype)


def _renamed(given: set[str], specs: dict[str, tf.TensorSpec]) -> str:
    """Where a client sent a file's own column names (a CSV header's `education-num`): the data step
    made them identifiers (lowercase, other characters `_`, as tabular/columns.sanitize), and
    those are the signature's input names."""
    pairs = [(name, re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")) for name in given]
    pairs = sorted((name, ident) for name, ident in pairs if ident in specs and ident not in given)
    said = ", ".join(f"{name!r} as {ident!r}" for name, ident in pairs)
    return f" (the data step made the file's column names identifiers: send {said})" if said else ""


def columns_of(instances: Any, specs: dict[str, tf.TensorSpec]) -> dict[str, tf.Tensor]:
    """JSON rows with named columns as a signature's inputs (a missing number is NaN, a null
    string ""), refused in one sentence when a row misses a column, brings an unknown one, or holds
    a value its column's type cannot take, null for a number among them, as TF Serving does."""
    if not isinstance(instances, list) or not instances:
        return _refuse("instances must be a non-empty list of rows")
    for index, row in enumerate(instances):
        given = set(row) if isinstance(row, dict) else set()
        if given != set(specs):
            wrong = sorted(set(specs) - given) or sorted(given - set(specs))
            said = (
                f"lacks {', '.join(wrong)}"
                if set(specs) - given
                else f"has unknown {', '.join(wrong)}"
            )
            hint = _renamed(given, specs)
            return _refuse(f"instances[{index}] {said if given else 'is not an object'}{hint}")
    columns = {}
    for name, spec in specs.items():
        values = [row[name] for row in instances]
        if spec.dtype == tf.string:
            columns[name] = tf.constant(["" if v is None else str(v) for v in values], tf.string)
            continue
        odd = [(i, v) for i, v in enumerate(values) if not _number(v)]
        if odd:
            index, value = odd[0]
            said = "null" if value is None else repr(value)
            return _refuse(
                f"instances[{index}][{name!r}] is {said}, not a number (NaN where missing: TF "
                "Serving refuses null for a number)"
            )
        numbers = [float(v) for v in values]
        beyond = [i for i, v in enumerate(numbers) if abs(v) > np.finfo(np.float32).max]
        if beyond and spec.dtype == tf.float32:  # NaN (missing) passes; inf and 1e300 do not
            return _refuse(
                f"instances[{beyond[0]}][{name!r}] is {values[beyond[0]]!r}, beyond float32's "
                "range (finite numbers within ±3.4e38, NaN where missing)"
            )
        columns[name] = tf.constant(numbers, spec.dtype)
    return columns


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _refuse(what: str) -> Any:
    raise StepError(f"{what}: send one JSON object per row with every column the model names.")


def _rows(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Columnar inputs ({column: [values]}) as rows, one object per example."""
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
