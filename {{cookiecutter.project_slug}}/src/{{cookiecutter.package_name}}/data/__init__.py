"""Step 1, the data: a real source → sharded TFRecords → a tf.data pipeline that feeds the device.

`prepare` writes run_dir/data/ (shards + meta.json), `make_dataset` reads it for training, and
`benchmark_pipeline` measures the pipeline against a naive one over the same records.
"""

from .benchmark import benchmark_pipeline
from .pipeline import auto_shard_policy, first_images, make_dataset
from .records import prepare, read_meta
from .sources import SOURCES, DataError

__all__ = [
    "SOURCES",
    "DataError",
    "auto_shard_policy",
    "benchmark_pipeline",
    "first_images",
    "make_dataset",
    "prepare",
    "read_meta",
]
