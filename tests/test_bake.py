"""Bake the template with the supported answers and inspect what comes out.

Each supported combination is baked once per session; answers that must be refused are run
through the command line, as a user would type them, to check the sentence and that nothing
was written.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import Baked
from packaging.requirements import Requirement

# Every file of the default bake; `{pkg}` is the package folder's name.
FULL_BAKE = (
    ".dockerignore",
    ".github/dependabot.yml",
    ".github/workflows/ci.yml",
    ".gitignore",
    ".pre-commit-config.yaml",
    "LICENSE",
    "Makefile",
    "README.md",
    "configs/default.yaml",
    "configs/gpu.yaml",
    "configs/smoke.yaml",
    "deploy/README.md",
    "deploy/pvc.yaml",
    "deploy/slurm_train.sh",
    "deploy/slurm_tune.sh",
    "deploy/tfjob.yaml",
    "docker/Dockerfile",
    "docker/compose.monitoring.yml",
    "docker/compose.serving.yml",
    "docker/compose.yml",
    "docker/monitoring/alerts.test.yml",
    "docker/monitoring/alerts.yml",
    "docker/monitoring/grafana/dashboards/training.json",
    "docker/monitoring/grafana/provisioning/dashboards/dashboards.yml",
    "docker/monitoring/grafana/provisioning/datasources/prometheus.yml",
    "docker/monitoring/prometheus.yml",
    "notebooks/00_environment.ipynb",
    "notebooks/01_data.ipynb",
    "notebooks/02_tune.ipynb",
    "notebooks/03_train.ipynb",
    "notebooks/04_export.ipynb",
    "notebooks/05_optimize.ipynb",
    "pyproject.toml",
    "src/{pkg}/__init__.py",
    "src/{pkg}/__main__.py",
    "src/{pkg}/artifacts.py",
    "src/{pkg}/cli.py",
    "src/{pkg}/data/__init__.py",
    "src/{pkg}/data/base.py",
    "src/{pkg}/data/meta.py",
    "src/{pkg}/data/pipeline.py",
    "src/{pkg}/data/reader.py",
    "src/{pkg}/data/report.py",
    "src/{pkg}/data/split.py",
    "src/{pkg}/data/timing.py",
    "src/{pkg}/env/__init__.py",
    "src/{pkg}/env/devices.py",
    "src/{pkg}/env/entry.py",
    "src/{pkg}/env/precision.py",
    "src/{pkg}/env/report.py",
    "src/{pkg}/env/timing.py",
    "src/{pkg}/env/versions.py",
    "src/{pkg}/export/__init__.py",
    "src/{pkg}/export/__main__.py",
    "src/{pkg}/export/entry.py",
    "src/{pkg}/export/files.py",
    "src/{pkg}/export/params.py",
    "src/{pkg}/export/parity.py",
    "src/{pkg}/export/rest.py",
    "src/{pkg}/export/savedmodel.py",
    "src/{pkg}/figures/__init__.py",
    "src/{pkg}/figures/base.py",
    "src/{pkg}/figures/data.py",
    "src/{pkg}/figures/environment.py",
    "src/{pkg}/figures/export.py",
    "src/{pkg}/figures/optimize.py",
    "src/{pkg}/figures/show.py",
    "src/{pkg}/figures/style.py",
    "src/{pkg}/figures/train.py",
    "src/{pkg}/find/__init__.py",
    "src/{pkg}/find/batch.py",
    "src/{pkg}/find/lr.py",
    "src/{pkg}/find/plots.py",
    "src/{pkg}/find/probes.py",
    "src/{pkg}/find/search.py",
    "src/{pkg}/fingerprints.py",
    "src/{pkg}/gpubench/__init__.py",
    "src/{pkg}/gpubench/bench.py",
    "src/{pkg}/gpubench/command.py",
    "src/{pkg}/gpubench/measure.py",
    "src/{pkg}/gpubench/reference.py",
    "src/{pkg}/gpubench/verdicts.py",
    "src/{pkg}/inputbound.py",
    "src/{pkg}/kernel.py",
    "src/{pkg}/limits.py",
    "src/{pkg}/lineage.py",
    "src/{pkg}/locks.py",
    "src/{pkg}/observe/__init__.py",
    "src/{pkg}/observe/exporter.py",
    "src/{pkg}/observe/gpu.py",
    "src/{pkg}/observe/input_wait.py",
    "src/{pkg}/observe/profiler.py",
    "src/{pkg}/optimize/__init__.py",
    "src/{pkg}/optimize/base.py",
    "src/{pkg}/optimize/calibration.py",
    "src/{pkg}/optimize/core.py",
    "src/{pkg}/optimize/judge.py",
    "src/{pkg}/optimize/lengths.py",
    "src/{pkg}/optimize/onnx_backend.py",
    "src/{pkg}/optimize/ort_engine.py",
    "src/{pkg}/optimize/params.py",
    "src/{pkg}/optimize/registry.py",
    "src/{pkg}/optimize/timing.py",
    "src/{pkg}/optimize/tensorrt_engine.py",
    "src/{pkg}/optimize/tf_trt.py",
    "src/{pkg}/parts/__init__.py",
    "src/{pkg}/parts/bench.py",
    "src/{pkg}/parts/serve.py",
    "src/{pkg}/parts/tune.py",
    "src/{pkg}/prepare/__init__.py",
    "src/{pkg}/prepare/entry.py",
    "src/{pkg}/progress.py",
    "src/{pkg}/quiet.py",
    "src/{pkg}/replica.py",
    "src/{pkg}/runner/__init__.py",
    "src/{pkg}/runner/cells.py",
    "src/{pkg}/runner/chain.py",
    "src/{pkg}/runner/commands.py",
    "src/{pkg}/runner/console.py",
    "src/{pkg}/runner/early.py",
    "src/{pkg}/runner/execute.py",
    "src/{pkg}/runner/html.py",
    "src/{pkg}/runner/kernels.py",
    "src/{pkg}/runner/live.py",
    "src/{pkg}/runner/margin.py",
    "src/{pkg}/runner/numbers.py",
    "src/{pkg}/runner/plan.py",
    "src/{pkg}/runner/profile.py",
    "src/{pkg}/runner/record.py",
    "src/{pkg}/runner/report.py",
    "src/{pkg}/runner/summary.py",
    "src/{pkg}/runner/terminate.py",
    "src/{pkg}/serve/__init__.py",
    "src/{pkg}/serve/bench.py",
    "src/{pkg}/serve/commands.py",
    "src/{pkg}/serve/config.py",
    "src/{pkg}/serve/protos.py",
    "src/{pkg}/serve/state.py",
    "src/{pkg}/serve/versions.py",
    "src/{pkg}/seam.py",
    "src/{pkg}/steps.py",
    "src/{pkg}/tasks/__init__.py",
    "src/{pkg}/tasks/base.py",
    "src/{pkg}/tasks/image/__init__.py",
    "src/{pkg}/tasks/image/augment.py",
    "src/{pkg}/tasks/image/augment_bench.py",
    "src/{pkg}/tasks/image/benchmark.py",
    "src/{pkg}/tasks/image/cache.py",
    "src/{pkg}/tasks/image/data_step.py",
    "src/{pkg}/tasks/image/decode.py",
    "src/{pkg}/tasks/image/export.py",
    "src/{pkg}/tasks/image/gpu_reference.py",
    "src/{pkg}/tasks/image/image_folder.py",
    "src/{pkg}/tasks/image/image_source.py",
    "src/{pkg}/tasks/image/memory.py",
    "src/{pkg}/tasks/image/models.py",
    "src/{pkg}/tasks/image/nets.py",
    "src/{pkg}/tasks/image/photo_io.py",
    "src/{pkg}/tasks/image/pipeline.py",
    "src/{pkg}/tasks/image/plots.py",
    "src/{pkg}/tasks/image/records.py",
    "src/{pkg}/tasks/image/shards.py",
    "src/{pkg}/tasks/image/sources.py",
    "src/{pkg}/tasks/image/stages.py",
    "src/{pkg}/tasks/image/task.py",
    "src/{pkg}/tasks/image/tfrecord_dir.py",
    "src/{pkg}/tasks/image/train_benchmark.py",
    "src/{pkg}/tasks/image/train_benchmark_result.py",
    "src/{pkg}/tasks/image/train_benchmark_runs.py",
    "src/{pkg}/tasks/image/variants.py",
    "src/{pkg}/tasks/outputs.py",
    "src/{pkg}/train/__init__.py",
    "src/{pkg}/train/auto.py",
    "src/{pkg}/train/benchmark_memory.py",
    "src/{pkg}/train/chance.py",
    "src/{pkg}/train/chunks.py",
    "src/{pkg}/train/cluster.py",
    "src/{pkg}/train/devices.py",
    "src/{pkg}/train/entry.py",
    "src/{pkg}/train/epoch.py",
    "src/{pkg}/train/errors.py",
    "src/{pkg}/train/evaluate.py",
    "src/{pkg}/train/finetune.py",
    "src/{pkg}/train/loop.py",
    "src/{pkg}/train/params.py",
    "src/{pkg}/train/preempt.py",
    "src/{pkg}/train/phases.py",
    "src/{pkg}/train/recipe.py",
    "src/{pkg}/train/report.py",
    "src/{pkg}/train/resume.py",
    "src/{pkg}/train/running.py",
    "src/{pkg}/train/schedule.py",
    "src/{pkg}/train/state.py",
    "src/{pkg}/train/value_sources.py",
    "src/{pkg}/train/watch.py",
    "src/{pkg}/tune/__init__.py",
    "src/{pkg}/tune/checks.py",
    "src/{pkg}/tune/cluster.py",
    "src/{pkg}/tune/entry.py",
    "src/{pkg}/tune/figure.py",
    "src/{pkg}/tune/offer.py",
    "src/{pkg}/tune/search.py",
    "src/{pkg}/tune/space.py",
    "src/{pkg}/tune/trial.py",
    "src/{pkg}/tune/trials.py",
    "src/{pkg}/tune/tuners.py",
    "src/{pkg}/tune/workers.py",
    "src/{pkg}/writes.py",
    "tests/conftest.py",
    "tests/data/kubeflow.org_tfjobs.yaml",
    "tests/fake_task.py",
    "tests/helpers.py",
    "tests/mutate.py",
    "tests/mutation_survivors.md",
    "tests/output_gaps.py",
    "tests/photos.py",
    "tests/slurm_cluster.py",
    "tests/test_architecture.py",
    "tests/test_data_cache.py",
    "tests/test_data_folder_kinds.py",
    "tests/test_data_photos.py",
    "tests/test_data_pipeline.py",
    "tests/test_data_reader.py",
    "tests/test_data_records.py",
    "tests/test_data_split_shared.py",
    "tests/test_deploy.py",
    "tests/test_env.py",
    "tests/test_export.py",
    "tests/test_export_shared.py",
    "tests/test_find_shared.py",
    "tests/test_input_bound.py",
    "tests/test_figures.py",
    "tests/test_figures_shared.py",
    "tests/test_find.py",
    "tests/test_gpu_bench.py",
    "tests/test_kernel.py",
    "tests/test_lab.py",
    "tests/test_models.py",
    "tests/test_monitoring.py",
    "tests/test_mutants_alerts.py",
    "tests/test_mutants_augment.py",
    "tests/test_mutants_crop.py",
    "tests/test_mutants_batch.py",
    "tests/test_mutants_finders.py",
    "tests/test_mutants_gpubench.py",
    "tests/test_mutants_lineage.py",
    "tests/test_mutants_lr.py",
    "tests/test_mutants_observe.py",
    "tests/test_mutants_photos.py",
    "tests/test_mutants_photos_shards.py",
    "tests/test_mutants_plan.py",
    "tests/test_mutants_ports.py",
    "tests/test_mutants_preflight.py",
    "tests/test_mutants_progress.py",
    "tests/test_mutants_quiet.py",
    "tests/test_mutants_recipe.py",
    "tests/test_mutants_records.py",
    "tests/test_mutants_report.py",
    "tests/test_mutants_scores.py",
    "tests/test_mutants_serve.py",
    "tests/test_mutants_stop.py",
    "tests/test_mutants_timing.py",
    "tests/test_mutants_variants.py",
    "tests/test_names.py",
    "tests/test_notebooks.py",
    "tests/test_observe.py",
    "tests/test_optimize.py",
    "tests/test_optimize_gpu_sessions.py",
    "tests/test_optimize_shared.py",
    "tests/test_optimize_tensorrt.py",
    "tests/test_preempt.py",
    "tests/test_progress_starting.py",
    "tests/test_prometheus_scrape.py",
    "tests/test_quiet_import.py",
    "tests/test_quiet_progress.py",
    "tests/test_ranges.py",
    "tests/test_report_margin.py",
    "tests/test_run_folder.py",
    "tests/test_run_folder_lock.py",
    "tests/test_run_report.py",
    "tests/test_run_report_status.py",
    "tests/test_task_contract.py",
    "tests/test_runner.py",
    "tests/test_runner_ahead.py",
    "tests/test_runner_held.py",
    "tests/test_runner_records.py",
    "tests/test_serving.py",
    "tests/test_serving_compose.py",
    "tests/test_serving_faults.py",
    "tests/test_shared_steps.py",
    "tests/test_slurm.py",
    "tests/test_smoke_run.py",
    "tests/test_steps.py",
    "tests/test_train.py",
    "tests/test_train_benchmark.py",
    "tests/test_train_chance.py",
    "tests/test_train_progress.py",
    "tests/test_train_recipe.py",
    "tests/test_train_recipe_gpu.py",
    "tests/test_train_shared.py",
    "tests/test_train_values.py",
    "tests/test_train_watch.py",
    "tests/test_tune.py",
    "tests/test_tune_progress.py",
    "tests/test_tune_shared.py",
    "tests/test_tune_workers_shared.py",
    "tests/test_write_failures.py",
    "tests/test_write_failures_shared.py",
)

# The files each optional part takes away when it is declined (nothing else yet for the rest).
REMOVED_WHEN_DECLINED = {
    "include_docker": (
        "docker/Dockerfile",
        "docker/compose.yml",
        "docker/compose.serving.yml",
        "docker/compose.monitoring.yml",
        "docker/monitoring/alerts.test.yml",
        "docker/monitoring/alerts.yml",
        "docker/monitoring/grafana/dashboards/training.json",
        "docker/monitoring/grafana/provisioning/dashboards/dashboards.yml",
        "docker/monitoring/grafana/provisioning/datasources/prometheus.yml",
        "docker/monitoring/prometheus.yml",
        ".dockerignore",
        "tests/test_monitoring.py",
        "tests/test_mutants_alerts.py",
        "tests/test_prometheus_scrape.py",
        "tests/test_serving_compose.py",
    ),
    "ci": (".github/dependabot.yml", ".github/workflows/ci.yml"),
    "include_tuning": (
        "deploy/slurm_tune.sh",
        "notebooks/02_tune.ipynb",
        "src/{pkg}/parts/tune.py",
        "src/{pkg}/tune/__init__.py",
        "src/{pkg}/tune/checks.py",
        "src/{pkg}/tune/cluster.py",
        "src/{pkg}/tune/entry.py",
        "src/{pkg}/tune/figure.py",
        "src/{pkg}/tune/offer.py",
        "src/{pkg}/tune/search.py",
        "src/{pkg}/tune/space.py",
        "src/{pkg}/tune/trial.py",
        "src/{pkg}/tune/trials.py",
        "src/{pkg}/tune/tuners.py",
        "src/{pkg}/tune/workers.py",
        "tests/test_tabular_tune.py",
        "tests/test_text_tune_space.py",
        "tests/test_tune.py",
        "tests/test_tune_progress.py",
        "tests/test_tune_shared.py",
        "tests/test_tune_workers_shared.py",
    ),
    "include_tensorrt": (
        "src/{pkg}/optimize/ort_engine.py",
        "src/{pkg}/optimize/tensorrt_engine.py",
        "src/{pkg}/optimize/tf_trt.py",
        "tests/test_optimize_gpu_sessions.py",
        "tests/test_optimize_tensorrt.py",
    ),
    "include_serving": (
        "docker/compose.serving.yml",
        "src/{pkg}/export/rest.py",
        "src/{pkg}/parts/serve.py",
        "src/{pkg}/serve/__init__.py",
        "src/{pkg}/serve/bench.py",
        "src/{pkg}/serve/commands.py",
        "src/{pkg}/serve/config.py",
        "src/{pkg}/serve/protos.py",
        "src/{pkg}/serve/state.py",
        "src/{pkg}/serve/versions.py",
        "tests/test_mutants_serve.py",
        "tests/test_serving.py",
        "tests/test_serving_compose.py",
        "tests/test_serving_faults.py",
    ),
    "include_benchmarks": (
        "src/{pkg}/gpubench/__init__.py",
        "src/{pkg}/gpubench/bench.py",
        "src/{pkg}/gpubench/command.py",
        "src/{pkg}/gpubench/measure.py",
        "src/{pkg}/gpubench/reference.py",
        "src/{pkg}/gpubench/verdicts.py",
        "src/{pkg}/parts/bench.py",
        "src/{pkg}/tasks/image/augment_bench.py",
        "src/{pkg}/tasks/image/gpu_reference.py",
        "src/{pkg}/tasks/image/train_benchmark.py",
        "src/{pkg}/tasks/image/train_benchmark_result.py",
        "src/{pkg}/tasks/image/train_benchmark_runs.py",
        "src/{pkg}/train/benchmark_memory.py",
        "tests/bench_tabular.py",
        "tests/bench_text.py",
        "tests/test_gpu_bench.py",
        "tests/test_mutants_gpubench.py",
        "tests/test_train_benchmark.py",
    ),
}

# Words no file of the bake may contain once the part is declined: no code, text or test about a
# part the user said no to (the package finds its optional parts at run time, in parts/).
MENTIONS_WHEN_DECLINED = {
    "include_docker": ("docker", "Docker", "Dockerfile", "compose"),
    "ci": (".github", "GitHub Actions", "dependabot"),
    "include_tuning": (
        "tune",
        "tuning",
        "tuner",
        "tuned",
        "Tune",
        "Tuning",
        "keras-tuner",
        "keras_tuner",
        "02_tune",
        "best_hparams",
        "hparams",
    ),
    # "Tensorrt" is ONNX Runtime's spelling (TensorrtExecutionProvider): a bake that declined the
    # part names no TensorRT provider either (onnx_backend asks the part's ort_engine for it).
    "include_tensorrt": (
        "TensorRT",
        "tensorrt",
        "Tensorrt",
        "tf_trt",
        "TF-TRT",
        "trt",
        "polygraphy",
    ),  # fmt: skip
    "include_serving": (
        "serve canary",
        "serve promote",
        "serve rollback",
        "serve-bench",
        "make serve",
        "versions.json",
        "models.config",
        "batching.config",
        "monitoring.config",
        "tensorflow-serving-api",
        "tensorflow_serving",
        "include_serving",
        "SERVING_",
        "parts.serve",
        "answer_rest",
        "predict_rest",
        "rest_url",
    ),
    # The commands and files of the benchmarks (`make bench`, gpu-bench); 01's pipeline benchmark
    # is step 1's own and stays ("benchmark" alone is no mention).
    "include_benchmarks": (
        "gpu-bench",
        "gpu_bench",
        "gpubench",
        "bench-gpu",
        "make bench",
        "train.benchmark",
        "train_benchmark",
        "benchmark_memory",
        "benchmark_runs",
        "benchmark_result",
        "augment_bench",
        "bench_text",
        "bench_tabular",
        "gpu_reference",
        "include_benchmarks",
        "parts.bench",
    ),
}

# The only places a word above may stay, each for a reason that has nothing to do with the part:
# (option, file, word): the file's use of the word is generic.
MENTIONS_ALLOWED = {
    # export re-exports the serving part's REST client where that part's rest.py is there.
    ("include_serving", "src/{pkg}/export/__init__.py", "answer_rest"),
    ("include_serving", "src/{pkg}/export/__init__.py", "predict_rest"),
    ("include_serving", "src/{pkg}/export/__init__.py", "rest_url"),
    # The environment report reads TensorFlow's build info, which says whether the wheel was built
    # with TensorRT (none is, since 2.18), whatever the project holds.
    ("include_tensorrt", "src/{pkg}/env/versions.py", "TensorRT"),
    ("include_tensorrt", "src/{pkg}/env/versions.py", "tensorrt"),
    ("include_tensorrt", "tests/test_env.py", "tensorrt"),
    # gpu-bench measures the seed's GPU claims, TensorRT's among them, and says which it cannot
    # measure here.
    ("include_tensorrt", "src/{pkg}/gpubench/reference.py", "TensorRT"),
    ("include_tensorrt", "src/{pkg}/gpubench/reference.py", "tensorrt"),
    ("include_tensorrt", "src/{pkg}/gpubench/command.py", "TensorRT"),
    ("include_tensorrt", "tests/test_mutants_gpubench.py", "tensorrt"),
    # The Task's `bench` group (tasks/base.py: its reference model and synthetic data) is a member
    # of the typed Task every task implements, whatever the project holds; its comments say what
    # gpu-bench makes of it.
    ("include_benchmarks", "src/{pkg}/tasks/base.py", "gpu-bench"),
    ("include_benchmarks", "src/{pkg}/tasks/image/task.py", "gpu-bench"),
    ("include_benchmarks", "src/{pkg}/tasks/text/task.py", "gpu-bench"),
    ("include_benchmarks", "src/{pkg}/tasks/tabular/task.py", "gpu-bench"),
    # The Kubeflow TFJob schema, vendored for the deploy tests, describes container images.
    ("include_docker", "tests/data/kubeflow.org_tfjobs.yaml", "docker"),
    ("include_docker", "tests/data/kubeflow.org_tfjobs.yaml", "Docker"),
    # scikit-learn's ColumnTransformer lives in sklearn.compose (the table baseline).
    ("include_docker", "src/{pkg}/tasks/tabular/baseline.py", "compose"),
}

# Words a bake of the task must not hold: the names of the other tasks' modules, data and models.
_TEXT_WORDS = (
    "tasks.text", "tasks/text", "banking77", "BANKING77", "TextVectorization", "bag_of_ngrams",
    "test_text_",
)  # fmt: skip
_IMAGE_WORDS = (
    "tasks.image", "tasks/image", "image_folder", "photo_io", "tfrecord_dir", "small_cnn",
    "resnet_small", "augment_bench", "test_data_photos", "gpu_reference.py", "train_benchmark_runs",
    "decode_jpeg", "decode_and_crop_jpeg",
    "keras.applications models have",  # 02's sentence on the image builders' knobs
)  # fmt: skip
_TABULAR_WORDS = (
    "tasks.tabular", "tasks/tabular", "census", "adult.data", "adult.test", "FeatureSpace",
    "test_tabular_",
)  # fmt: skip
MENTIONS_OF_OTHER_TASKS = {
    "image_classification": _TEXT_WORDS + _TABULAR_WORDS,
    "text_classification": _IMAGE_WORDS + _TABULAR_WORDS,
    "tabular_classification": _IMAGE_WORDS + _TEXT_WORDS,
}  # fmt: skip

NO_EXTRAS = {
    "include_tuning": False,
    "include_tensorrt": False,
    "include_serving": False,
    "include_benchmarks": False,
    "include_docker": False,
    "ci": "none",
}

SUPPORTED = [
    pytest.param({}, id="default"),
    pytest.param(NO_EXTRAS, id="minimal"),
    pytest.param({"include_docker": False}, id="no-docker"),
    pytest.param({"ci": "none"}, id="no-ci"),
    pytest.param({"include_tuning": False}, id="no-tuning"),
    pytest.param({"include_tensorrt": False}, id="no-tensorrt"),
    pytest.param({"include_serving": False}, id="no-serving"),
    pytest.param({"include_benchmarks": False}, id="no-benchmarks"),
    # the text and table bakes with every part declined (text-minimal holds what a
    # text-no-benchmarks bake checked: the benchmarks are declined there too)
    pytest.param({**NO_EXTRAS, "task": "text_classification"}, id="text-minimal"),
    pytest.param({**NO_EXTRAS, "task": "tabular_classification"}, id="tabular-minimal"),
    pytest.param({"tensorflow_version": "2.18", "python_version": "3.12"}, id="tf2.18-py3.12"),
    pytest.param({"tensorflow_version": "2.19", "python_version": "3.11"}, id="tf2.19-py3.11"),
    pytest.param(
        {"tensorflow_version": "2.20", "python_version": "3.13", "license": "Apache-2.0"},
        id="tf2.20-py3.13-apache",
    ),
    pytest.param(
        {"tensorflow_version": "2.21", "python_version": "3.13", "license": "BSD-3-Clause"},
        id="tf2.21-py3.13-bsd",
    ),
    pytest.param({"license": "Proprietary"}, id="proprietary-license"),
    pytest.param({"task": "text_classification"}, id="text"),
    pytest.param({"task": "tabular_classification"}, id="tabular"),
    pytest.param(
        {
            "project_name": "Vision Lab",
            "project_slug": "vision-lab",
            "package_name": "vislab",
            "author_email": "",
        },
        id="own-names-no-email",
    ),
]

# (command-line answers, a fragment of the sentence the user must see)
MUST_FAIL = [
    pytest.param(
        ["package_name=class"], "package_name 'class' is a Python keyword", id="package-keyword"
    ),
    pytest.param(
        ["package_name=tensorflow"],
        "package_name 'tensorflow' would shadow the tensorflow module",
        id="package-shadows-tensorflow",
    ),
    pytest.param(
        ["package_name=3d"], "package_name '3d' is not a Python identifier", id="package-digit"
    ),
    pytest.param(
        ["project_slug=Bad Slug"],
        "project_slug 'Bad Slug' is not a valid folder and distribution name",
        id="slug-with-space",
    ),
    pytest.param(
        ["python_version=3.13", "tensorflow_version=2.18"],
        "python_version 3.13 is not supported by TensorFlow 2.18",
        id="py3.13-tf2.18",
    ),
    pytest.param(
        ["project_name=Two\nlines"],
        r"project_name 'Two\nlines' contains a line break",
        id="name-with-newline",
    ),
    pytest.param(
        ["author_email=not-an-email"],
        "author_email 'not-an-email' is not an e-mail address",
        id="bad-email",
    ),
    # Refused by cookiecutter itself, before the hook: a choice it doesn't offer, a non-boolean.
    pytest.param(
        ["python_version=3.14"],
        "3.14 provided for choice variable python_version",
        id="python-not-offered",
    ),
    pytest.param(
        ["include_docker=maybe"],
        "maybe provided for variable include_docker could not be converted to a boolean",
        id="flag-not-boolean",
    ),
]

INJECTION_NAME = 'Robert"); import os; os.system("touch pwned") #"}} x'
INJECTION_DESCRIPTION = 'Say "hi"; it\'s a back\\slash, a """triple""" and a trailing backslash \\'

AWKWARD_TEXT = [
    pytest.param(INJECTION_DESCRIPTION, id="quotes-backslashes"),
    pytest.param("Ünïcödé, ß and 日本語", id="non-ascii"),
    pytest.param("Rockets 🚀 and 🧪 tubes", id="emoji"),
    pytest.param("<b>tags</b> & 'single' quotes", id="html-ish"),
    pytest.param("Braces {x} }} %} #} and $HOME", id="closing-braces"),
]

AWKWARD_NAMES = [
    pytest.param("Café Vision", "cafe-vision", "cafe_vision", id="accents"),
    pytest.param("3D Segmentation", "3d-segmentation", "tf_3d_segmentation", id="leading-digit"),
    pytest.param("Émile's GPU-Lab!", "emile-s-gpu-lab", "emile_s_gpu_lab", id="punctuation"),
    pytest.param("  Spaced   Out  ", "spaced-out", "spaced_out", id="spaces"),
    pytest.param("MixedCase NetV2", "mixedcase-netv2", "mixedcase_netv2", id="mixed-case"),
]

JINJA_NAMES = [
    pytest.param("{{ 7*7 }}", id="expression"),
    pytest.param('{{ "a" }', id="broken-expression"),
    pytest.param("{% raw %}x", id="unclosed-raw"),
    pytest.param("{# note #}Vision", id="comment"),
]

GITHUB_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
# Prometheus' alert templates (`{{ $labels.run }}`) and Grafana's legends (`{{task}}`) are copied
# without rendering (`_copy_without_render`); like the package, they must hold no Jinja meant to
# be rendered.
COPIED_VERBATIM = ("docker/monitoring/alerts", "docker/monitoring/grafana/")
TEMPLATE_SYNTAX = ("{{", "{%", "{#")
# The package is copied without rendering, so `{{` may be plain Python there ("{{" in a format
# string); what must never appear is Jinja that was meant to be rendered.
JINJA_IN_PACKAGE = re.compile(r"\{\{-?\s*cookiecutter\b|\{%-?\s*(?:if|for|set|raw|endif|endfor)\b")


@pytest.fixture(scope="module", params=SUPPORTED)
def baked(request, bake):
    """One supported combination, baked once for all the tests below."""
    return bake(request.param)


# ----------------------------------------------------------------------------- helpers


def declined(answers: dict, option: str) -> bool:
    return answers[option] == "none" if option == "ci" else not answers[option]


def expected_files(answers: dict, task_files: dict[str, list[str]]) -> set[str]:
    """FULL_BAKE without the files of each declined part; for another task than images, without
    the image task's files and with that task's (task_files: the hook's TASK_FILES, whose lists
    tests/test_text_task.py checks against each bake)."""
    task = answers["task"]
    swapped = set(task_files["image_classification"]) - set(task_files[task])
    own = {re.sub(r"^notebooks/[^/]+/", "notebooks/", p) for p in task_files[task]}
    removed = {
        path.format(pkg=answers["package_name"])
        for option, paths in REMOVED_WHEN_DECLINED.items()
        if declined(answers, option)
        for path in paths
    }
    manifest = (set(FULL_BAKE) - swapped) | (own if task != "image_classification" else set())
    files = {path.format(pkg=answers["package_name"]) for path in manifest}
    return files - removed


def pyproject(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def ruff(root: Path, *args: str) -> subprocess.CompletedProcess:
    """ruff run inside the baked project, so it reads the project's own configuration."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_ruff_clean(root: Path) -> None:
    lint = ruff(root, "check")
    assert lint.returncode == 0, f"ruff check in the baked project:\n{lint.stdout}{lint.stderr}"
    form = ruff(root, "format", "--check")
    assert form.returncode == 0, f"ruff format --check in the baked project:\n{form.stdout}"


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    pairs = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, arguments = line.partition(" ")
            pairs.append((instruction.upper(), arguments.strip()))
    return pairs


