"""02_tune on tables (issue 44 §4): the default model's search space names its knobs, each width
it may draw builds, and a one-trial search writes them where 03_train takes them from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tables import make_table_run

pytest.importorskip("keras_tuner", reason="keras-tuner is not installed (a project dependency)")

from {{ cookiecutter.package_name }} import tune  # noqa: E402
from {{ cookiecutter.package_name }}.data.meta import read_meta  # noqa: E402
from {{ cookiecutter.package_name }}.parts.tune import TUNED_FILE  # noqa: E402
from {{ cookiecutter.package_name }}.tasks.tabular import models, task  # noqa: E402
from {{ cookiecutter.package_name }}.train import Params as TrainParams  # noqa: E402
from {{ cookiecutter.package_name }}.train import resolve_params  # noqa: E402
from {{ cookiecutter.package_name }}.tune.space import search_space  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_table_run(tmp_path_factory.mktemp("tune"))


def test_the_default_table_model_is_what_02_searches() -> None:
    assert task.DEFAULT_MODEL == "tabm" and tune.Params().model == "tabm"
    space = search_space("tabm")
    assert {"learning_rate", "width", "dropout", "weight_decay"} <= set(space)


def test_every_tabm_width_the_tuner_may_draw_builds(run: Path) -> None:
    spec = search_space("tabm")["width"]
    widths = list(range(spec["min"], spec["max"] + 1, spec["step"]))
    assert spec["default"] in widths and len(widths) > 1
    for width in widths:
        task.check_knobs("tabm", width=width)
    layout = read_meta(run)["layout"]
    for width in (widths[0], widths[-1]):
        assert models.build_model("tabm", layout, 2, width=width).count_params() > 0


def test_a_one_trial_search_of_tabm_reaches_training(run: Path) -> None:
    tune.run(run, tune.Params(max_trials=1, epochs=1, batch_size=32), verbose=False)
    hparams = json.loads((run / TUNED_FILE).read_text(encoding="utf-8"))["hparams"]
    assert hparams["model"] == "tabm" and {"width", "dropout", "learning_rate"} <= set(hparams)
    resolved, sources = resolve_params(run, TrainParams(epochs=1))
    assert resolved["model"] == "tabm"
    for name in ("width", "dropout", "learning_rate"):
        assert resolved[name] == hparams[name] and sources[name] == "tuned", name


@pytest.mark.parametrize("profile", ["smoke", "default", "gpu"])
def test_each_profile_tunes_the_model_it_trains(profile: str) -> None:
    """03_train uses tuned values only for the model they were tuned for: a profile whose 02
    searched wide_deep while 03 trained tabm threw the search away."""
    from {{ cookiecutter.package_name }}.runner.profile import load_profile

    notebooks = load_profile(Path(__file__).parents[1], profile)["notebooks"]
    if "02_tune" not in notebooks:
        pytest.skip(f"the {profile} profile runs no 02_tune: no tuned model to set beside 03's")
    tuned = notebooks["02_tune"].get("model", tune.Params().model)
    trained = notebooks.get("03_train", {}).get("model", task.DEFAULT_MODEL)
    assert tuned == trained == task.DEFAULT_MODEL
