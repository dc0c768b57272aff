"""One measurement, in a process of its own: `python -m <package>.gpubench.measure '<spec json>'`.

A fresh process per measurement: TensorFlow's devices (logical CPUs), its memory pool and the
global dtype policy are fixed per process, and one configuration's leftovers (cached kernels,
fragmented GPU memory) must not speed up or slow down the next. The result is the last line of
stdout, prefixed with RESULT.

Training goes through the project's own pieces: find.probes.Trainer (the model from the task's
build_model, the train step of replica.py, the strategy's distributed input), fed with the task's
synthetic batches (synthetic_meta, synthetic_batch: random images, random token ids) through the
in-memory input of the training benchmark (train.benchmark_memory.fed_from_memory), or with the
run folder's own data; the largest batch that fits comes from find.batch.find_batch.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RESULT = "RESULT "


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the measurement `spec` names ("train" or "max_batch") in this process."""
    from ..train.devices import configure_devices, dtype_policy, make_strategy

    configure_devices(spec.get("logical_cpus", 0))
    strategy = make_strategy("mirrored" if spec["replicas"] > 1 else "one_device")
    with dtype_policy(spec["precision"]):
        if spec["kind"] == "max_batch":
            return _max_batch(spec, strategy)
        return _train_rate(spec, strategy)


def _train_rate(spec: dict[str, Any], strategy: Any) -> dict[str, Any]:
    from ..find.probes import Trainer
    from ..tasks import current as task

    folder, meta, params = _inputs(spec)
    batch = spec["batch"]
    with _fed(spec, meta, batch):
        trainer = Trainer(
            folder,
            meta,
            params,
            strategy,
            batch,
            loss_scaling=spec["precision"] == "mixed_float16",
            jit=spec["jit"],
        )
        trainer.run(spec["warmup"])  # traces the step, fills the input
        started = time.perf_counter()
        trainer.run(spec["steps"])
        seconds = time.perf_counter() - started
    return {
        f"{task().noun}_per_second": batch * spec["steps"] / seconds,
        "seconds": seconds,
        "replicas": strategy.num_replicas_in_sync,
    }


def _max_batch(spec: dict[str, Any], strategy: Any) -> dict[str, Any]:
    from ..find.batch import find_batch
    from ..find.probes import batch_probe, device_bytes

    folder, meta, params = _inputs(spec)
    loss_scaling = spec["precision"] == "mixed_float16"

    def probe(batch: int) -> Any:
        with _fed(spec, meta, batch):
            return batch_probe(
                folder, meta, params, strategy, loss_scaling=loss_scaling, jit=spec["jit"]
            )(batch)

    choice = find_batch(
        probe,
        device="gpu",
        replicas=strategy.num_replicas_in_sync,
        train_count=spec["max_batch_cap"],
        start=spec["batch"],
        max_seconds=spec["max_seconds"],
        device_bytes=device_bytes(),
    )
    fitted = [p.batch for p in choice.probes if p.ok]
    return {
        "max_batch": max(fitted, default=None),
        "limited_by": choice.limited_by,
        "probes": [[p.batch, p.ok] for p in choice.probes],
    }


def _inputs(spec: dict[str, Any]) -> tuple[Path, dict[str, Any], Any]:
    """The run folder, the data's meta (synthetic: the task's, of the spec's size) and the
    model params."""
    from ..tasks import current as task

    params = SimpleNamespace(model=spec["model"], width=None, dropout=None, seed=42)
    if spec.get("data_dir"):
        from ..tasks import read_meta

        folder = Path(spec["data_dir"])
        return folder, read_meta(folder), params
    return Path("."), task().bench.synthetic_meta(spec["size"], spec["num_classes"]), params


@contextlib.contextmanager
def _fed(spec: dict[str, Any], meta: dict[str, Any], batch: int) -> Iterator[None]:
    """The task's synthetic batch as the training split, built once in memory, for the duration
    of one call (the task's build_inputs is swapped, then restored, also when the call fails);
    with --data run, the run's own pipeline."""
    if spec.get("data_dir"):
        yield
        return
    from ..tasks import current as task
    from ..train.benchmark_memory import fed_from_memory

    inputs, labels = task().bench.synthetic_batch(meta, batch, seed=0)
    with fed_from_memory(inputs, labels):
        yield


def main(argv: list[str] | None = None) -> int:
    from .. import quiet

    quiet.import_tensorflow()
    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    print(RESULT + json.dumps(measure(spec)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