def substitute(text: str, values: dict[str, str]) -> str:
    """`${NAME}` and `$NAME` replaced by ARG defaults, as a build without --build-arg does."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), m.group(0)), text)


# ----------------------------------------------------------------------------- every combination


def test_file_set_is_the_manifest_minus_declined_parts(baked, post_gen):
    """The bake holds exactly FULL_BAKE, less the files of each part the user declined."""
    expected = expected_files(baked.answers, post_gen.TASK_FILES)
    missing, unexpected = sorted(expected - baked.files), sorted(baked.files - expected)
    assert not (missing or unexpected), (
        "baked file set differs from the manifest:\n"
        + "".join(f"  missing:    {path}\n" for path in missing)
        + "".join(f"  unexpected: {path}\n" for path in unexpected)
    )


def test_declined_parts_leave_no_mentions(baked):
    """Nothing in the bake (code, text, tests, file names) refers to a part the user declined,
    but for the short list of generic uses in MENTIONS_ALLOWED."""
    allowed = {(o, f.format(pkg=baked.package), w) for o, f, w in MENTIONS_ALLOWED}
    found = [
        f"{relative}:{number}: mentions {word!r} ({option} declined): {line.strip()}"
        for option, words in MENTIONS_WHEN_DECLINED.items()
        if declined(baked.answers, option)
        for relative, text in baked.text_files().items()
        for number, line in enumerate([relative, *text.splitlines()])
        for word in words
        if word in line and mentions(line, word) and (option, relative, word) not in allowed
    ]
    assert not found, "\n".join(found)


def test_a_bake_mentions_no_other_tasks_code(baked):
    """A bake holds its own task's code only: no file names another task's modules or data."""
    words = MENTIONS_OF_OTHER_TASKS[baked.answers["task"]]
    found = [
        f"{relative}:{number}: mentions {word!r}: {line.strip()}"
        for relative, text in baked.text_files().items()
        for number, line in enumerate([relative, *text.splitlines()])
        for word in words
        if word in line
    ]
    assert not found, "\n".join(found)


# What only the image task's step 1 does: it decodes JPEG records (tasks/image/decode.py).
IMAGE_DECODING = ("decode_jpeg", "decode_and_crop_jpeg")
TASK_FOLDERS = {"image_classification": "image", "text_classification": "text"}
TASK_FOLDERS["tabular_classification"] = "tabular"


def test_shared_code_decodes_no_image(baked):
    """The package outside its task's folder (tasks/<folder>/) holds no image decoding: in an
    image bake only tasks/image/ does, in a text or table bake nothing does (issue 43)."""
    own = f"src/{baked.package}/tasks/{TASK_FOLDERS[baked.answers['task']]}/"
    found = [
        f"{relative}:{number}: {line.strip()}"
        for relative, text in baked.text_files().items()
        if relative.startswith(f"src/{baked.package}/") and not relative.startswith(own)
        for number, line in enumerate(text.splitlines(), 1)
        if any(word in line for word in IMAGE_DECODING)
    ]
    assert not found, "image decoding outside the image task's folder:\n" + "\n".join(found)


def mentions(line: str, word: str) -> bool:
    """`word` in `line` as a word of its own (tune, not tuned... but tune_trials and 02_tune).
    Fine-tuning (training a pretrained backbone, the training recipe) is not the tuning part."""
    pattern = rf"(?<![A-Za-z])(?<![Ff]ine[-_ ]){re.escape(word)}(?![a-z])"
    return re.search(pattern, line) is not None


def test_optional_extras_follow_the_answers(baked):
    """keras-tuner is a dependency exactly with tuning, tensorflow-serving-api (same minor as
    TensorFlow) with serving, `trt` with TensorRT; `onnx` always."""
    project = pyproject(baked.root)["project"]
    extras = project.get("optional-dependencies", {})
    names = {Requirement(r).name for r in project["dependencies"]}
    assert ("keras-tuner" in names) == baked.answers["include_tuning"], names
    assert ("trt" in extras) == baked.answers["include_tensorrt"], extras
    serving = f"tensorflow-serving-api~={baked.answers['tensorflow_version']}.0"
    assert (serving in project["dependencies"]) == baked.answers["include_serving"], names
    assert "onnxruntime" in {Requirement(r).name for r in extras["onnx"]}, extras


def test_polygraphy_floor_finds_the_pip_cuda_runtime(baked):
    """The trt extra needs Polygraphy 0.53.4 or later: its CUDA wrapper is the first on PyPI to
    look in the nvidia-cuda-runtime wheel (0.50.3 and 0.49.x search only system paths, so a
    pip-only install cannot load libcudart)."""
    if not baked.answers["include_tensorrt"]:
        pytest.skip("TensorRT was declined in this combination, so there is no trt extra.")
    trt = pyproject(baked.root)["project"]["optional-dependencies"]["trt"]
    polygraphy = next(Requirement(r) for r in trt if Requirement(r).name == "polygraphy")
    assert not polygraphy.specifier.contains("0.50.3"), polygraphy
    assert polygraphy.specifier.contains("0.53.4"), polygraphy


def test_notebooks_are_clean_parameterized_nbformat4(baked):
    """Each notebook is valid nbformat 4 with one `parameters` cell, kernel python3, no outputs."""
    notebooks = sorted(path for path in baked.files if path.endswith(".ipynb"))
    assert notebooks, "the bake holds no notebook"
    for relative in notebooks:
        nb = nbformat.read(baked.root / relative, as_version=nbformat.NO_CONVERT)
        assert nb.nbformat == 4, f"{relative}: nbformat {nb.nbformat}"
        nbformat.validate(nb)
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{relative}: {len(tagged)} cells tagged 'parameters'"
        assert nb.metadata.kernelspec.name == "python3", f"{relative}: {nb.metadata.kernelspec}"
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [], f"{relative}: a cell carries outputs"
                assert cell.execution_count is None, f"{relative}: a cell has an execution count"


def test_no_template_syntax_is_left(baked):
    """No `{{`, `{%` or `{#` survives the bake (no Jinja in the package or the monitoring files
    copied verbatim); `${{ }}` and the monitoring files' own `{{ }}` do survive."""
    leftovers, github_expressions = [], 0
    monitoring_templates = dict.fromkeys(COPIED_VERBATIM, 0)
    verbatim = (f"src/{baked.package}/", *COPIED_VERBATIM)
    for relative, text in baked.text_files().items():
        if relative.startswith(".github/workflows/"):
            github_expressions += len(GITHUB_EXPRESSION.findall(text))
            text = GITHUB_EXPRESSION.sub("", text)
        for prefix in COPIED_VERBATIM:
            monitoring_templates[prefix] += text.count("{{") if relative.startswith(prefix) else 0
        leftovers += [
            f"{relative}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if (
                JINJA_IN_PACKAGE.search(line)
                if relative.startswith(verbatim)
                else any(mark in line for mark in TEMPLATE_SYNTAX)
            )
        ]
    assert not leftovers, "template syntax left in the bake:\n" + "\n".join(leftovers)
    if not declined(baked.answers, "ci"):
        assert github_expressions > 0, "the workflows lost their ${{ }} expressions"
    if baked.answers["include_docker"]:
        lost = [prefix for prefix, count in monitoring_templates.items() if not count]
        assert not lost, f"rendered, so their {{{{ }}}} templates are gone: {lost}"


