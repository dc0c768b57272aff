"""`make mutate`: mutation testing of the modules whose bugs would lie to a user.

mutmut (3.8+) changes one thing at a time in a module (`>=` to `>`, a `+` to a `-`, a string to
another) and runs the tests that reach the changed function; a change no test notices "survives",
and is a missing test, or an equivalent change that cannot be told apart from the original.

Each group of modules runs on its own, in a copy of the project under build/mutate/<group>/, with
the narrowest tests that guard it, one mutant at a time and niced (mutation runs are CPU-heavy):
    python tests/mutate.py [GROUP ...] [--jobs N]      (no GROUP: all of them, in order)
It writes build/mutate/report.md: per group the kill rate and every survivor with its diff.
Survivors judged equivalent are listed, with why, in tests/mutation_survivors.md; the report
counts them apart, and names listed ones that no longer survive (the list is then out of date).
Not part of `make test`: a full run takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

PACKAGE = "{{ cookiecutter.package_name }}"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "mutate"
EXPLAINED = ROOT / "tests" / "mutation_survivors.md"
COPIED = ("src", "tests", "notebooks", "configs", {% if cookiecutter.include_docker %}"docker", {% endif %}"pyproject.toml")
{%- if cookiecutter.task == "image_classification" %}
# test_train_recipe.py's check of OneOpRandAugment against Keras's RandAugment (the recipe group)
RAND_AUGMENT = "test_rand_augment_computes_only_the_ops_it_picked_and_the_same_images"
{%- endif %}
{%- if cookiecutter.task == "tabular_classification" %}
# test_tabular_mutants.py's tests that run no TensorFlow (the tables group)
TABLE_TESTS = [
    "test_cells_are_stripped_so_padded_values_are_one_category_and_one_class",
    "test_a_column_of_words_with_one_number_is_categorical_not_numeric",
    "test_the_decision_threshold_is_chosen_on_validation_not_test",
    "test_the_best_threshold_is_the_one_of_highest_f1",
    "test_binary_scores_without_validation_use_half_and_say_so",
    "test_curves_are_thinned_to_about_two_hundred_points_keeping_both_ends",
    "test_each_class_present_gets_its_own_roc_curve",
    "test_the_lines_under_the_test_accuracy_say_every_score_measured",
    "test_the_majority_answer_dominates_from_nine_rows_in_ten",
    "test_a_library_error_becomes_its_first_clause",
    "test_ranking_scores_are_named_and_none_where_a_class_is_missing",
    "test_the_schema_defaults_hash_above_a_thousand_values_and_cross_automatically",
    "test_kinds_follow_the_dtype_of_typed_columns",
    "test_a_number_beyond_float32_is_refused_in_one_sentence_naming_its_row",
    "test_auto_crosses_pair_the_four_most_varied_plain_categoricals_in_file_order",
    "test_the_vocabulary_is_by_count_then_name_and_each_note_names_its_row",
    "test_a_float_column_of_whole_codes_is_read_as_their_digits",
    "test_csv_cells_are_text_as_written_and_a_bom_is_no_part_of_a_name",
    "test_census_lines_without_a_header_are_numbered_from_one",
    "test_unreadable_files_say_why_in_the_librarys_words",
    "test_a_nested_column_and_a_label_copy_are_refused_in_full_sentences",
    "test_named_crosses_keep_the_files_column_order",
    "test_label_variants_are_refused_with_their_group_named",
    "test_a_column_half_numbers_is_refused_and_a_third_is_categories",
    "test_a_label_unseen_in_training_is_refused_at_its_row",
    "test_a_users_file_is_refused_or_noted_word_for_word",
]
# Deselected: the data step's run (prepare.entry.run: Keras adapts the FeatureSpace, which can hang
# in mutmut's forked children, a timeout counted unseen) and the census loads (seconds of parsing
# 48,842 rows per mutant of sources.py; test_tabular_mutants_sources.py reaches _census through
# a stand-in of 30 lines in the same format instead).
TABLE_DESELECTED = [
    "test_tabular_bad_input.py::test_a_number_beyond_float32_is_refused_at_its_row",
    "test_tabular_sources.py::test_census_loads_its_own_test_file_and_strips_the_label_dot",
    "test_tabular_schema.py::test_census_schema_is_from_train_only_with_auto_crosses",
]
TABLE_SCORES = [  # test_tabular_shapes.py's tests of scores.py alone (its others train models)
    "test_03s_lines_for_three_classes_leave_out_what_is_not_measured",
    "test_a_rare_positive_class_says_what_answering_no_to_every_row_scores",
]
{%- endif %}
# group: (modules under src/<package>/ to mutate, the tests that guard them (a file under tests/,
# or a pytest option such as --deselect=...)[, the functions]):
# without the third part every function of the modules; with it, the mutants whose names match
# (mutmut's "<module>.x_<function>__mutmut_<n>", package left out) - the functions that decide
# what the user is told, not, say, how a measurement process is started.
# test_runner.py's tests of the plan alone (in-process, no kernel): its others run notebooks.
PLAN_TESTS = [
    f"test_runner.py::{name}"
    for name in (
        "test_plan_precedence_shared_then_notebook_then_override",
        "test_unknown_parameter_refused_before_any_notebook_runs",
        "test_unknown_notebook_section_refused",
        "test_value_of_wrong_type_refused",
        "test_int_for_float_and_anything_for_a_none_default_accepted",
        "test_run_dir_parameter_refused_pointing_to_option",
        "test_a_notebook_whose_parameters_tag_was_removed_is_refused_saying_how_to_restore_it",
        "test_a_parameters_tag_on_a_cell_without_run_dir_is_refused_before_anything_runs",
        "test_unknown_profile_refused_listing_profiles",
        "test_misspelt_profile_section_refused",
        "test_only_selects_by_prefix_and_refuses_unknown",
        "test_only_takes_a_notebooks_file_name_or_path_as_its_name",
        "test_override_for_unselected_notebook_refused",
        "test_same_key_in_different_sections_accepted",
        "test_a_notebook_scoped_value_reaches_only_that_notebook",
        "test_a_bad_notebook_scoped_value_is_refused",
        "test_a_near_miss_is_answered_with_did_you_mean",
    )
]
GROUPS = {
    "lineage": (["lineage.py", "fingerprints.py"], ["test_mutants_lineage.py", "test_steps.py"]),
    # steps._chain() and param() run while steps.py (and each step's module) is imported, before
    # mutmut switches a mutant on: their mutants cannot be tried at all, so they are left out
    # (test_steps.py checks the chain and every param's default and help against the notebooks).
    "preflight": (
        ["steps.py"],
        ["test_mutants_preflight.py", "test_steps.py"],
        # every function but those two: _chain and param
        ["steps.x_[!p_]*", "steps.x_p[!a]*", "steps.x_params_from*", "steps.x__[!c]*"]
        + ["steps.x__check*"],
    ),
    # test_runner_records.py proves the same through real runs (kernels, subprocesses): minutes
    # per mutant, and mutmut cannot see what a subprocess calls; these are the in-process ones.
    "records": (["runner/record.py"], ["test_mutants_records.py"]),
    "finders": (
        ["find/lr.py", "find/batch.py", "find/search.py", "train/auto.py"],
        [
            "test_find.py",
            "test_mutants_lr.py",
            "test_mutants_batch.py",
            "test_mutants_finders.py",
            # these two train on the digits (a minute of CPU each): a mutant the fast tests miss
            # runs out of mutmut's CPU limit there and is counted "timeout", not judged
            "--deselect=tests/test_mutants_finders.py::test_a_batch_found_on_the_same_data_is_reused",
            "--deselect=tests/test_mutants_finders.py::test_a_batch_found_on_other_data_is_not_reused",
        ],
        ["find.lr.*", "find.batch.*", "find.search.*", "train.auto.x_basis_*"]
        + ["train.auto.x_reuse_*"],
    ),
    "observe": (
        ["observe/exporter.py", "observe/gpu.py", "observe/input_wait.py", "observe/profiler.py"],
        ["test_observe.py", "test_mutants_ports.py", "test_mutants_observe.py"],
        # not load_nvml, cuda_bus_ids, cuda_mig_uuids, cuda_memory_bytes, each_cuda_device: they
        # ask a GPU driver, which a CPU machine has not
        ["observe.exporter.*", "observe.gpu.x_visible_*", "observe.gpu.xǁ*", "observe.gpu.x__*"]
        + ["observe.gpu.x_tensorflow_memory*"]
        + ["observe.input_wait.*", "observe.profiler.*"],
    ),
{%- if cookiecutter.include_serving %}
    "serve": (
        ["serve/versions.py", "serve/state.py", "serve/config.py"],
        ["test_serving.py", "test_mutants_serve.py", "test_serving_faults.py"],
    ),
{%- endif %}
{%- if cookiecutter.include_benchmarks %}
    "gpubench": (
        ["gpubench/verdicts.py", "gpubench/bench.py"],
        ["test_gpu_bench.py", "test_mutants_gpubench.py"],
        ["gpubench.verdicts.*", "gpubench.bench.x_ratios*", "gpubench.bench.x_inference*"],
    ),
{%- endif %}
    "report": (
        ["runner/summary.py", "runner/numbers.py"],
        ["test_run_report.py", "test_mutants_report.py"],
    ),
{%- if cookiecutter.task == "image_classification" %}
    # What a user's photo files become: photo_io, the cache budget (cache.py; memory.py holds the
    # in-memory sources, not the budget), the split, the shard files, the read regime, and the
    # size chosen (image_folder.inspect_image_folder). Left out: decode.py but read_regime (its
    # functions build TensorFlow graphs, and map_fn hangs in mutmut's forked children: each
    # mutant ends as a timeout, not a verdict; test_mutants_photos_shards.py still tests them;
    # random_crop_record is an augmentation's random window); shards.write_shards, copy_shards,
    # _write_meta, _encoded and _source_bytes (the writing loop and meta.json, tested end to end
    # through records.prepare by test_data_photos.py and test_data_records.py: seconds a mutant).
    "photos": (
        ["tasks/image/photo_io.py", "tasks/image/decode.py", "tasks/image/cache.py"]
        + ["data/split.py", "tasks/image/shards.py", "tasks/image/image_folder.py"],
        ["test_mutants_photos.py", "test_mutants_photos_shards.py", "test_data_cache.py"]
        + ["test_data_split_shared.py"],
        ["tasks.image.photo_io.*", "tasks.image.cache.*", "data.split.*"]
        + ["tasks.image.image_folder.x_inspect_*", "tasks.image.decode.x_read_regime*"]
        + ["tasks.image.shards.x_shard_name*", "tasks.image.shards.x_parse_*"]
        + ["tasks.image.shards.x_choose_*", "tasks.image.shards.x_clear_*"]
        + ["tasks.image.shards.x__file_records*", "tasks.image.shards.x__example*"]
        + ["tasks.image.shards.x__write_shard*", "tasks.image.shards.x__copy_file*"],
    ),
{%- endif %}
{%- if cookiecutter.task == "text_classification" %}
    # What a user's texts become and the scores they are told: the files read (their order, the
    # encodings, what is skipped and said), a CSV's rows and labels, the audit of labels and
    # repeats, the test scores, and data/ replaced only whole. Left out: load_text_source and
    # _banking77 (the whole read and split: test_text_sources.py, seconds a mutant), the
    # baseline's TF-IDF settings, and pipeline.py, dataset.py, vocab.py and the rest of
    # records.py, which build and run tf.data graphs (map_fn hangs in mutmut's forked children:
    # a timeout, not a verdict); test_text_mutants.py tests their shuffle, buckets and padding.
    "text": (
        ["tasks/text/files.py", "tasks/text/sources.py", "tasks/text/audit.py"]
        + ["tasks/text/scores.py", "tasks/text/records.py"],
        ["test_text_mutants_words.py", "test_text_sources.py", "test_text_scores.py"]
        + [
            f"test_text_inputs.py::test_{name}"
            for name in (
                "a_single_class_is_refused_before_data_is_written",
                "labels_that_differ_only_in_case_or_spaces_are_named_in_a_note",
                "a_folders_sub_folders_links_and_outside_files_are_said",
                "a_dangling_link_and_a_read_error_join_the_unreadable_files",
            )
        ]
        + [
            f"test_text_mutants.py::test_{name}"
            for name in (
                "a_folders_split_does_not_depend_on_the_order_the_file_system_lists",
                "macro_f1_counts_a_class_that_is_only_predicted",
                "replacing_data_sets_the_old_folder_aside_until_the_new_one_is_in_place",
            )
        ],
        ["tasks.text.files.*", "tasks.text.audit.*", "tasks.text.scores.*"]
        + ["tasks.text.sources.x_read_csv_rows*", "tasks.text.sources.x__[ri]*"]
        + ["tasks.text.records.x_replace_folder*"],
    ),
{%- endif %}
{%- if cookiecutter.task == "tabular_classification" %}
    # What a user's table becomes: the cells and kinds read from a file, the refusals of a bad
    # one, the schema's statistics (from train alone) and the threshold and scores on test. Left
    # out: tables.py, features.py, dataset.py and models.py, whose functions build TensorFlow
    # graphs or write data/ through Keras (test_tabular_data_step.py, test_tabular_features.py,
    # test_tabular_models.py and test_tabular_mutants.py test them); reading.py (it times reads).
    "tables": (
        ["tasks/tabular/schema.py", "tasks/tabular/screens.py", "tasks/tabular/sources.py"]
        + ["tasks/tabular/scores.py"],
        ["test_tabular_schema.py", "test_tabular_sources.py", "test_tabular_bad_input.py"]
        + ["test_tabular_mutants_sources.py"]
        + [f"test_tabular_mutants.py::{name}" for name in TABLE_TESTS]
        + [f"test_tabular_shapes.py::{name}" for name in TABLE_SCORES]
        + [f"--deselect=tests/{name}" for name in TABLE_DESELECTED],
    ),
{%- endif %}
    # The training recipe: the rate at each step, the weights a run starts from and keeps, the
    # values it accepts, the stop signals and the saved step a resume trusts, the test split's
    # scores, and the pixels a crop or the device's augmentation hands the model. Left out:
    # finetune's refusals of a weights file and _read (real .keras/.weights.h5 files through the
    # task's builders: test_train_recipe.py) and file_sha256 (the lineage's digest); preempt's
    # install/remove/__init__ (pipes, wakeup descriptor and handlers of the OS: test_preempt.py
    # sends real signals) and barrier (an all-reduce across workers: test_slurm.py); the rest of
    # decode.py (the readers of records: test_data_records.py).
    "recipe": (
        ["train/schedule.py", "train/recipe.py", "train/phases.py", "train/finetune.py"]
        + ["train/preempt.py", "train/evaluate.py"]
{%- if cookiecutter.task == "image_classification" %}
        + ["tasks/image/augment.py", "tasks/image/decode.py"]
{%- endif %},
        ["test_mutants_recipe.py", "test_mutants_stop.py", "test_mutants_scores.py"]
{%- if cookiecutter.task == "image_classification" %}
        + ["test_mutants_augment.py", f"test_train_recipe.py::{RAND_AUGMENT}"]
        + ["test_mutants_crop.py"]
{%- endif %},
        ["train.schedule.*", "train.recipe.*", "train.phases.*", "train.evaluate.*"]
        + ["train.finetune.x_load_into*", "train.finetune.x_phase*", "train.finetune.x_set_phase*"]
        + ["train.finetune.x_backbone_layers*", "train.finetune.x__[fhips]*"]
        + ["train.preempt.x_[!b]*", "train.preempt.xǁStopRequestǁ_[hw]*"]
{%- if cookiecutter.task == "image_classification" %}
        + ["tasks.image.augment.*", "tasks.image.decode.x_random_crop_record*"]
{%- endif %},
    ),
    # Live progress, how a backend is timed, the run folder's lock, the plan of a run. Left out:
    # progress._in_jupyter (asks IPython for a Jupyter kernel, which a test process is not);
    # the image task's naive_pipeline and decode_only_variant, data/timing.py's warm_page_cache
    # and measure, which build and run tf.data pipelines (seconds of TensorFlow per mutant), kept
    # are the functions that decide the rates, the cut and the rows a user reads; runner/live.py's
    # _Manager, LiveEngine and register, papermill's plumbing, which only a notebook run reaches.
    "progress": (
        ["progress.py", "runner/plan.py", "optimize/timing.py", "locks.py"]
        + ["data/timing.py", "runner/live.py"]
{%- if cookiecutter.task == "image_classification" %}
        + ["tasks/image/variants.py"]
{%- endif %},
        [
            "test_mutants_progress.py",
            "test_mutants_timing.py",
            "test_mutants_plan.py",
            "test_mutants_preflight.py",
            *PLAN_TESTS,
        ]
{%- if cookiecutter.task == "image_classification" %}
        + ["test_mutants_variants.py"]
{%- endif %}
        + [
            "test_quiet_progress.py::test_runner_progress_without_a_terminal_is_line_based",
            "test_quiet_progress.py::test_a_silent_cell_gets_a_line_in_line_mode",
            "test_train_progress.py::test_a_resumed_epoch_counts_from_its_step_and_times_only_what_runs",
        ],
        ["progress.x_[!_]*", "progress.x__[!i]*", "progress.xǁ*", "runner.plan.*"]
        + ["optimize.timing.*", "locks.*", "runner.live.xǁNotebookProgressǁ*"]
        + ["data.timing.x__row*", "data.timing.x__later*", "data.timing.x__time_epochs*"]
{%- if cookiecutter.task == "image_classification" %}
        + ["tasks.image.variants.x_pipeline_variants*"]
{%- endif %},
    ),
}
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout"}
STATUS.update(dict.fromkeys((-24, 24, 152, 255), "timeout"))
DETECTED = {"killed", "timeout"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP", help=", ".join(GROUPS))
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.groups if name not in GROUPS]
    if unknown:
        parser.error(f"unknown group {unknown[0]!r}: use one of {', '.join(GROUPS)}.")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs} is not allowed: use 1 or more.")
    explained = read_explained(EXPLAINED)
    results = {}
    for group in args.groups or list(GROUPS):
        print(f"[mutate] {group}: {', '.join(GROUPS[group][0])}", flush=True)
        results[group] = run_group(group, args.jobs)
    OUT.mkdir(parents=True, exist_ok=True)
    report = OUT / "report.md"
    report.write_text(render(results, explained), encoding="utf-8")
    print(summary_lines(results, explained), flush=True)
    print(f"[mutate] report: {report}", flush=True)
    return 0 if all(result["ran"] for result in results.values()) else 1


def run_group(group: str, jobs: int) -> dict:
    """Run mutmut on one group in a fresh copy of the project; its mutants' statuses and diffs."""
    modules, tests, *only = GROUPS[group]
    names = [f"{PACKAGE}.{pattern}" for pattern in only[0]] if only else []
    work = OUT / group
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints")
            shutil.copytree(source, work / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, work / name)
    paths = [f"src/{PACKAGE}/{module}" for module in modules]
    selection = [test if test.startswith("-") else f"tests/{test}" for test in tests]
    write_config(work / "pyproject.toml", paths, selection)
    # The tests' own subprocesses (a fresh Python, a notebook kernel) import the mutated copy too.
    # The folder must exist before mutmut starts: Python caches a path that is missing at start-up
    # as having nothing to import, and the tests would then import the unmutated package.
    (work / "mutants" / "src").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(work / "mutants" / "src")}
    # mutmut forks each mutant's run from a process that has run TensorFlow: an op spread over
    # the intra-op thread pool (a flip of a batch of images) then waits forever for threads the
    # fork did not copy, and the mutant counts as a timeout (detected) unseen. One intra-op
    # thread runs every op in the calling thread.
    env["TF_NUM_INTRAOP_THREADS"] = "1"
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names]
    log = work / "mutmut.log"
    with log.open("w", encoding="utf-8") as handle:
        done = subprocess.run(command, cwd=work, env=env, stdout=handle, stderr=subprocess.STDOUT)
    statuses = read_statuses(work / "mutants", paths)
    if only:
        statuses = {k: v for k, v in statuses.items() if any(fnmatch(k, p) for p in only[0])}
    survivors = [name for name, status in statuses.items() if status == "survived"]
    diffs = {name: show(work, env, name) for name in survivors}
    ran = done.returncode == 0 and bool(statuses)
    if not ran:
        print(f"[mutate] {group}: mutmut exited {done.returncode}; see {log}", flush=True)
    return {"modules": modules, "tests": tests, "statuses": statuses, "diffs": diffs, "ran": ran}


