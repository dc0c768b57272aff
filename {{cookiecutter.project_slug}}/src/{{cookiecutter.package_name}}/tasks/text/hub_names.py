"""Which `model=` values are KerasHub encoders, judged without TensorFlow: a preset folder on disk
(what `save_to_preset` writes) or a preset name, which KerasHub downloads from Kaggle on first use.

A preset name on a machine that cannot reach Kaggle would fail minutes later, deep inside
`from_preset`, with a ConnectionError; `check` refuses it in one sentence before TensorFlow
loads (the runner's pre-flight and `<package> train -p model=...` call it through limits.check).
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...artifacts import StepError

HOST = "www.kaggle.com"  # where KerasHub's preset names are downloaded from (kaggle://keras/...)
PORT = 443
TIMEOUT = 3.0  # seconds for the DNS lookup and for the connection, each
# The KerasHub text encoders whose tokenizer pads with id 0 (hub.py refuses any other pad id).
FAMILIES = ("bert", "distil_bert", "deberta_v3", "albert", "electra", "f_net")
_NAME = re.compile(rf"^({'|'.join(FAMILIES)})_[a-z0-9_]+$")
PRESET_FILES = ("config.json", "tokenizer.json")  # what save_to_preset writes, among others
EXAMPLES = "bert_tiny_en_uncased, bert_small_en_uncased, distil_bert_base_en_uncased"
RANDOM_MARK = "random_weights.txt"  # what make_local_preset leaves beside the preset's files
# The encoder recipe's learning rate (at a global batch of 64), in place of the range test: a
# pretrained encoder fine-tunes at BERT's 2e-5 to 5e-5 (Devlin et al. 2019); a preset with random
# weights trains from scratch, where the range test's pick stalled at chance (2.3e-06).
PRETRAINED_RATE = 3e-5
SCRATCH_RATE = 1e-3
PRETRAINED_RANGE = (2e-5, 5e-5)  # what 02 searches for a pretrained encoder (search_space)
CAVEAT = "random weights: not a pretrained encoder's accuracy"


def kind(model: Any) -> str | None:
    """The kind of encoder: "folder" (a local preset), "name" (a preset name) or None."""
    if not isinstance(model, str) or not model:
        return None
    if model.startswith(("kaggle://", "hf://")) or _NAME.match(model):
        return "name"
    if "/" in model or model.startswith((".", "~")) or Path(model).expanduser().is_dir():
        return "folder"
    return None


def is_hub(model: Any) -> bool:
    """True for a preset folder or name: the models `model=` takes beyond the task's own."""
    return kind(model) is not None


def check(values: Mapping[str, Any]) -> None:
    """Refuse `model=` a preset folder without the preset's files, or a preset name this machine
    cannot download, in one sentence; anything else is the step's own checks' to judge."""
    model = values.get("model")
    found = kind(model)
    if found == "folder":
        check_folder(model)
    elif found == "name":
        failure = unreachable()
        if failure:
            raise StepError(
                f"model={model!r} is a KerasHub preset name, which is downloaded from Kaggle on "
                f"first use, and this machine cannot reach it ({failure}): pass a local preset "
                "folder made with save_to_preset on a machine that can (model=/path/to/folder)."
            )


def check_folder(model: str) -> Path:
    """The preset folder, or one sentence naming what it lacks."""
    folder = Path(model).expanduser()
    missing = [name for name in PRESET_FILES if not (folder / name).is_file()]
    if not folder.is_dir() or missing:
        what = "is no folder" if not folder.is_dir() else f"lacks {', '.join(missing)}"
        raise StepError(
            f"model={model!r} {what}: pass a folder that a KerasHub backbone's and tokenizer's "
            f"save_to_preset wrote (make_local_preset does both), or a preset name ({EXAMPLES})."
        )
    return folder


def random_weights(model: Any) -> bool:
    """True for a preset folder make_local_preset built from a config (its RANDOM_MARK)."""
    return kind(model) == "folder" and (Path(model).expanduser() / RANDOM_MARK).is_file()


def learning_rate(params: Any) -> tuple[float, str] | None:
    """An encoder's learning rate where none was given (or auto) and why, in one line; None
    for the task's own models (the default, or the range test, as before)."""
    if not is_hub(params.model):
        return None
    if random_weights(params.model):
        return SCRATCH_RATE, (
            f"learning_rate {SCRATCH_RATE:.0e}: this preset was built from a config with random "
            "weights (make_local_preset), so it trains from scratch (a given learning_rate wins)."
        )
    return PRETRAINED_RATE, (
        f"learning_rate {PRETRAINED_RATE:.0e}: the fine-tuning rate for a pretrained encoder "
        "(a given learning_rate wins)."
    )


def search_space(model: Any) -> dict[str, dict[str, Any]]:
    """02's own range for an encoder (Models.space): a pretrained preset's learning rate from
    2e-5 to 5e-5 on a log scale, BERT's fine-tuning range. A preset with random weights keeps the
    shared range (1e-4 to 1e-2, around its 1e-3 from scratch). The warmup is the shared
    warmup_epochs; layers are not frozen (an encoder has no frozen phase here), so no knob."""
    if not is_hub(model) or random_weights(model):
        return {}
    low, high = PRETRAINED_RANGE
    rate = {"type": "float", "min": low, "max": high, "sampling": "log"}
    return {"learning_rate": {**rate, "default": PRETRAINED_RATE}}


def recipe_summary(params: Any) -> dict[str, Any]:
    """train.json's accuracy_caveat for a preset with random weights (the headline shows it)."""
    return {"accuracy_caveat": CAVEAT} if random_weights(params.model) else {}


def unreachable(host: str = HOST, port: int = PORT, timeout: float = TIMEOUT) -> str | None:
    """None when a TCP connection to host:port opens within `timeout`; else what failed, in words.

    The DNS lookup runs in a thread joined with the timeout: getaddrinfo itself has none, and an
    offline resolver can take tens of seconds to give up."""
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as error:
            found.append(error)

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    if not found:
        return f"the DNS lookup of {host} gave no answer in {timeout:g} s"
    if isinstance(found[0], OSError):
        return f"the DNS lookup of {host} failed: {found[0]}"
    address = found[0][0][4]
    try:
        with socket.create_connection(address[:2], timeout=timeout):
            return None
    except OSError as error:
        return f"a connection to {host}:{port} failed: {error}"