def test_python_files_compile(baked):
    """Every .py file of the bake is valid Python."""
    texts = baked.text_files()
    errors = []
    for relative in sorted(path for path in baked.files if path.endswith(".py")):
        try:
            compile(texts[relative], relative, "exec")
        except SyntaxError as error:
            errors.append(f"{relative}:{error.lineno}: {error.msg}")
    assert not errors, "\n".join(errors)


def test_ruff_passes_with_the_projects_own_config(baked):
    """`ruff check` and `ruff format --check` pass inside the bake, with its pyproject config."""
    assert "ruff" in pyproject(baked.root).get("tool", {}), "pyproject.toml has no [tool.ruff]"
    assert_ruff_clean(baked.root)


def test_ruff_leaves_run_folders_alone(bake, tmp_path):
    """An executed notebook under artifacts/ (outputs, papermill's injected cells) is not the
    project's source: ruff in a bake that is not a git repository still skips it. The exclusion
    is the same line in every bake, so the default bake stands for all (ruff costs ~4 s a bake)."""
    root = shutil.copytree(bake({}).root, tmp_path / "project")
    executed = root / "artifacts" / "run" / "notebooks"
    executed.mkdir(parents=True)
    (executed / "cell.py").write_text("import os\nx=1;y=2\n", encoding="utf-8")
    assert_ruff_clean(root)