def write_config(pyproject: Path, paths: list[str], tests: list[str]) -> None:
    """The copy's [tool.mutmut]: the project's settings, with this group's modules and tests."""
    text = pyproject.read_text(encoding="utf-8")
    settings = tomllib.loads(text).get("tool", {}).get("mutmut", {})
    settings.update(only_mutate=paths, pytest_add_cli_args_test_selection=tests)
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
    table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    pyproject.write_text(f"{text.rstrip()}\n\n[tool.mutmut]\n{table}\n", encoding="utf-8")


def read_statuses(mutants: Path, paths: list[str]) -> dict[str, str]:
    """{mutant: status} from mutmut's result files beside each mutated module."""
    statuses = {}
    for path in paths:
        meta = mutants / f"{path}.meta"
        if not meta.is_file():
            continue
        codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
        for name, code in codes.items():
            other = "not checked" if code is None else "suspicious"
            statuses[short(name)] = STATUS.get(code, other)
    return statuses


def show(work: Path, env: dict, name: str) -> str:
    command = [sys.executable, "-m", "mutmut", "show", f"{PACKAGE}.{name}"]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line[:1] in "+-@" or line.startswith(" ")]
    return "\n".join(line for line in lines if not line.startswith(("---", "+++")))


def short(name: str) -> str:
    """A mutant's name without the package, as tests/mutation_survivors.md lists it."""
    return name.removeprefix(f"{PACKAGE}.")


