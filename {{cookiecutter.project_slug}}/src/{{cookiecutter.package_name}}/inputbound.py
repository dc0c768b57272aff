"""One definition of input-bound, shared by the data step's estimate and training's measurement.

01_data estimates the share of each step that would wait for data from its pipeline's rate and a
model's (`benchmark_pipeline(..., model_examples_per_sec=...)`); 03_train measures the share its
steps waited (observe/input_wait.py). Both call a run input-bound from the same share, so the two
verdicts cannot contradict each other on a number they agree on. This module imports nothing: the
data step reads it without loading observe/ (the exporter, NVML, the profiler).
"""

from __future__ import annotations

# At or above this share of each step waiting for data, training is called input-bound (the
# monitoring's alert rule and its dashboard's red line use it too).
INPUT_BOUND_AT = 0.30


def is_input_bound(wait_share: float) -> bool:
    """Whether a share of each step spent waiting for data (0..1) is input-bound."""
    return wait_share >= INPUT_BOUND_AT
