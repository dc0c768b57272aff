"""TabM's own knobs (tasks/tabular/knobs.py, issue 44 §4): a value out of range or of another
model refused in one sentence before TensorFlow loads, the values set reaching the builder, and a
rebuild (another head, weights=FILE) keeping them."""

from __future__ import annotations

import pytest
from tables import make_table_run

from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.data.meta import read_meta
from {{ cookiecutter.package_name }}.seam import early_check
from {{ cookiecutter.package_name }}.tasks.tabular import knobs, task
from {{ cookiecutter.package_name }}.train import Params, TrainError, check_values


def test_a_knob_out_of_range_is_refused_in_one_sentence_before_tensorflow() -> None:
    with pytest.raises(StepError) as refused:
        early_check({"members": 100})
    assert str(refused.value) == (
        "members=100 is not allowed: use a whole number from 1 to 64 (02 searches 8, 16, 32)."
    )
    with pytest.raises(StepError, match=r"^sigma=0 is not allowed: use a number from 0\.01 to 100"):
        early_check({"sigma": 0})
    with pytest.raises(StepError, match=r"^depth=1\.5 is not allowed: use a whole number"):
        early_check({"depth": 1.5})
    early_check({"members": 8, "depth": 3, "frequencies": 32, "sigma": 0.3})  # allowed


def test_a_knob_of_another_model_is_refused_by_training_too() -> None:
    with pytest.raises(TrainError, match=r"^members=8 is not allowed for model=wide_deep: it is a"):
        check_values(Params(model="wide_deep", members=8))
    check_values(Params(model="tabm", members=8))


def test_the_values_set_reach_the_builder_and_a_rebuild_keeps_them(tmp_path) -> None:
    params = Params(model="tabm", members=8, depth=1, frequencies=8, sigma=0.5)
    assert knobs.values(params) == {"members": 8, "depth": 1, "freqs": 8, "sigma": 0.5}
    assert knobs.values(Params(model="tabm")) == {}  # None: the builder's defaults
    meta = read_meta(make_table_run(tmp_path))
    model = task.TASK.build_model("tabm", meta, width=64, **knobs.values(params))
    again = task.rebuilt(model, 3)  # another head, the same builder and knobs
    for built in (model, again):
        assert built.get_layer("members").members == 8
        assert (built.get_layer("periodic").freqs, built.get_layer("periodic").sigma) == (8, 0.5)
        assert [layer.name for layer in built.layers if layer.name.startswith("deep_")] == [
            "deep_0"
        ]
    assert again.get_layer("deep_0").units == 64 and again.output.shape[-1] == 3