def read_explained(path: Path) -> dict[str, str]:
    """{mutant: why} from the lines "- `module.x_function__mutmut_N`: why" of the list."""
    if not path.is_file():
        return {}
    found = re.findall(r"^- `([\w.]+__mutmut_\d+)`:?\s*(.*)$", path.read_text("utf-8"), re.M)
    return dict(found)


def counts(statuses: dict[str, str], explained: dict[str, str]) -> dict[str, int]:
    values = list(statuses.values())
    survived = [name for name, status in statuses.items() if status == "survived"]
    return {
        "mutants": len(values),
        "detected": sum(status in DETECTED for status in values),
        "survived": len(survived),
        "explained": sum(name in explained for name in survived),
        "no_tests": values.count("no tests"),
    }


def rate(count: dict[str, int]) -> float:
    """The share of mutants the tests detect, of those that some test reaches."""
    tried = count["detected"] + count["survived"]
    return count["detected"] / tried if tried else 0.0


def summary_lines(results: dict[str, dict], explained: dict[str, str]) -> str:
    lines = []
    for group, result in results.items():
        count = counts(result["statuses"], explained)
        lines.append(
            f"[mutate] {group}: {rate(count):.1%} killed ({count['detected']} of "
            f"{count['detected'] + count['survived']}); {count['survived']} survived, "
            f"{count['explained']} of them explained as equivalent; {count['no_tests']} reached "
            "by no test"
        )
    return "\n".join(lines)


