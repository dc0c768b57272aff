"""The tuner's search space as the text task's builders take it: a width keras-tuner may draw is
one the builder accepts, so no trial of a search dies on a refused width (issue 45: no test of a
text bake reached tune/space.py)."""

from __future__ import annotations

import pytest

from {{ cookiecutter.package_name }}.tasks.text import task
from {{ cookiecutter.package_name }}.tasks.text.models import build_model
from {{ cookiecutter.package_name }}.tune.space import search_space


@pytest.mark.parametrize("model", sorted(task.KNOBS))
def test_every_width_the_tuner_may_draw_is_one_the_text_builder_takes(model):
    """keras-tuner draws min, min + step, ... up to max: each passes the task's check (the
    builder's own rule), the smallest and largest build, and training's default is one of them."""
    spec = search_space(model)["width"]
    widths = list(range(spec["min"], spec["max"] + 1, spec["step"]))
    assert spec["default"] in widths and len(widths) > 1
    for width in widths:
        task.check_model(model, {}, width=width)
    for width in (widths[0], widths[-1]):
        assert build_model(model, 64, 3, 16, width=width).count_params() > 0
    dropout = search_space(model)["dropout"]
    for rate in (dropout["min"], dropout["max"], dropout["default"]):
        task.check_model(model, {}, dropout=rate)


def test_a_pretrained_encoder_searches_its_fine_tuning_rate(tmp_path):
    """A KerasHub preset folder: 02 searches 2e-5 to 5e-5 (log), BERT's fine-tuning range; one
    make_local_preset built with random weights keeps the shared range (it trains from scratch)."""
    from {{ cookiecutter.package_name }}.tasks.text import hub_names

    folder = tmp_path / "preset"
    folder.mkdir()
    for name in hub_names.PRESET_FILES:
        (folder / name).write_text("{}", encoding="utf-8")
    rate = search_space(str(folder))["learning_rate"]
    shown = (rate["min"], rate["max"], rate["sampling"], rate["default"])
    assert shown == (2e-5, 5e-5, "log", 3e-5)
    (folder / hub_names.RANDOM_MARK).write_text("random weights", encoding="utf-8")
    assert search_space(str(folder))["learning_rate"]["min"] == 1e-4