def test_toml_yaml_and_json_files_parse(baked):
    """Every TOML, YAML, JSON and notebook file of the bake parses."""
    errors, parsed = [], []
    for relative, text in baked.text_files().items():
        suffix = Path(relative).suffix
        try:
            if suffix == ".toml":
                tomllib.loads(text)
            elif suffix in (".yml", ".yaml"):
                yaml.safe_load(text)
            elif suffix in (".json", ".ipynb"):
                json.loads(text)
            else:
                continue
        except (tomllib.TOMLDecodeError, yaml.YAMLError, json.JSONDecodeError) as error:
            errors.append(f"{relative}: {error}")
        parsed.append(relative)
    assert not errors, "\n".join(errors)
    assert "pyproject.toml" in parsed


def test_pyproject_pins_the_chosen_versions(baked, pre_gen):
    """Pins the chosen TensorFlow minor and its Python range; gpu extra; script named after
    the package."""
    answers, project = baked.answers, pyproject(baked.root)["project"]
    tf, python, package = answers["tensorflow_version"], answers["python_version"], baked.package
    assert f"tensorflow~={tf}.0" in project["dependencies"], project["dependencies"]
    high = pre_gen.TF_PYTHON[tf][1].split(".")
    below = f"{high[0]}.{int(high[1]) + 1}"  # the newest Python this TensorFlow ships wheels for
    assert project["requires-python"] == f">={python},<{below}"
    gpu, nvml = (Requirement(r) for r in project["optional-dependencies"]["gpu"])
    assert (gpu.name, gpu.extras, str(gpu.specifier)) == ("tensorflow", {"and-cuda"}, f"~={tf}.0")
    assert nvml.name == "nvidia-ml-py"  # the exporter's per-GPU metrics
    assert project["scripts"] == {package: f"{package}.cli:main"}
    assert project["name"] == answers["project_slug"]
    assert project["description"] == answers["description"]
    ruff_target = pyproject(baked.root)["tool"]["ruff"]["target-version"]
    assert ruff_target == "py" + python.replace(".", "")


