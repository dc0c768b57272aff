"""Fit the batch to the device and the learning rate to the batch: the finders' decisions.

`batch` chooses a global batch from probes of real training steps (the largest that fits in GPU
memory less a margin, or the CPU's throughput knee); `lr` runs the learning-rate range test and
suggests a rate. Both are plain Python with no TensorFlow: the caller measures (`probes`, which
imports TensorFlow, is not imported here) and these modules decide, so their rules are unit-tested
on synthetic numbers.
"""

from .batch import FindError, Probe, choice_record, find_batch
from .lr import lr_record, lr_schedule, range_test, smooth, suggest

__all__ = [
    "FindError",
    "Probe",
    "choice_record",
    "find_batch",
    "lr_record",
    "lr_schedule",
    "range_test",
    "smooth",
    "suggest",
]
