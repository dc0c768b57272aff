"""Lineage fingerprints follow every byte a later step relies on, for each kind of artifact.

A fingerprint that misses a change lets a step build on an artifact another step has replaced:
an export benchmarked as this model when it is the previous one. Each case changes one file that is
not the first one read (the last file of a SavedModel folder, the end of a large model.keras, the
second shard of the data) and expects the fingerprint, and with it the lineage check, to notice.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }} import artifacts, lineage, writes
from {{ cookiecutter.package_name }}.artifacts import StaleInputError


def _export(run_dir: Path, version: int = 1) -> Path:
    """export/<version>/ as a SavedModel folder: a graph, variables and an asset."""
    folder = run_dir / "export" / str(version)
    (folder / "variables").mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "saved_model.pb").write_bytes(b"graph")
    (folder / "variables" / "variables.index").write_bytes(b"index")
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"weights" * 10)
    (folder / "assets" / "vocabulary.txt").write_text("a\nb\n", encoding="utf-8")
    (folder / "zz_last_in_order.txt").write_text("last", encoding="utf-8")
    return folder


def _data(run_dir: Path, sizes: tuple[int, ...] = (10, 20, 30)) -> None:
    """data/ with meta.json naming three train shards and one validation shard."""
    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    names = [f"train-{i:05d}-of-{len(sizes):05d}.tfrecord" for i in range(len(sizes))]
    for name, size in zip(names, sizes, strict=True):
        (run_dir / "data" / name).write_bytes(b"x" * size)
    (run_dir / "data" / "validation-00000-of-00001.tfrecord").write_bytes(b"v" * 5)
    meta = {
        "splits": {
            "train": {"shards": names},
            "validation": {"shards": ["validation-00000-of-00001.tfrecord"]},
        }
    }
    writes.write_json(run_dir / artifacts.META_FILE, meta)


@pytest.mark.parametrize(
    "changed",
    [
        "saved_model.pb",
        "variables/variables.data-00000-of-00001",
        "assets/vocabulary.txt",
        "zz_last_in_order.txt",
    ],
)
def test_changing_any_file_of_an_export_changes_its_fingerprint(
    tmp_path: Path, changed: str
) -> None:
    folder = _export(tmp_path)
    before = lineage.fingerprint(tmp_path, "export/1")
    assert before is not None
    path = folder / changed
    path.write_bytes(path.read_bytes() + b"!")
    assert lineage.fingerprint(tmp_path, "export/1") != before, changed


def test_a_file_added_to_or_renamed_in_an_export_changes_its_fingerprint(tmp_path: Path) -> None:
    folder = _export(tmp_path)
    before = lineage.fingerprint(tmp_path, "export/1")
    (folder / "assets" / "extra.txt").write_text("", encoding="utf-8")
    added = lineage.fingerprint(tmp_path, "export/1")
    assert added != before
    (folder / "assets" / "extra.txt").rename(folder / "assets" / "other.txt")
    assert lineage.fingerprint(tmp_path, "export/1") not in (before, added)


def test_changing_the_end_of_a_large_model_changes_its_fingerprint(tmp_path: Path) -> None:
    """model.keras is read in chunks: a change past the first chunk (the weights) still counts."""
    model = tmp_path / artifacts.MODEL_FILE
    size = 3 * (1 << 20) + 17  # more than three chunks of 1 MiB
    model.write_bytes(b"\0" * size)
    before = lineage.fingerprint(tmp_path, "model")
    raw = bytearray(model.read_bytes())
    raw[-1] = 1
    model.write_bytes(bytes(raw))
    assert lineage.fingerprint(tmp_path, "model") != before
    raw[-1], raw[(1 << 20) + 5] = 0, 1  # the second chunk
    model.write_bytes(bytes(raw))
    assert lineage.fingerprint(tmp_path, "model") not in (before, None)


@pytest.mark.parametrize("shard", [1, 2])
def test_replacing_a_later_shard_changes_the_data_fingerprint(tmp_path: Path, shard: int) -> None:
    _data(tmp_path)
    before = lineage.fingerprint(tmp_path, "data")
    name = f"train-{shard:05d}-of-00003.tfrecord"
    (tmp_path / "data" / name).write_bytes(b"y" * 7)
    assert lineage.fingerprint(tmp_path, "data") != before


def test_replacing_the_validation_shard_changes_the_data_fingerprint(tmp_path: Path) -> None:
    _data(tmp_path)
    before = lineage.fingerprint(tmp_path, "data")
    (tmp_path / "data" / "validation-00000-of-00001.tfrecord").write_bytes(b"w" * 9)
    assert lineage.fingerprint(tmp_path, "data") != before


def test_an_artifact_made_from_an_export_is_stale_once_its_last_file_changed(
    tmp_path: Path,
) -> None:
    """What the fingerprint is for: the lineage check refuses what was built on an older export
    (the record stands for an artifact that step 5 would make from export/1)."""
    folder = _export(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    lineage.record(
        tmp_path, "model", "05_optimize", {"export/1": lineage.fingerprint(tmp_path, "export/1")}
    )
    lineage.check_made_from(tmp_path, "model", needed_by="serving")  # current: no refusal
    (folder / "zz_last_in_order.txt").write_text("replaced", encoding="utf-8")
    assert lineage.stale_inputs(tmp_path, "model") == ["export/1"]
    with pytest.raises(StaleInputError, match="export/1 that was replaced by 04_export"):
        lineage.check_made_from(tmp_path, "model", needed_by="serving")


def test_an_unknown_artifact_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    for name in ("weights", "export", "export/"):
        with pytest.raises(ValueError, match=r"use data, (\w+, )*model or export/<version>"):
            lineage.fingerprint(tmp_path, name)


def test_missing_artifacts_have_no_fingerprint(tmp_path: Path) -> None:
    for name in ("data", "model", "export/1"):
        assert lineage.fingerprint(tmp_path, name) is None
    (tmp_path / "data").mkdir()
    (tmp_path / artifacts.META_FILE).write_text("{not json", encoding="utf-8")
    assert lineage.fingerprint(tmp_path, "data") is None


def test_a_missing_shard_is_not_a_shard_of_any_size(tmp_path: Path) -> None:
    """A shard meta.json names but the folder lacks counts as missing, not as empty."""
    _data(tmp_path, sizes=(0, 1))
    whole = lineage.fingerprint(tmp_path, "data")
    (tmp_path / "data" / "train-00000-of-00002.tfrecord").unlink()
    assert lineage.fingerprint(tmp_path, "data") not in (whole, None)
    _data(tmp_path, sizes=(0, 1))
    (tmp_path / "data" / "train-00001-of-00002.tfrecord").unlink()  # the 1-byte one
    assert lineage.fingerprint(tmp_path, "data") not in (whole, None)


def test_the_data_fingerprint_reads_meta_json_of_any_shape(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    seen = set()
    for text in ("[]", "{}", '{"splits": null}', '{"splits": {"train": null}}'):
        (tmp_path / artifacts.META_FILE).write_text(text, encoding="utf-8")
        seen.add(lineage.fingerprint(tmp_path, "data"))
    assert None not in seen and len(seen) == 4  # meta.json's own bytes count


def test_a_record_holds_the_fingerprint_the_step_and_its_inputs(tmp_path: Path) -> None:
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    entry = lineage.record(tmp_path, "model", "03_train", {"data": "abc"})
    assert entry["fingerprint"] == lineage.fingerprint(tmp_path, "model")
    assert (entry["step"], entry["inputs"]) == ("03_train", {"data": "abc"})
    assert entry["recorded"][:4].isdigit() and "T" in entry["recorded"]
    _export(tmp_path)
    lineage.record(tmp_path, "export/1", "04_export", {"model": entry["fingerprint"]})
    ledger = lineage.read(tmp_path)
    assert set(ledger) == {"model", "export/1"} and ledger["model"] == entry
    assert lineage.made_from(tmp_path, "export/1") == {"model": entry["fingerprint"]}


@pytest.mark.parametrize("text", ["", "[1, 2]", '"model"', "{broken"])
def test_an_unreadable_ledger_reads_as_unknown_lineage_not_as_empty(
    tmp_path: Path, text: str
) -> None:
    """An empty ledger would let an export accept a model of unknown origin: unknown is refused."""
    (tmp_path / artifacts.LINEAGE_FILE).write_text(text, encoding="utf-8")
    assert lineage.read(tmp_path) == {}  # no artifact in the folder: nothing to be unknown
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    entry = lineage.read(tmp_path)["model"]
    assert entry["fingerprint"] == lineage.fingerprint(tmp_path, "model")
    assert entry["inputs"] is None and "lineage.json" in entry["unknown"]
    with pytest.raises(StaleInputError) as refused:
        lineage.check_made_from(tmp_path, "model", needed_by="04_export")
    assert str(refused.value).startswith(f"model in {tmp_path} has unknown lineage (lineage.json ")
    assert str(refused.value).endswith(": re-run 03_train before 04_export.")
    with pytest.raises(StaleInputError, match="unknown lineage"):
        lineage.stale_inputs(tmp_path, "model")  # how 05_optimize asks about an export
    assert lineage.describe(tmp_path, "model").startswith("model: lineage unknown (lineage.json ")


def test_a_missing_ledger_beside_artifacts_is_unknown_not_empty(tmp_path: Path) -> None:
    _data(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    _export(tmp_path, version=2)
    assert set(lineage.read(tmp_path)) == {"model", "export/2"}  # data is made from nothing
    why = "lineage.json is missing beside model, export/2"
    assert lineage.unknown(tmp_path, "model") == why
    assert lineage.unknown(tmp_path, "data") is None
    with pytest.raises(StaleInputError, match="re-run 04_export before 05_optimize"):
        lineage.check_made_from(tmp_path, "export/2", needed_by="05_optimize")


def test_the_first_record_in_a_new_run_folder_is_known_and_silent(tmp_path: Path, capsys) -> None:
    _data(tmp_path)  # 01_data writes data/, then records it: no ledger yet, and none is lost
    lineage.record(tmp_path, "data", "data", {})
    assert lineage.unknown(tmp_path, "data") is None
    assert "unknown" not in lineage.read(tmp_path)["data"]
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("loss", ["corrupt", "missing"])
def test_a_model_trained_on_replaced_data_is_refused_after_the_ledger_was_lost(
    tmp_path: Path, capsys, loss: str
) -> None:
    """The probe: lineage.json lost, 01_data re-run with other data, then 04_export accepted the
    model trained on the old data. Recording into a lost ledger now marks the rest unknown."""
    _data(tmp_path, sizes=(10, 20, 30))
    lineage.record(tmp_path, "data", "data", {})
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    lineage.record(tmp_path, "model", "train", {"data": lineage.fingerprint(tmp_path, "data")})
    ledger = tmp_path / artifacts.LINEAGE_FILE
    if loss == "corrupt":
        ledger.write_text('{"model": {"fingerp', encoding="utf-8")  # cut short by a full disk
    else:
        ledger.unlink()
    _data(tmp_path, sizes=(11, 21, 31))  # 01_data again, another seed
    lineage.record(tmp_path, "data", "data", {})
    with pytest.raises(StaleInputError, match="re-run 03_train before 04_export"):
        lineage.check_made_from(tmp_path, "model", needed_by="04_export")
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and "model in" in said[0] and "unknown lineage" in said[0], said
    if loss == "corrupt":
        kept = tmp_path / f"{artifacts.LINEAGE_FILE}.corrupt-1"
        assert kept.read_text(encoding="utf-8") == '{"model": {"fingerp'
        assert kept.name in said[0]
    assert "unknown" not in lineage.read(tmp_path)["data"]  # what was just recorded is known
    lineage.record(tmp_path, "model", "train", {"data": lineage.fingerprint(tmp_path, "data")})
    lineage.check_made_from(tmp_path, "model", needed_by="04_export")  # 03 re-run: accepted


@pytest.mark.parametrize("entry", ["a string", {"fingerprint": None}, {"inputs": "data"}])
def test_a_malformed_entry_says_nothing(tmp_path: Path, entry) -> None:
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    if isinstance(entry, dict):
        entry = {"fingerprint": lineage.fingerprint(tmp_path, "model"), **entry}
    writes.write_json(tmp_path / artifacts.LINEAGE_FILE, {"model": entry})
    assert lineage.made_from(tmp_path, "model") is None
    assert lineage.stale_inputs(tmp_path, "model") == []


def test_an_input_that_is_gone_is_said_gone(tmp_path: Path) -> None:
    _data(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    lineage.record(tmp_path, "model", "03_train", {"data": lineage.fingerprint(tmp_path, "data")})
    (tmp_path / artifacts.META_FILE).unlink()
    with pytest.raises(StaleInputError) as refused:
        lineage.check_made_from(tmp_path, "model", needed_by="04_export")
    assert str(refused.value) == (
        f"model in {tmp_path} was made from a data that is gone since: re-run 03_train before "
        "04_export."
    )


def test_inputs_and_artifacts_of_no_known_step_are_named_generically(tmp_path: Path) -> None:
    _export(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    ledger = {
        "export/1": {
            "fingerprint": lineage.fingerprint(tmp_path, "export/1"),
            "step": "04_export",
            "inputs": {"model": "an older model"},
        }
    }
    writes.write_json(tmp_path / artifacts.LINEAGE_FILE, ledger)
    with pytest.raises(StaleInputError) as refused:
        lineage.check_made_from(tmp_path, "export/1", needed_by="05_optimize")
    assert str(refused.value) == (
        f"export/1 in {tmp_path} was made from a model that was replaced by 03_train since: "
        "re-run 04_export before 05_optimize."
    )


def test_describe_says_what_an_artifact_was_made_from_and_whether_it_is_current(
    tmp_path: Path,
) -> None:
    _data(tmp_path)
    data = lineage.fingerprint(tmp_path, "data")
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    lineage.record(tmp_path, "model", "03_train", {"data": data, "export/1": None})
    assert lineage.describe(tmp_path, "model") == (
        f"model: made from data {data[:12]}, export/1 None; current."
    )
    (tmp_path / "data" / "validation-00000-of-00001.tfrecord").write_bytes(b"another")
    assert lineage.describe(tmp_path, "model") == (
        f"model: made from data {data[:12]}, export/1 None; stale: data changed since."
    )
    lineage.record(tmp_path, "model", "03_train", {})
    assert lineage.describe(tmp_path, "model") == "model: made from nothing; current."
    assert lineage.describe(tmp_path, "export/1") == (
        "export/1: no lineage record, so what it was made from cannot be checked."
    )


def test_a_steps_summary_lists_what_it_read_and_wrote(tmp_path: Path) -> None:
    _data(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    assert lineage.summary(tmp_path, ["data", "export/1"], ["model"]) == {
        "reads": {"data": lineage.fingerprint(tmp_path, "data"), "export/1": None},
        "writes": {"model": lineage.fingerprint(tmp_path, "model")},
    }


def test_asking_about_lineage_never_makes_the_run_folder(tmp_path: Path) -> None:
    missing = tmp_path / "not-a-run"
    assert lineage.fingerprint(missing, "model") is None
    assert lineage.read(missing) == {}
    assert lineage.made_from(missing, "model") is None
    assert not missing.exists()


def test_describe_names_every_changed_input(tmp_path: Path) -> None:
    _data(tmp_path)
    model = tmp_path / artifacts.MODEL_FILE
    model.write_bytes(b"model")
    (tmp_path / "export" / "1").mkdir(parents=True)
    (tmp_path / "export" / "1" / "saved_model.pb").write_bytes(b"graph")
    inputs = {name: lineage.fingerprint(tmp_path, name) for name in ("data", "model")}
    lineage.record(tmp_path, "export/1", "04_export", inputs)
    model.write_bytes(b"another model")
    (tmp_path / "data" / "validation-00000-of-00001.tfrecord").write_bytes(b"another")
    assert lineage.describe(tmp_path, "export/1").endswith("; stale: data, model changed since.")


def test_a_rebuilt_ledger_says_word_for_word_what_it_marked_unknown(tmp_path: Path, capsys) -> None:
    """Recording into an unreadable ledger: the file is set aside under the next free number,
    every other artifact (not data) is marked unknown with why, and one line names them, the
    steps that make them and the kept file; with nothing else built, a new ledger is started."""
    _data(tmp_path)
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    _export(tmp_path, 2)
    ledger = tmp_path / artifacts.LINEAGE_FILE
    ledger.write_text("{cut", encoding="utf-8")
    (tmp_path / f"{artifacts.LINEAGE_FILE}.corrupt-1").write_text("older", encoding="utf-8")
    lineage.record(tmp_path, "data", "data", {})
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (
        f"lineage.json is not valid JSON: model, export/2 in {tmp_path} now have unknown "
        "lineage, and the steps that build on them refuse until 03_train, 04_export re-run; "
        "the unreadable file is kept as lineage.json.corrupt-2."
    )
    assert (tmp_path / f"{artifacts.LINEAGE_FILE}.corrupt-2").read_text(encoding="utf-8") == "{cut"
    saved = lineage.read(tmp_path)
    assert sorted(saved) == ["data", "export/2", "model"]
    for name in ("export/2", "model"):
        entry = saved[name]
        assert (entry["fingerprint"], entry["step"], entry["inputs"]) == (
            lineage.fingerprint(tmp_path, name),
            None,
            None,
        )
        assert re.fullmatch(
            r"lineage.json is not valid JSON, found when the data step recorded data at "
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d",
            entry["unknown"],
        ), entry["unknown"]
    ledger.write_text("[]", encoding="utf-8")  # one other artifact: singular words
    (tmp_path / artifacts.MODEL_FILE).unlink()
    lineage.record(tmp_path, "data", "data", {})
    (line,) = capsys.readouterr().out.splitlines()
    assert (
        f"export/2 in {tmp_path} now has unknown lineage, and the steps that build on it " in line
    )
    assert line.endswith(
        "refuse until 04_export re-runs; the unreadable file is kept as lineage.json.corrupt-3."
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / artifacts.MODEL_FILE).write_bytes(b"model")
    (empty / artifacts.LINEAGE_FILE).write_text("{cut", encoding="utf-8")
    lineage.record(empty, "model", "train", {})
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (
        f"lineage.json is not valid JSON: a new one is started in {empty}; the unreadable file "
        "is kept as lineage.json.corrupt-1."
    )


def test_a_ledger_that_cannot_be_set_aside_is_replaced_and_said_so(tmp_path, capsys, monkeypatch):
    """The unreadable file cannot be moved aside (a rename refused): the new ledger replaces it
    all the same, and the line does not claim a kept copy."""
    (tmp_path / artifacts.MODEL_FILE).write_bytes(b"model")
    (tmp_path / artifacts.LINEAGE_FILE).write_text("{cut", encoding="utf-8")

    def refused(path):  # lineage's set_aside, whose rename is refused (write_json's is not)
        raise PermissionError(f"rename of {path} refused")

    monkeypatch.setattr(lineage, "set_aside", refused)
    lineage.record(tmp_path, "model", "train", {})
    (line,) = capsys.readouterr().out.splitlines()
    assert line == f"lineage.json is not valid JSON: a new one is started in {tmp_path}."