def test_pyproject_license_and_author_follow_the_answers(baked):
    """The SPDX licence is declared (none for Proprietary); the e-mail only when given."""
    answers, project = baked.answers, pyproject(baked.root)["project"]
    if answers["license"] == "Proprietary":
        assert "license" not in project
    else:
        assert project["license"] == answers["license"]
    author = {"name": answers["author_name"]}
    if answers["author_email"]:
        author["email"] = answers["author_email"]
    assert project["authors"] == [author]


def test_package_folder_is_named_by_the_answer(baked):
    """The package folder under src/ carries the package name the user chose."""
    assert (baked.root / "src" / baked.package / "__init__.py").is_file()
    assert baked.root.name == baked.answers["project_slug"]


def test_docker_image_matches_the_choices(baked):
    """The image pins the chosen TensorFlow, uses the chosen Python and runs as a non-root user."""
    if not baked.answers["include_docker"]:
        pytest.skip("Docker was declined in this combination, so there is no image to inspect.")
    tf, python = baked.answers["tensorflow_version"], baked.answers["python_version"]
    text = baked.text("docker/Dockerfile")
    instructions = dockerfile_instructions(text)
    defaults = [arg for name, arg in instructions if name == "ARG" and "=" in arg]
    args = dict(arg.split("=", 1) for arg in defaults)  # ARG NAME=default
    tf_args = {name: value for name, value in args.items() if re.search("TF|TENSORFLOW", name)}
    pins = re.findall(r"tensorflow(?:\[[^\]]*\])?\s*(?:==|~=)\s*([0-9.]+)", text)
    assert tf_args or pins, "the Dockerfile names no TensorFlow version (ARG or pin)"
    for value in [*tf_args.values(), *pins]:
        assert value == tf or value.startswith(f"{tf}."), f"TensorFlow {value} in the image"
    stages = [i for i, (name, _) in enumerate(instructions) if name == "FROM"]
    assert stages, "the Dockerfile has no FROM"
    base = substitute(instructions[stages[-1]][1].split()[0], args)
    tag = base.rpartition(":")[2]
    assert re.match(rf"{re.escape(python)}(\D|$)", tag), f"base image {base} for Python {python}"
    extras = pyproject(baked.root)["project"]["optional-dependencies"]
    assert args.get("INFERENCE_EXTRA") == "onnx" and "onnx" in extras, args
    assert "extra['${INFERENCE_EXTRA}']" in text, "the image ignores INFERENCE_EXTRA"
    users = [arg for name, arg in instructions[stages[-1] :] if name == "USER"]
    assert users, "the final stage sets no USER, so it runs as root"
    assert users[-1].split(":")[0] not in ("root", "0"), f"final USER is {users[-1]}"


