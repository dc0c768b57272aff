"""The benchmarks part (the `gpubench` package and the training benchmark) as the rest of the
package sees it: the command line gets `gpu-bench`, which measures the seed's GPU claims on the
machine it runs on and writes GPU_BENCH_METRICS. Nothing else of the package reads either.
"""

from __future__ import annotations

GPU_BENCH_METRICS = "metrics/gpu_bench.json"  # `gpu-bench`: the seed's GPU claims, measured

COMMANDS = ("gpubench.command",)  # modules with add_parsers(commands) for the command line
