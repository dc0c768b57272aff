"""Serving's promises that the label tests cannot see: a rollback goes back one stable version at a
time, and a failed write never leaves TF Serving a half-written config.

TF Serving polls models.config: a file it reads half-written drops the model or its labels until
the next poll. Here writes run under a file-size limit (RLIMIT_FSIZE, as a full disk would stop
them), and each config must then be the old one, whole; a temporary file and a rename give that,
a direct write does not.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
from pathlib import Path

import pytest
from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from {{ cookiecutter.package_name }} import seam, serve
from {{ cookiecutter.package_name }}.serve import config, protos

resource = pytest.importorskip("resource", reason="RLIMIT_FSIZE is POSIX-only")
SERVING_FILES = ("models.config", "batching.config", "monitoring.config", "versions.json")


def _export(run_dir: Path, version: int) -> None:
    (run_dir / "export" / str(version)).mkdir(parents=True, exist_ok=True)
    (run_dir / "export" / str(version) / "saved_model.pb").write_bytes(b"stand-in")
    serve.record_export(run_dir, {"version": version, "parity_ok": True, "max_abs_diff": 0.0})


def _labels(run_dir: Path) -> tuple[list[int], dict[str, int]]:
    text = (run_dir / "serving" / "models.config").read_text(encoding="utf-8")
    parsed = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    (model,) = parsed.model_config_list.config
    return list(model.model_version_policy.specific.versions), dict(model.version_labels)


def _promote(run_dir: Path, version: int) -> None:
    """Promote an unloaded version: served first, then labelled (TF Serving's two steps)."""
    serve.promote(run_dir, version)
    serve.promote(run_dir, version)
    assert _labels(run_dir)[1]["stable"] == version


def test_rollback_goes_back_to_the_previous_stable_then_the_one_before(tmp_path: Path) -> None:
    """Three stables in turn (1, 2, 3): a rollback gives stable to 2, the next to 1."""
    for version in (1, 2, 3):
        _export(tmp_path, version)
    _promote(tmp_path, 2)
    _promote(tmp_path, 3)
    assert _labels(tmp_path) == ([2, 3], {"stable": 3})
    said = serve.rollback(tmp_path)
    assert "version 2 is stable again" in said and "version 3 is unloaded" in said
    assert _labels(tmp_path) == ([1, 2], {"stable": 2})  # 1 stays loaded for the next rollback
    serve.rollback(tmp_path)
    assert _labels(tmp_path) == ([1], {"stable": 1})
    with pytest.raises(serve.ServeError, match="Nothing to roll back to"):
        serve.rollback(tmp_path)


@contextlib.contextmanager
def _file_size_limit(size: int):
    """Writes past `size` bytes fail with EFBIG (OSError) in this process, as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@pytest.mark.parametrize("action", ["canary", "promote", "rollback"])
def test_a_write_that_fails_midway_leaves_every_serving_file_whole(
    tmp_path: Path, action: str
) -> None:
    for version in (1, 2):
        _export(tmp_path, version)
    if action == "rollback":
        _promote(tmp_path, 2)
    folder = tmp_path / "serving"
    before = {name: (folder / name).read_bytes() for name in SERVING_FILES}
    calls = {
        "canary": lambda: serve.canary(tmp_path, 2),
        "promote": lambda: serve.promote(tmp_path, 2),
        "rollback": lambda: serve.rollback(tmp_path),
    }
    with _file_size_limit(64), pytest.raises(serve.ServeError, match="free space on its disk"):
        calls[action]()
    after = {name: (folder / name).read_bytes() for name in SERVING_FILES}
    assert after == before
    left = [path.name for path in folder.iterdir() if path.name.startswith(".")]
    assert left in ([], [".versions.lock"]), left  # the lock file stays; no temporary file does


def test_a_config_is_replaced_by_a_new_file_not_rewritten_in_place(tmp_path: Path) -> None:
    """A reader that opened models.config before the change reads the old file to its end."""
    for version in (1, 2):
        _export(tmp_path, version)
    path = tmp_path / "serving" / "models.config"
    with path.open(encoding="utf-8") as reader:
        head = reader.read(10)
        serve.canary(tmp_path, 2)
        old = head + reader.read()
    assert _labels(tmp_path)[1] == {"stable": 1, "canary": 2}
    parsed = text_format.Parse(old, model_server_config_pb2.ModelServerConfig())
    assert dict(parsed.model_config_list.config[0].version_labels) == {"stable": 1}


# --- what each serve action says, and what it refuses ------------------------------------------


def _export_only(run_dir: Path, version: int) -> None:
    (run_dir / "export" / str(version)).mkdir(parents=True, exist_ok=True)
    (run_dir / "export" / str(version) / "saved_model.pb").write_bytes(b"stand-in")


def test_record_export_says_what_became_of_each_version(tmp_path: Path) -> None:
    state = tmp_path / "serving"
    _export_only(tmp_path, 1)
    said = serve.record_export(tmp_path, {"version": 1, "parity_ok": False, "max_abs_diff": 0.4})
    assert said == (
        f"Wrote {state / 'models.config'} and its batching and monitoring configs: version 1 "
        "failed parity and will not be served."
    )
    assert not (state / "models.config").exists()  # nothing stable yet: nothing to serve
    metrics = {"version": 2, "parity_ok": True, "max_abs_diff": 0.0, "tolerance": 1e-5}
    said = serve.record_export(tmp_path, {**metrics, "precision": "float32"})
    assert said.endswith("configs: version 2 is the stable version.")
    assert _labels(tmp_path) == ([2], {"stable": 2})
    said = serve.record_export(tmp_path, {**metrics, "version": 3})
    assert said.endswith(
        f"configs: version 3 is recorded; make it the canary with `{serve.versions.MODEL_NAME} "
        f"serve canary --run-dir {tmp_path} --version 3`."
    )
    recorded = serve.status(tmp_path)["exports"]
    assert recorded["2"] == {
        "parity_ok": True,
        "max_abs_diff": 0.0,
        "tolerance": 1e-5,
        "precision": "float32",
    }
    assert recorded["1"]["parity_ok"] is False and recorded["3"]["precision"] is None


def test_canary_and_promote_say_what_changed(tmp_path: Path) -> None:
    for version in (1, 2, 3):
        _export(tmp_path, version)
    assert serve.canary(tmp_path, 2) == "Version 2 is the canary; stable stays 1."
    assert serve.canary(tmp_path, 2) == "Version 2 is the canary already: nothing changed."
    with pytest.raises(serve.ServeError) as refused:
        serve.canary(tmp_path, 1)
    assert str(refused.value) == "Version 1 is the stable version already: it cannot be canary."
    assert serve.promote(tmp_path, 1) == "Version 1 is the stable version already: nothing changed."
    said = serve.promote(tmp_path)
    assert said == "Version 2 is stable; version 1 stays loaded for rollback."
    assert _labels(tmp_path) == ([1, 2], {"stable": 2})  # the canary became stable: no canary
    with pytest.raises(serve.ServeError) as refused:
        serve.promote(tmp_path)
    assert str(refused.value) == (
        "There is no canary to promote: make one with `serve canary --version N`, or name the "
        "version with --version N."
    )


def test_a_new_version_is_loaded_before_it_gets_a_label(tmp_path: Path) -> None:
    for version in (1, 2, 3):
        _export(tmp_path, version)
    serve.canary(tmp_path, 2)
    said = serve.promote(tmp_path, 3)
    assert said == (
        "Version 3 is now served without a label: TF Serving moves `stable` only onto a loaded "
        "version, so run this command again once http://127.0.0.1:8501/v1/models/"
        f"{serve.versions.MODEL_NAME}/versions/3 reports AVAILABLE."
    )
    assert _labels(tmp_path) == ([1, 2, 3], {"stable": 1, "canary": 2})
    assert serve.status(tmp_path)["loading"] == 3
    serve.promote(tmp_path, 3)
    # The canary stays a canary when another version is promoted; 1 stays loaded for rollback.
    assert _labels(tmp_path) == ([1, 2, 3], {"stable": 3, "canary": 2})
    assert serve.status(tmp_path)["loading"] is None
    said = serve.rollback(tmp_path)
    assert said == "Rolled back: version 1 is stable again; version 3 is unloaded."
    assert _labels(tmp_path) == ([1, 2], {"stable": 1, "canary": 2})


def test_a_rollback_onto_the_canary_drops_the_canary_label(tmp_path: Path) -> None:
    for version in (1, 2):
        _export(tmp_path, version)
    _promote(tmp_path, 2)
    serve.canary(tmp_path, 1)
    assert _labels(tmp_path) == ([1, 2], {"stable": 2, "canary": 1})
    serve.rollback(tmp_path)
    assert _labels(tmp_path) == ([1], {"stable": 1})
    assert serve.status(tmp_path)["canary"] is None


@pytest.mark.parametrize("version", [0, -1, True, 1.0, "2", None])
def test_a_version_that_is_not_a_whole_number_is_refused(tmp_path: Path, version) -> None:
    _export(tmp_path, 1)
    with pytest.raises(serve.ServeError) as refused:
        serve.canary(tmp_path, version)
    assert str(refused.value) == f"version={version!r} is not allowed: use a whole number >= 1."


def test_a_missing_or_unchecked_version_is_refused_naming_what_exists(tmp_path: Path) -> None:
    _export(tmp_path, 1)
    _export(tmp_path, 3)
    with pytest.raises(serve.ServeError) as refused:
        serve.canary(tmp_path, 2)
    assert str(refused.value) == (
        f"Version 2 does not exist in {tmp_path / 'export'} (exported: 1, 3): export it first "
        "with 04_export."
    )
    _export_only(tmp_path, 4)  # exported, but not recorded by step 4's hook
    with pytest.raises(serve.ServeError) as refused:
        serve.canary(tmp_path, 4)
    assert str(refused.value) == (
        "Version 4 did not pass parity in step 4 (no parity record): re-export it with "
        "04_export before serving it."
    )


def test_an_older_run_folders_export_metrics_stand_for_its_parity(tmp_path: Path) -> None:
    """A version step 4 recorded only in metrics/export.json (before versions.json kept it)."""
    _export(tmp_path, 1)
    _export_only(tmp_path, 2)
    (tmp_path / "metrics").mkdir()
    export = {"version": 2, "parity_ok": True, "max_abs_diff": 0.0}
    (tmp_path / "metrics" / "export.json").write_text(json.dumps(export), encoding="utf-8")
    assert serve.canary(tmp_path, 2) == "Version 2 is the canary; stable stays 1."
    _export_only(tmp_path, 3)
    bad = {"version": 3, "parity_ok": 1, "max_abs_diff": 0.5}  # not True: not passed
    (tmp_path / "metrics" / "export.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(
        serve.ServeError, match=r"did not pass parity in step 4 \(max_abs_diff 0.5\)"
    ):
        serve.promote(tmp_path, 3)


def test_serve_actions_need_a_recorded_export_that_passed(tmp_path: Path) -> None:
    with pytest.raises(serve.ServeError) as refused:
        serve.rollback(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / 'serving' / 'versions.json'} is missing: run 04_export on {tmp_path} "
        "first, which writes the serving configs."
    )
    _export_only(tmp_path, 1)
    serve.record_export(tmp_path, {"version": 1, "parity_ok": False})
    with pytest.raises(serve.ServeError) as refused:
        serve.status(tmp_path)
    assert str(refused.value) == (
        f"No export of {tmp_path} passed parity yet: there is nothing to serve."
    )
    _export(tmp_path, 2)
    with pytest.raises(serve.ServeError) as refused:
        serve.rollback(tmp_path)
    assert str(refused.value) == (
        f"Nothing to roll back to: version 2 is the first stable version of {tmp_path} "
        "(serving/versions.json holds no earlier one)."
    )


def test_status_reads_back_what_models_config_serves(tmp_path: Path) -> None:
    for version in (1, 2):
        _export(tmp_path, version)
    serve.canary(tmp_path, 2)
    status = serve.status(tmp_path)
    assert (status["stable"], status["canary"], status["history"]) == (1, 2, [])
    assert status["models_config"]["served"] == [1, 2]
    assert status["models_config"]["labels"] == {"stable": 1, "canary": 2}
    assert status["models_config"]["name"] == serve.versions.MODEL_NAME


def test_served_keeps_stable_canary_the_previous_stable_and_the_one_loading() -> None:
    state = {"stable": 4, "canary": 6, "history": [1, 2, 3], "loading": 5}
    assert serve.versions.served(state) == [3, 4, 5, 6]
    state = {"stable": 4, "canary": None, "history": [], "loading": None}
    assert serve.versions.served(state) == [4]
    assert serve.versions.served({"stable": 4, "canary": 4, "history": [4]}) == [4]


def test_resize_batching_says_the_reason(tmp_path: Path) -> None:
    _export(tmp_path, 1)
    curve = {"1": 1000.0, "8": 7000.0, "32": 30000.0, "64": 31000.0}
    said = serve.resize_batching(
        tmp_path, {"baselines": [{"name": "savedmodel", "throughput": curve}]}
    )
    assert said.startswith(f"Resized {tmp_path / 'serving' / 'batching.config'}: batch 32 reaches ")


# --- the configs' own checks and sizing --------------------------------------------------------


def _models(served: list[int], labels: dict[str, int]) -> str:
    return protos.to_text(config.models_config("m", served, labels))


@pytest.mark.parametrize(
    ("served", "labels", "message"),
    [
        (
            [1],
            {"canary": 1},
            "models.config labels ['canary']: it must label `stable` and may "
            "label `canary`, nothing else.",
        ),
        (
            [1],
            {"stable": 1, "beta": 1},
            "models.config labels ['beta', 'stable']: it must label "
            "`stable` and may label `canary`, nothing else.",
        ),
        ([0], {"stable": 1}, "models.config serves versions [0]: use whole numbers >= 1."),
    ],
)
def test_models_config_refusals_say_what_is_wrong(tmp_path: Path, served, labels, message) -> None:
    path = tmp_path / "models.config"
    path.write_text(_models(served, labels), encoding="utf-8")
    with pytest.raises(serve.ConfigError) as refused:
        config.read_config(path)
    assert str(refused.value) == message


def test_models_config_serves_the_tensorflow_platform_from_the_models_folder() -> None:
    text = _models([2, 1, 2], {"stable": 1})
    parsed = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    (model,) = parsed.model_config_list.config
    assert (model.name, model.base_path, model.model_platform) == ("m", "/models/m", "tensorflow")
    assert list(model.model_version_policy.specific.versions) == [1, 2]


def test_batching_and_monitoring_read_back_as_numbers(tmp_path: Path) -> None:
    sizing = config.size_batching(None, cores=3)
    path = tmp_path / "batching.config"
    config.write_config(path, config.batching_config(sizing), "header")
    assert config.read_config(path) == {
        "max_batch_size": 32,
        "batch_timeout_micros": 2000,
        "max_enqueued_batches": 3,
        "num_batch_threads": 3,
        "allowed_batch_sizes": [],
        "pad_variable_length_inputs": seam.folder() == "text",
    }
    path = tmp_path / "monitoring.config"
    config.write_config(path, config.monitoring_config(), "header")
    assert config.read_config(path) == {"path": "/monitoring/prometheus/metrics"}
    assert oct(path.stat().st_mode & 0o777) == "0o644"  # the serving container reads it
    assert path.read_text(encoding="utf-8").startswith("# header\n")


@pytest.mark.parametrize("folder, pads", [("text", True), ("image", False), ("tabular", False)])
def test_only_text_pads_its_variable_length_token_ids_when_batching(
    monkeypatch: pytest.MonkeyPatch, folder: str, pads: bool
) -> None:
    """A text batch joins requests of several lengths: TF Serving pads them only when asked
    (issue 42 §2.12); images and rows have one shape."""
    monkeypatch.setattr(config.seam, "folder", lambda: folder)
    params = config.batching_config(config.size_batching(None, cores=2))
    assert params.pad_variable_length_inputs is pads
    assert config.check_batching(params)["pad_variable_length_inputs"] is pads


def test_batching_below_one_is_refused_naming_the_fields(tmp_path: Path) -> None:
    sizing = {**config.size_batching(None, cores=1), "num_batch_threads": 0, "max_batch_size": 0}
    path = tmp_path / "batching.config"
    path.write_text(protos.to_text(config.batching_config(sizing)), encoding="utf-8")
    with pytest.raises(serve.ConfigError) as refused:
        config.read_config(path)
    assert str(refused.value) == "batching.config sets max_batch_size, num_batch_threads below 1."


@pytest.mark.parametrize("enable, where", [(False, "/metrics"), (True, "metrics")])
def test_monitoring_must_be_on_with_an_absolute_path(tmp_path: Path, enable, where) -> None:
    message = config.monitoring_config()
    message.prometheus_config.enable = enable
    message.prometheus_config.path = where
    path = tmp_path / "monitoring.config"
    path.write_text(protos.to_text(message), encoding="utf-8")
    with pytest.raises(serve.ConfigError) as refused:
        config.read_config(path)
    assert str(refused.value) == "monitoring.config must enable prometheus_config with a path."


def test_write_config_makes_the_folder_and_leaves_only_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "monitoring.config"
    config.write_config(path, config.monitoring_config(), "line one\n  line two  ")
    assert [p.name for p in path.parent.iterdir()] == ["monitoring.config"]
    assert path.read_text(encoding="utf-8").startswith("# line one\n#   line two\n")


def test_provisional_and_measured_sizing_say_their_source() -> None:
    provisional = config.size_batching(None, cores=1)
    assert (provisional["source"], provisional["reason"]) == (
        "provisional",
        "05_optimize has not measured the SavedModel yet: provisional sizes.",
    )
    assert provisional["num_batch_threads"] == 1
    # The knee itself: 90 of 100 images/s is within 90 % of the best; zero rates are left out.
    curve = {"1": 0.0, "4": 90.0, "8": 100.0}
    sized = config.size_batching({"baselines": [{"name": "savedmodel", "throughput": curve}]}, 2)
    assert (sized["max_batch_size"], sized["allowed_batch_sizes"]) == (4, [4])
    assert sized["source"] == "metrics/optimize.json"
    assert sized["batch_timeout_micros"] == 20_000  # 4 / 90 s, clamped to the upper bound
    curve = {"2": 0.5, "16": 1_000_000.0}
    sized = config.size_batching({"baselines": [{"name": "savedmodel", "throughput": curve}]}, 2)
    assert sized["batch_timeout_micros"] == 100  # 16 µs, raised to the lower bound
    # What TF Serving runs is serving_default: with preprocessing inside (text), its own curve.
    raw = {"name": "savedmodel_raw", "throughput": {"4": 100.0, "8": 100.0}}
    sized = config.size_batching({"baselines": [raw, {"name": "savedmodel", "throughput": curve}]})
    assert sized["max_batch_size"] == 4
    curve = {"1": 1000.0}
    sized = config.size_batching({"baselines": [{"name": "savedmodel", "throughput": curve}]}, 2)
    assert sized["batch_timeout_micros"] == 1000  # exactly 1 / 1000 s


def test_a_new_state_is_sized_from_step_5s_metrics(tmp_path: Path) -> None:
    (tmp_path / "metrics").mkdir()
    curve = {"1": 1000.0, "8": 7000.0, "32": 30000.0}
    optimize = {"baselines": [{"name": "savedmodel", "throughput": curve}]}
    (tmp_path / "metrics" / "optimize.json").write_text(json.dumps(optimize), encoding="utf-8")
    _export(tmp_path, 1)
    assert serve.status(tmp_path)["batching"]["source"] == "metrics/optimize.json"
    assert serve.status(tmp_path)["loading"] is None


def test_a_canary_of_an_unloaded_version_names_the_canary_label(tmp_path: Path) -> None:
    for version in (1, 2, 3):
        _export(tmp_path, version)
    serve.canary(tmp_path, 2)
    assert "TF Serving moves `canary` only onto a loaded version" in serve.canary(tmp_path, 3)
    serve.canary(tmp_path, 3)
    assert serve.status(tmp_path)["loading"] is None  # the label moved: nothing is loading


def test_no_export_at_all_is_said_none(tmp_path: Path) -> None:
    _export(tmp_path, 1)
    state = serve.status(tmp_path)
    (tmp_path / "serving" / "versions.json").write_text(
        json.dumps({**{k: v for k, v in state.items() if k != "models_config"}, "exports": {}}),
        encoding="utf-8",
    )
    with pytest.raises(serve.ServeError, match=r"\(exported: none\)"):
        serve.canary(tmp_path, 2)


def test_export_metrics_of_another_version_are_no_parity_record(tmp_path: Path) -> None:
    _export(tmp_path, 1)
    _export_only(tmp_path, 2)
    (tmp_path / "metrics").mkdir()
    other = {"version": 5, "parity_ok": True}
    (tmp_path / "metrics" / "export.json").write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(serve.ServeError, match="no parity record"):
        serve.canary(tmp_path, 2)


def _state(run_dir: Path, **state) -> Path:
    path = run_dir / "serving" / "versions.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {**serve.state.new_state(run_dir), "stable": 1}  # a whole record, as 04 starts one
    path.write_text(json.dumps({**base, **state}), encoding="utf-8")
    return path


def test_role_names_what_versions_json_records_a_version_as(tmp_path: Path) -> None:
    path = _state(tmp_path, stable=3, canary=4, history=[1, 2], loading=5)
    said = {version: serve.versions.role(tmp_path, version) for version in range(1, 7)}
    assert said == {
        1: f"an earlier stable version kept for rollback in {path}",
        2: f"an earlier stable version kept for rollback in {path}",
        3: f"the stable version in {path}",
        4: f"the canary version in {path}",
        5: f"the version TF Serving is loading in {path}",
        6: None,
    }


def test_role_of_a_folder_never_served_is_none_and_makes_no_folder(tmp_path: Path) -> None:
    assert serve.versions.role(tmp_path / "elsewhere", 1) is None
    assert not (tmp_path / "elsewhere").exists()


def test_role_of_an_unreadable_versions_json_says_so(tmp_path: Path) -> None:
    path = _state(tmp_path)
    path.write_text('{"stable": 1}', encoding="utf-8")  # no history
    with pytest.raises(serve.ServeError) as error:
        serve.versions.role(tmp_path, 2)
    assert str(error.value) == (  # load_state's own check (serve/state.py), word for word
        f"{path} cannot be used (no model_name, exports, canary, history, batching): restore it, "
        "or delete it and run 04_export again, which starts a new record with the version it "
        "exports."
    )


def test_a_models_config_that_does_not_parse_is_named(tmp_path: Path) -> None:
    path = tmp_path / "models.config"
    path.write_text("model_config_list { nonsense: 1 }", encoding="utf-8")
    with pytest.raises(protos.ConfigError, match=r"^models\.config does not parse as "):
        config.read_config(path)


def _curve(rates: dict[str, float]) -> dict:
    return {"baselines": [{"name": "savedmodel", "throughput": rates}]}


def test_batching_threads_are_the_machines_cores(monkeypatch) -> None:
    monkeypatch.setattr(config.os, "cpu_count", lambda: 8)
    assert config.size_batching(None)["num_batch_threads"] == 8
    monkeypatch.setattr(config.os, "cpu_count", lambda: None)  # cannot be told: one
    assert config.size_batching(None)["num_batch_threads"] == 1


def test_the_batch_timeout_is_the_batchs_time_in_whole_microseconds() -> None:
    """1 / 99.99502 s is 10000.498 µs: 10000, not a microsecond more."""
    assert config.size_batching(_curve({"1": 99.99502}), 1)["batch_timeout_micros"] == 10_000


def test_a_model_slower_than_one_image_a_second_is_measured_not_provisional() -> None:
    sized = config.size_batching(_curve({"1": 0.5, "2": 0.9}), 1)
    assert (sized["source"], sized["max_batch_size"], sized["allowed_batch_sizes"]) == (
        "metrics/optimize.json",
        2,
        [1, 2],
    )


def _models_config(text: str):
    return text_format.Parse(text, model_server_config_pb2.ModelServerConfig())


def test_models_config_refusals_word_for_word() -> None:
    two = _models_config("model_config_list { config { name: 'a' } config { name: 'b' } }")
    with pytest.raises(protos.ConfigError) as error:
        config.check_models_config(two)
    assert str(error.value) == "models.config names 2 models: it must name exactly one."
    latest = _models_config(
        "model_config_list { config { name: 'a' model_version_policy { latest { } } } }"
    )
    with pytest.raises(protos.ConfigError) as error:
        config.check_models_config(latest)
    assert str(error.value) == (
        "models.config's version policy is not `specific`: labels need the versions named."
    )


def test_the_header_is_comment_lines_without_trailing_spaces(tmp_path: Path) -> None:
    path = config.write_config(
        tmp_path / "monitoring.config", config.monitoring_config(), "first \n\nthird"
    )
    assert path.read_text(encoding="utf-8").startswith("# first\n#\n# third\n")


def test_a_config_is_written_as_a_hidden_temporary_beside_it(tmp_path: Path, monkeypatch) -> None:
    """A temporary left by a crash stays hidden beside the config, where the next write (and
    nothing that lists configs) finds it; never in /tmp, whence a rename may cross disks."""
    renamed = []
    replace = config.os.replace
    monkeypatch.setattr(
        config.os,
        "replace",
        lambda source, target: renamed.append(source) or replace(source, target),
    )
    config.write_config(tmp_path / "monitoring.config", config.monitoring_config(), "header")
    (source,) = renamed
    assert Path(source).parent == tmp_path
    assert Path(source).name.startswith(".monitoring.config.")


def _whole(tmp_path: Path, **change) -> dict:
    return {**serve.state.new_state(tmp_path), "stable": 1, **change}


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        ({"model_name": ""}, "model_name '' is not a name"),
        ({"model_name": 7}, "model_name 7 is not a name"),
        ({"stable": 0}, "stable 0 is not a version number"),
        ({"canary": True}, "canary True is not a version number"),
        ({"loading": "2"}, "loading '2' is not a version number"),
        ({"history": [1, 0]}, "history [1, 0] is not a list of version numbers"),
        ({"history": "1"}, "history '1' is not a list of version numbers"),
        ({"exports": {"v1": {}}}, "exports is not an object of version: parity record"),
        ({"exports": {"1": 5}}, "exports is not an object of version: parity record"),
        ({"exports": []}, "exports is not an object of version: parity record"),
        ({"batching": {}}, "its batching entry cannot be used (KeyError: 'max_batch_size')"),
        ({"batching": None}, "its batching entry cannot be used"),
        ({"stable": None, "canary": None, "loading": None, "history": []}, None),
        ({"stable": 2, "canary": 3, "loading": 4, "history": [1]}, None),
    ],
)
def test_state_fault_names_the_first_unusable_value_word_for_word(tmp_path, change, fault) -> None:
    said = serve.state.state_fault(_whole(tmp_path, **change))
    if fault is None or fault.endswith(")"):
        assert said == fault
    else:
        assert said is not None and said.startswith(fault)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([], "it holds a list, not an object"),
        ("x", "it holds a string, not an object"),
        (None, "it holds null, not an object"),
        (3, "it holds a number, not an object"),
    ],
)
def test_state_fault_of_a_value_that_is_no_object(value, said) -> None:
    assert serve.state.state_fault(value) == f"{said} of versions and labels"


def test_state_fault_lists_every_missing_key_in_order(tmp_path) -> None:
    assert (
        serve.state.state_fault({"stable": 1})
        == "no model_name, exports, canary, history, batching"
    )


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.EROFS, "make it writable (e.g. mount it read-write)"),
        (errno.EACCES, "make it writable (e.g. mount it read-write)"),
        (errno.EPERM, "make it writable (e.g. mount it read-write)"),
        (errno.ENOSPC, "free space on its disk"),
        (errno.EFBIG, "free space on its disk"),
        (errno.EDQUOT, "free space on its disk"),
        (errno.EIO, "remove the cause"),
    ],
)
def test_an_unwritable_serving_folder_says_what_to_do_for_its_cause(tmp_path, code, fix) -> None:
    error = serve.state._unwritable(tmp_path, OSError(code, os.strerror(code)))
    assert str(error) == (
        f"{tmp_path / 'serving'} cannot be written ({os.strerror(code)}), so nothing was changed: "
        f"{fix} and run the command again."
    )
    nameless = serve.state._unwritable(tmp_path, PermissionError())
    assert "(PermissionError)" in str(nameless)


def test_put_back_restores_changed_files_and_removes_new_ones(tmp_path, monkeypatch) -> None:
    """A new file first (removed, and the loop goes on), then a changed one, put back through a
    hidden temporary beside it (same folder: a rename, never a copy across disks)."""
    new, changed, same = tmp_path / "b.config", tmp_path / "a.config", tmp_path / "c.config"
    changed.write_bytes(b"after")
    new.write_bytes(b"new")
    same.write_bytes(b"same")
    made = []
    real = serve.state.tempfile.mkstemp

    def spy(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(serve.state.tempfile, "mkstemp", spy)
    serve.state._put_back({new: None, changed: b"before", same: b"same"})
    assert changed.read_bytes() == b"before"
    assert not new.exists()
    assert same.read_bytes() == b"same"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.config", "c.config"]  # no temporary
    assert made == [{"prefix": ".a.config.", "dir": tmp_path}]


def test_put_back_is_best_effort_and_never_raises(tmp_path) -> None:
    gone = tmp_path / "gone" / "models.config"  # its folder is missing: nothing can be put back
    serve.state._put_back({gone: b"before"})
    assert not gone.exists()


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_empty_versions_json_is_said_empty(tmp_path, text) -> None:
    path = tmp_path / "serving" / "versions.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(serve.ServeError) as error:
        serve.state.load_state(tmp_path)
    assert str(error.value) == (
        f"{path} cannot be used (it is empty): restore it, or delete it and run 04_export "
        "again, which starts a new record with the version it exports."
    )


def test_null_in_versions_json_is_no_object_not_empty(tmp_path) -> None:
    path = _state(tmp_path)
    path.write_text("null", encoding="utf-8")
    with pytest.raises(serve.ServeError, match=r"\(it holds null, not an object of versions"):
        serve.state.load_state(tmp_path)


def test_a_versions_json_that_is_a_folder_names_the_os_reason(tmp_path) -> None:
    (tmp_path / "serving" / "versions.json").mkdir(parents=True)
    with pytest.raises(serve.ServeError, match=r"versions.json cannot be used \(Is a directory\)"):
        serve.state.load_state(tmp_path)


def test_a_state_without_loading_reads_as_loading_none(tmp_path) -> None:
    path = _state(tmp_path)
    state = json.loads(path.read_text(encoding="utf-8"))
    del state["loading"]
    path.write_text(json.dumps(state), encoding="utf-8")
    assert serve.state.load_state(tmp_path) == {**state, "loading": None}


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ValueError("a bad value."), "ValueError: a bad value"),
        (ValueError(".hidden."), "ValueError: .hidden"),
        (ValueError("first line\nsecond line"), "ValueError: first line"),
        (ValueError(""), "ValueError"),
        (KeyError("x" * 130), "KeyError: '" + "x" * 119),
        (OSError(5, "Input/output error"), "Input/output error"),
    ],
)
def test_reason_is_the_first_line_of_an_error_in_a_few_words(error, said) -> None:
    assert serve.state._reason(error) == said


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (FileNotFoundError(2, "No such file or directory"), "No such file or directory"),
        (PermissionError(), "PermissionError"),
        (protos.ConfigError(".models.config does not parse."), ".models.config does not parse"),
    ],
)
def test_models_config_that_cannot_be_used_is_named_with_its_reason(
    tmp_path, monkeypatch, raised, reason
) -> None:
    def fail(path):
        raise raised

    monkeypatch.setattr(serve.versions.config, "read_config", fail)
    with pytest.raises(serve.ServeError) as error:
        serve.versions.models_config(tmp_path)
    path = tmp_path / "serving" / "models.config"
    assert str(error.value) == (
        f"{path} cannot be used ({reason}): write it again from serving/versions.json with "
        f"`{serve.state.MODEL_NAME} serve rewrite --run-dir {tmp_path}`."
    )


def test_a_new_state_serves_nothing_and_loads_nothing(tmp_path) -> None:
    state = serve.state.new_state(tmp_path)
    assert {k: state[k] for k in ("exports", "stable", "canary", "history", "loading")} == {
        "exports": {},
        "stable": None,
        "canary": None,
        "history": [],
        "loading": None,
    }


def test_a_batching_entry_without_its_reason_cannot_be_used(tmp_path) -> None:
    state = _whole(tmp_path)
    del state["batching"]["reason"]
    assert (
        serve.state.state_fault(state) == "its batching entry cannot be used (KeyError: 'reason')"
    )


def test_the_write_probe_is_a_hidden_file_in_serving(tmp_path, monkeypatch) -> None:
    (tmp_path / "serving").mkdir()
    made = []
    real = serve.state.tempfile.mkstemp

    def spy(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(serve.state.tempfile, "mkstemp", spy)
    serve.state._probe(tmp_path)
    assert made == [{"prefix": ".write-probe-", "dir": tmp_path / "serving"}]
    assert list((tmp_path / "serving").iterdir()) == []


def test_a_save_that_fails_for_another_reason_puts_back_and_lets_the_error_through(
    tmp_path, monkeypatch
) -> None:
    """Not a disk problem (a bug, Ctrl-C): the files written so far are put back and the error
    itself goes on, not one about the put-back."""
    state = _whole(tmp_path)
    serve.state.save(tmp_path, state)
    before = {p.name: p.read_bytes() for p in (tmp_path / "serving").iterdir()}

    def boom(path, data):
        raise RuntimeError("boom")

    monkeypatch.setattr(serve.state, "write_json", boom)
    with pytest.raises(RuntimeError, match="^boom$"):
        serve.state.save(tmp_path, {**state, "stable": 2, "exports": {"2": {}}})
    assert {p.name: p.read_bytes() for p in (tmp_path / "serving").iterdir()} == before