def render(results: dict[str, dict], explained: dict[str, str]) -> str:
    lines = ["# Mutation testing", "", "| group | modules | killed | survived | explained |"]
    lines.append("|---|---|---:|---:|---:|")
    for group, result in results.items():
        count = counts(result["statuses"], explained)
        lines.append(
            f"| {group} | {', '.join(result['modules'])} | {rate(count):.1%} "
            f"({count['detected']}/{count['detected'] + count['survived']}) | "
            f"{count['survived']} | {count['explained']} |"
        )
    for group, result in results.items():
        lines += ["", f"## {group}", "", f"Tests: {', '.join(result['tests'])}.", ""]
        if not result["ran"]:
            lines += [f"mutmut did not finish: see build/mutate/{group}/mutmut.log.", ""]
        for name, diff in result["diffs"].items():
            why = explained.get(name)
            lines += [f"### `{name}`: " + (f"equivalent: {why}" if why else "**not explained**")]
            lines += ["", "```diff", diff, "```", ""]
        stale = [
            name
            for name in explained
            if name.rsplit(".", 1)[0].replace(".", "/") + ".py" in result["modules"]
            and result["statuses"].get(name) != "survived"
        ]
        if stale:
            lines += [f"Listed as equivalent but not surviving now: {', '.join(stale)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.exit(main())