def test_compose_binds_loopback_and_reserves_gpus(baked):
    """compose.yml publishes ports on 127.0.0.1 only and reserves the NVIDIA GPUs."""
    if not baked.answers["include_docker"]:
        pytest.skip("Docker was declined in this combination, so there is no compose file.")
    services = yaml.safe_load(baked.text("docker/compose.yml"))["services"]
    ports = [port for service in services.values() for port in service.get("ports", [])]
    assert ports, "compose publishes no port"
    for port in ports:
        host_ip = port.get("host_ip") if isinstance(port, dict) else str(port).split(":")[0]
        assert host_ip == "127.0.0.1", f"port {port} is reachable from other machines"
    devices = [
        device
        for service in services.values()
        for device in service.get("deploy", {})
        .get("resources", {})
        .get("reservations", {})
        .get("devices", [])
    ]
    assert any(
        d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) for d in devices
    ), f"no NVIDIA GPU reservation in compose: {devices}"


def test_compose_gives_the_lab_shared_memory_for_nccl(baked):
    """compose.yml passes the compose-spec schema (check-jsonschema's copy) and gives the lab at
    least 1 GB of /dev/shm: NCCL across GPUs fails in Docker's 64 MB default."""
    if not baked.answers["include_docker"]:
        pytest.skip("Docker was declined in this combination, so there is no compose file.")
    from importlib.resources import files

    import jsonschema

    document = yaml.safe_load(baked.text("docker/compose.yml"))
    vendored = files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(vendored.read_text(encoding="utf-8"))
    errors = jsonschema.validators.validator_for(schema)(schema).iter_errors(document)
    assert [error.message for error in errors] == []
    shm = str(document["services"]["lab"].get("shm_size", "64m")).lower()
    number, unit = re.fullmatch(r"(\d+)\s*([kmg]?)b?", shm).groups()
    assert int(number) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[unit] >= 2**30, shm


