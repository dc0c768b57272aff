"""Step 1, the data: a real source → sharded TFRecords → a tf.data pipeline that feeds the device.

`prepare` writes run_dir/data/ (shards + meta.json), `make_dataset` reads it for training, and
`benchmark_pipeline` measures the pipeline against a naive one over the same records. `run` is the
step's one entry (notebook 01, `<package> data`, the runner): `Params`, `check`, `run`.
"""

from .benchmark import benchmark_pipeline
from .pipeline import auto_shard_policy, first_images, make_dataset
from .records import prepare, read_meta
from .sources import SOURCES, DataError
from .step import Params, check, run

__all__ = [
    "SOURCES",
    "DataError",
    "Params",
    "auto_shard_policy",
    "benchmark_pipeline",
    "check",
    "first_images",
    "make_dataset",
    "prepare",
    "read_meta",
    "run",
]
