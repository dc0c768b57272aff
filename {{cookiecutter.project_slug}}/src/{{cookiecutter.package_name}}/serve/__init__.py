"""Serving the export with TF Serving: its configs, versions under labels, and a load test.

    from <package> import serve
    serve.canary(run_dir, 2)        # serve export/2/ beside the stable version, labelled canary
    serve.promote(run_dir)          # canary becomes stable; the old stable stays loaded
    serve.rollback(run_dir)         # the previous stable gets its label back
    serve.status(run_dir)           # what models.config serves, read with TF Serving's message
    serve.rewrite(run_dir)          # the configs written again from versions.json

Step 4 (record_export) writes serving/models.config, batching.config and monitoring.config beside
export/; step 5 (resize_batching) sizes batching.config from the throughput it measured. TF Serving
polls models.config, so every change above takes effect without a restart.

- protos: TF Serving's config messages (ModelServerConfig, BatchingParameters, MonitoringConfig)
- config: the three configs, built as those messages, checked, written atomically
- state: serving/versions.json read and checked, a change written whole, the lock
- versions: canary, promote, rollback, status, rewrite
- bench: `serve-bench`, a closed-loop load generator over REST or gRPC → metrics/serve.json
- commands: the `serve` and `serve-bench` subcommands
"""

from .protos import ConfigError
from .versions import (
    ServeError,
    canary,
    promote,
    record_export,
    resize_batching,
    rollback,
    served,
    status,
)

__all__ = [
    "ConfigError",
    "ServeError",
    "canary",
    "promote",
    "record_export",
    "resize_batching",
    "rollback",
    "served",
    "status",
]