# ----------------------------------------------------------------------------- refused answers


@pytest.mark.parametrize(("pairs", "sentence"), MUST_FAIL)
def test_unsupported_answers_fail_with_a_sentence_and_write_nothing(
    cookiecutter_cli, tmp_path, pairs, sentence
):
    """A refused answer exits non-zero, names the value on stderr and leaves no folder behind."""
    out = tmp_path / "out"
    out.mkdir()
    result = cookiecutter_cli(out, *pairs)
    assert result.returncode != 0, result.stdout
    assert sentence in result.stderr, result.stderr
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("word", "included"),
    [(word, False) for word in ("no", "false", "n", "0", "off")]
    + [(word, True) for word in ("yes", "true", "y", "1", "on")],
)
def test_yes_no_words_from_the_command_line_are_honoured(
    cookiecutter_cli, tmp_path, word, included
):
    """`include_x=no/false/n/0/off` declines a part and `yes/true/y/1/on` keeps it."""
    result = cookiecutter_cli(tmp_path, f"include_tuning={word}", f"include_docker={word}")
    assert result.returncode == 0, result.stderr
    (root,) = tmp_path.iterdir()
    assert (root / "docker").exists() is included
    assert (root / "notebooks" / "02_tune.ipynb").exists() is included
    names = {Requirement(r).name for r in pyproject(root)["project"]["dependencies"]}
    assert ("keras-tuner" in names) is included


def test_rebaking_with_f_over_a_project_keeps_the_users_own_files(cookiecutter_cli, tmp_path):
    """`cookiecutter -f` with Docker and tuning declined, over a bake the user has added to,
    removes the template's files of those parts and keeps the user's own beside them."""
    assert cookiecutter_cli(tmp_path).returncode == 0
    (root,) = tmp_path.iterdir()
    own = [
        root / "docker" / "MyOwn.Dockerfile",
        root / "src" / root.name.replace("-", "_") / "tune",
    ]
    own[0].write_text("FROM scratch\n", encoding="utf-8")
    (own[1] / "my_space.py").write_text("SPACE = {}\n", encoding="utf-8")
    again = cookiecutter_cli(tmp_path, "-f", "include_docker=no", "include_tuning=no")
    assert again.returncode == 0, again.stderr
    assert own[0].read_text(encoding="utf-8") == "FROM scratch\n"
    assert [p.name for p in own[1].iterdir()] == ["my_space.py"]
    assert [p.name for p in (root / "docker").iterdir()] == ["MyOwn.Dockerfile"]


def test_copied_verbatim_means_files_never_folders(template):
    """`_copy_without_render` names files only: every file of the package and of the monitoring
    templates is matched, no folder is (cookiecutter -f deletes a matched folder whole before
    copying it, and a user's own module in it with it)."""
    from cookiecutter.generate import is_copy_only_path

    context = {"cookiecutter": json.loads((template / "cookiecutter.json").read_text())}
    project = template / "{{cookiecutter.project_slug}}"
    verbatim = [project / "src", project / "docker" / "monitoring" / "grafana"]
    paths = [p for folder in verbatim for p in folder.rglob("*") if "__pycache__" not in p.parts]
    matched = {
        p.relative_to(project).as_posix()
        for p in paths
        if is_copy_only_path(p.relative_to(project).as_posix(), context)
    }
    assert [p for p in paths if p.is_dir() and p.relative_to(project).as_posix() in matched] == []
    files = {p.relative_to(project).as_posix() for p in paths if p.is_file()}
    assert files and files - matched == set()


# ----------------------------------------------------------------------------- awkward input


def test_a_name_that_tries_to_inject_code_is_only_text(cookiecutter_cli, tmp_path, template):
    """A name and description full of quotes run nothing and reach pyproject.toml unchanged."""
    out = tmp_path / "out"
    out.mkdir()
    result = cookiecutter_cli(
        out, f"project_name={INJECTION_NAME}", f"description={INJECTION_DESCRIPTION}"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (root,) = out.iterdir()
    assert f"Baked {root.name}." in result.stdout  # the post-gen hook ran to its end
    for place in (tmp_path, template, Path.cwd()):
        assert not [p for p in place.rglob("pwned") if p.name == "pwned"], place
    project = pyproject(root)["project"]
    assert project["description"] == INJECTION_DESCRIPTION
    assert project["name"] == root.name


@pytest.mark.parametrize("text", AWKWARD_TEXT)
def test_awkward_free_text_reaches_pyproject_unchanged(bake, text):
    """Quotes, backslashes, accents and emoji in name, description and author survive exactly."""
    baked = bake({"project_name": f"Awkward {text}", "description": text, "author_name": text})
    project = pyproject(baked.root)["project"]
    assert project["description"] == text
    assert project["authors"][0]["name"] == text


@pytest.mark.parametrize("name", JINJA_NAMES)
def test_a_name_holding_jinja_is_refused_cleanly_or_baked_whole(cookiecutter_cli, tmp_path, name):
    """cookiecutter renders answers as Jinja: it either refuses with nothing written, or bakes
    a whole project whose pyproject parses and whose name follows the slug rule."""
    out = tmp_path / "out"
    out.mkdir()
    result = cookiecutter_cli(out, f"project_name={name}")
    folders = list(out.iterdir())
    if result.returncode != 0:
        assert folders == [], f"refused, but left {folders} behind"
        return
    (root,) = folders
    assert pyproject(root)["project"]["name"] == root.name
    assert re.fullmatch(r"[a-z0-9]+(?:[._-][a-z0-9]+)*", root.name), root.name


@pytest.mark.parametrize(("name", "slug", "package"), AWKWARD_NAMES)
def test_awkward_names_give_a_valid_slug_and_package(bake, pre_gen, name, slug, package):
    """Accents, spaces, digits and punctuation become a valid slug and ASCII package that lint."""
    baked = bake({"project_name": name})
    assert (baked.answers["project_slug"], baked.package) == (slug, package)
    assert pre_gen.SLUG.match(slug)
    assert package.isascii() and package.isidentifier()
    assert pyproject(baked.root)["project"]["name"] == slug
    assert (baked.root / "src" / package / "__init__.py").is_file()
    assert_ruff_clean(baked.root)


def test_hook_and_doctor_agree_on_supported_versions(bake, pre_gen, template):
    """The Python range the pre-gen hook enforces is the one `doctor` checks, per offered TF."""
    baked = bake({})
    tree = ast.parse(baked.text(f"src/{baked.package}/env/versions.py"))
    table = next(node for node in ast.walk(tree) if isinstance(node, ast.DictComp))
    rows = ast.literal_eval(table.generators[0].iter)
    doctor = {minor: (low, high) for minor, low, high, _cudnn in rows}
    offered = json.loads((template / "cookiecutter.json").read_text())["tensorflow_version"]
    assert doctor == pre_gen.TF_PYTHON
    assert sorted(offered) == sorted(doctor)


FAKE_PYTHON = """#!/bin/sh
# A stand-in venv python: `pip show` answers $FAKE_SHOW (0: installed), the rest is echoed.
if [ "$1 $2 $3" = "-m pip show" ]; then exit "${FAKE_SHOW:-1}"; fi
echo "python $*"
"""


def make_setup(root: Path, venv: Path, *args: str, show: int = 1) -> subprocess.CompletedProcess:
    """`make setup` in the bake against a stand-in venv, so no package is installed."""
    if not (venv / "bin" / "python").exists():
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").write_text(FAKE_PYTHON, encoding="utf-8")
        (venv / "bin" / "python").chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "FAKE_SHOW": str(show)}
    command = ["make", "--no-print-directory", "setup", f"VENV={venv}", *args]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)


_CLI_HELP: dict[Path, str] = {}


def baked_cli(baked: Baked, *args: str) -> subprocess.CompletedProcess:
    """The bake's command line, from its src/ (not installed), in a fresh interpreter. Its
    bytecode goes to a folder beside the bake, not into it (the file-set tests read the bake),
    and is kept for the bake's next command (compiling the package each time took seconds)."""
    pycache = baked.root.parent / f"{baked.root.name}.pycache"
    env = {**os.environ, "PYTHONPATH": str(baked.root / "src"), "PYTHONPYCACHEPREFIX": str(pycache)}
    command = [sys.executable, "-m", baked.package, *args]
    return subprocess.run(
        command, cwd=baked.root, env=env, capture_output=True, text=True, timeout=120
    )


def baked_cli_help(baked: Baked) -> str:
    """`<package> --help` of the bake, run once for both tests below (each run imports TF)."""
    if baked.root not in _CLI_HELP:
        done = baked_cli(baked, "--help")
        assert done.returncode == 0, done.stderr
        _CLI_HELP[baked.root] = done.stdout
    return _CLI_HELP[baked.root]


def test_without_serving_the_cli_has_no_serve_command(baked):
    """Without serving, `serve` is not a command at all (argparse's own refusal, exit 2), and
    nothing in --help names it."""
    if baked.answers["include_serving"]:
        pytest.skip("Serving is included in this combination: `serve` is tested in the bake.")
    done = baked_cli(baked, "serve", "status", "--run-dir", "x")
    assert done.returncode == 2 and "invalid choice: 'serve'" in done.stderr, done.stderr
    assert "serve" not in baked_cli_help(baked).replace("serving", "")


def importable(module: str) -> bool:
    """Whether this interpreter has `module` (a dotted name whose parent may be missing too)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def test_without_benchmarks_the_cli_has_no_gpu_bench_command(baked):
    """Without the benchmarks, `gpu-bench` is not a command (argparse's refusal, exit 2), and
    neither `--help` nor `make help` names it or `make bench`."""
    if baked.answers["include_benchmarks"]:
        pytest.skip("The benchmarks are included in this combination: gpu-bench is tested there.")
    if baked.answers["include_serving"] and not importable("google.protobuf"):
        pytest.skip(
            "This bake's command line imports TF Serving's protos (serving is included) and this "
            "environment has no protobuf: the minimal bake checks gpu-bench's absence without them."
        )
    done = baked_cli(baked, "gpu-bench", "--quick", "--run-dir", "x")
    assert done.returncode == 2 and "invalid choice: 'gpu-bench'" in done.stderr, done.stderr
    assert "gpu-bench" not in baked_cli_help(baked)
    targets = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=baked.root, capture_output=True, text=True
    ).stdout
    assert "  lint " in targets and not re.search(r"^  bench", targets, re.MULTILINE), targets


def test_setup_remembers_extras_and_refuses_two_onnxruntimes(baked, tmp_path):
    """The venv keeps the extras setup installed; onnx with trt, or trt over a CPU
    onnxruntime, is refused in one sentence before pip runs."""
    venv = tmp_path / "venv"
    extras = "dev,gpu,trt" if baked.answers["include_tensorrt"] else "dev,onnx,gpu"
    first = make_setup(baked.root, venv, f"EXTRAS={extras}")
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"-e .[{extras}]" in first.stdout
    assert (venv / ".extras").read_text(encoding="utf-8").strip() == extras
    again = make_setup(baked.root, venv)  # no EXTRAS: the remembered ones, already installed
    assert again.returncode == 0 and "pip install" not in again.stdout, again.stdout
    if not baked.answers["include_tensorrt"]:
        return
    both = make_setup(baked.root, tmp_path / "both", "EXTRAS=dev,onnx,trt")
    assert both.returncode == 2 and "names both onnx and trt" in both.stdout, both.stdout
    over_cpu = make_setup(baked.root, tmp_path / "cpu", "EXTRAS=dev,gpu,trt", show=0)
    assert over_cpu.returncode == 2 and "make distclean" in over_cpu.stdout, over_cpu.stdout
    for refused in (both, over_cpu):
        assert "pip install" not in refused.stdout
        assert len(refused.stdout.strip().splitlines()) == 1
