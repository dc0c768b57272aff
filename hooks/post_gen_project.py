"""Remove the parts the user declined, then print the next commands to run.

One small function per declined part; `main()` reads like the checklist. Answers are read as data.
The file is valid Python before rendering, so tests can import it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# The files (relative to the baked project) that belong to each optional part; {pkg} is the
# package. Files, never folders: a re-bake with `cookiecutter -f` over a project removes what the
# template wrote and leaves a user's own files beside them (tests/test_hooks.py checks that these
# lists name every file the template has in those folders).
DOCKER = [
    ".dockerignore",
    "docker/Dockerfile",
    "docker/compose.yml",
    "docker/compose.monitoring.yml",
    "docker/compose.serving.yml",
    "docker/monitoring/alerts.test.yml",
    "docker/monitoring/alerts.yml",
    "docker/monitoring/grafana/dashboards/training.json",
    "docker/monitoring/grafana/provisioning/dashboards/dashboards.yml",
    "docker/monitoring/grafana/provisioning/datasources/prometheus.yml",
    "docker/monitoring/prometheus.yml",
    "tests/test_monitoring.py",
    "tests/test_mutants_alerts.py",
    "tests/test_prometheus_scrape.py",
    "tests/test_serving_compose.py",
]
GITHUB_CI = [".github/dependabot.yml", ".github/workflows/ci.yml"]
TUNING = [
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
    "tests/test_tabular_tune.py",  # the table task's search of its default model
    "tests/test_text_tune_space.py",  # the text task's own search space
    "tests/test_tune.py",
    "tests/test_tune_progress.py",
    "tests/test_tune_shared.py",  # the search on the fake task, in every bake that tunes
    "tests/test_tune_workers_shared.py",  # its chief and workers, on the fake task too
]
SERVING = [
    "src/{pkg}/export/rest.py",  # TF Serving's REST request, answer and client
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
    "tests/test_serving_faults.py",
]
SERVING_DOCKER = ["docker/compose.serving.yml", "tests/test_serving_compose.py"]
DASHBOARD = "docker/monitoring/grafana/dashboards/training.json"  # its TF Serving row goes too
# Cells (by id) of the notebooks that every project has, about one optional part.
TUNING_CELLS = {"notebooks/03_train.ipynb": ("tuning-note",)}
SERVING_CELLS = {
    "notebooks/04_export.ipynb": ("serving", "serving-versions-why", "serving-versions"),
}
# The benchmarks: gpu-bench (the seed's GPU claims measured, notebook 00's last cells) and
# `make bench` (the image task's training speed, the text and table models' accuracy on the whole
# data set, the image task's augmentation timing); the data step's pipeline benchmark stays.
BENCHMARKS = [
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
]
BENCHMARK_CELLS = {"notebooks/00_environment.ipynb": ("gpu-bench", "gpu-bench-table")}
TENSORRT = [
    "src/{pkg}/optimize/ort_engine.py",  # ONNX Runtime's TensorRT provider (onnx_backend.engine)
    "src/{pkg}/optimize/tensorrt_engine.py",
    "src/{pkg}/optimize/tf_trt.py",
    "tests/test_optimize_gpu_sessions.py",  # fakes of the engine provider's sessions
    "tests/test_optimize_tensorrt.py",
]


# The files of each task (its folder tasks/<folder>/ behind the seam every bake holds, and the
# modules and tests only it uses): a bake keeps its own task's and loses the others' (the
# `task` question; hooks/pre_gen_project.py refuses a task not listed here).
TASK_FILES = {
    "image_classification": [
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
        "tests/photos.py",
        "tests/test_data_cache.py",
        "tests/test_data_folder_kinds.py",
        "tests/test_data_photos.py",
        "tests/test_data_pipeline.py",
        "tests/test_data_records.py",
        "tests/test_export.py",
        "tests/test_figures.py",
        "tests/test_models.py",
        "tests/test_mutants_augment.py",
        "tests/test_mutants_crop.py",
        "tests/test_mutants_photos.py",
        "tests/test_mutants_photos_shards.py",
        "tests/test_mutants_variants.py",
        "tests/test_optimize.py",
        "tests/test_optimize_tensorrt.py",
        "tests/test_prometheus_scrape.py",
        "tests/test_run_folder.py",
        "tests/test_train.py",
        "tests/test_train_benchmark.py",
        "tests/test_train_recipe.py",
        "tests/test_train_recipe_gpu.py",
        "tests/test_tune.py",
        "tests/test_write_failures.py",
    ],
    "text_classification": [
        "notebooks/text/01_data.ipynb",
        "src/{pkg}/tasks/text/__init__.py",
        "src/{pkg}/tasks/text/audit.py",
        "src/{pkg}/tasks/text/banking77/LICENSE",
        "src/{pkg}/tasks/text/banking77/README.md",
        "src/{pkg}/tasks/text/banking77/categories.json",
        "src/{pkg}/tasks/text/banking77/test.csv.gz",
        "src/{pkg}/tasks/text/banking77/train.csv.gz",
        "src/{pkg}/tasks/text/baseline.py",
        "src/{pkg}/tasks/text/benchmark.py",
        "src/{pkg}/tasks/text/data_step.py",
        "src/{pkg}/tasks/text/dataset.py",
        "src/{pkg}/tasks/text/early.py",
        "src/{pkg}/tasks/text/export.py",
        "src/{pkg}/tasks/text/files.py",
        "src/{pkg}/tasks/text/hub.py",
        "src/{pkg}/tasks/text/hub_data.py",
        "src/{pkg}/tasks/text/hub_export.py",
        "src/{pkg}/tasks/text/hub_names.py",
        "src/{pkg}/tasks/text/mistakes.py",
        "src/{pkg}/tasks/text/models.py",
        "src/{pkg}/tasks/text/pipeline.py",
        "src/{pkg}/tasks/text/plots.py",
        "src/{pkg}/tasks/text/records.py",
        "src/{pkg}/tasks/text/scores.py",
        "src/{pkg}/tasks/text/task.py",
        "src/{pkg}/tasks/text/sources.py",
        "src/{pkg}/tasks/text/vocab.py",
        "tests/bench_text.py",
        "tests/test_text_banking77.py",
        "tests/test_text_chain.py",
        "tests/test_text_baseline.py",
        "tests/test_text_data_step.py",
        "tests/test_text_inputs.py",
        "tests/test_text_export.py",
        "tests/test_text_hub.py",
        "tests/test_text_models.py",
        "tests/test_text_mutants.py",
        "tests/test_text_mutants_words.py",
        "tests/test_text_pipeline.py",
        "tests/test_text_replicas.py",
        "tests/test_text_scores.py",
        "tests/test_text_serving.py",
        "tests/test_text_sources.py",
        "tests/test_text_tune_space.py",
        "tests/test_text_vocab.py",
    ],
    "tabular_classification": [
        "notebooks/tabular/01_data.ipynb",
        "src/{pkg}/tasks/tabular/__init__.py",
        "src/{pkg}/tasks/tabular/baseline.py",
        "src/{pkg}/tasks/tabular/blocks.py",
        "src/{pkg}/tasks/tabular/census/LICENSE",
        "src/{pkg}/tasks/tabular/census/README.md",
        "src/{pkg}/tasks/tabular/census/adult.data.gz",
        "src/{pkg}/tasks/tabular/census/adult.test.gz",
        "src/{pkg}/tasks/tabular/columns.py",
        "src/{pkg}/tasks/tabular/compare.py",
        "src/{pkg}/tasks/tabular/data_plots.py",
        "src/{pkg}/tasks/tabular/data_step.py",
        "src/{pkg}/tasks/tabular/dataset.py",
        "src/{pkg}/tasks/tabular/early.py",
        "src/{pkg}/tasks/tabular/export.py",
        "src/{pkg}/tasks/tabular/features.py",
        "src/{pkg}/tasks/tabular/knobs.py",
        "src/{pkg}/tasks/tabular/models.py",
        "src/{pkg}/tasks/tabular/plots.py",
        "src/{pkg}/tasks/tabular/reading.py",
        "src/{pkg}/tasks/tabular/schema.py",
        "src/{pkg}/tasks/tabular/scores.py",
        "src/{pkg}/tasks/tabular/screens.py",
        "src/{pkg}/tasks/tabular/sources.py",
        "src/{pkg}/tasks/tabular/tables.py",
        "src/{pkg}/tasks/tabular/tabm.py",
        "src/{pkg}/tasks/tabular/task.py",
        "src/{pkg}/tasks/tabular/weights.py",
        "tests/bench_tabular.py",
        "tests/tables.py",
        "tests/test_tabular_baseline.py",
        "tests/test_tabular_chain.py",
        "tests/test_tabular_compare.py",
        "tests/test_tabular_data_step.py",
        "tests/test_tabular_bad_input.py",
        "tests/test_tabular_export.py",
        "tests/test_tabular_features.py",
        "tests/test_tabular_knobs.py",
        "tests/test_tabular_models.py",
        "tests/test_tabular_mutants.py",
        "tests/test_tabular_mutants_sources.py",
        "tests/test_tabular_replicas.py",
        "tests/test_tabular_schema.py",
        "tests/test_tabular_shapes.py",
        "tests/test_tabular_sources.py",
        "tests/test_tabular_tabm.py",
        "tests/test_tabular_tune.py",
        "tests/test_tabular_weights.py",
    ],
}


def main(answers: dict, root: Path) -> int:
    remove_other_tasks(root, answers["package_name"], answers.get("task", "image_classification"))
    if not answers["include_tuning"]:
        remove_tuning(root, answers["package_name"])
    if not answers["include_tensorrt"]:
        remove_tensorrt(root, answers["package_name"])
    if not answers["include_serving"]:
        remove_serving(root, answers["package_name"], docker=answers["include_docker"])
    if not answers.get("include_benchmarks", True):
        remove_benchmarks(root, answers["package_name"])
    if not answers["include_docker"]:
        remove_docker(root)
    if answers["ci"] != "github":
        remove_github_ci(root)
    print_next_steps(answers)
    return 0


def remove_other_tasks(root: Path, package: str, task: str) -> None:
    """Only the chosen task's folder, data and tests stay; its own notebooks (notebooks/<folder>/,
    e.g. text's 01_data) take the place of the image task's."""
    for other, paths in TASK_FILES.items():
        if other != task:
            remove(root, [path.format(pkg=package) for path in paths])
    own = [path for path in TASK_FILES.get(task, []) if path.startswith("notebooks/")]
    for relative in own:
        (root / relative).replace(root / "notebooks" / Path(relative).name)
    remove(root, own)  # the emptied notebooks/<folder>/


def remove_tuning(root: Path, package: str) -> None:
    """No tuning: notebook 02, the tune module and its tests go (training runs without them), with
    notebook 03's cell about step 2."""
    remove(root, [path.format(pkg=package) for path in TUNING])
    remove_cells(root, TUNING_CELLS)


def remove_tensorrt(root: Path, package: str) -> None:
    """No TensorRT: its two backends and their tests go (the ONNX backend finds them missing)."""
    remove(root, [path.format(pkg=package) for path in TENSORRT])


def remove_serving(root: Path, package: str, docker: bool = True) -> None:
    """No TF Serving: the serve module (configs, labels, load test), its tests and its compose
    file go (export still writes the SavedModel; the CLI says serving was declined)."""
    paths = [path.format(pkg=package) for path in SERVING]
    remove(root, paths + (SERVING_DOCKER if docker else []))
    remove_cells(root, SERVING_CELLS)
    if docker:
        remove_serving_panels(root / DASHBOARD)


def remove_benchmarks(root: Path, package: str) -> None:
    """No benchmarks: gpu-bench, `make bench` and their tests go, with notebook 00's gpu-bench
    cells (the data step's pipeline benchmark is step 1's own and stays)."""
    remove(root, [path.format(pkg=package) for path in BENCHMARKS])
    remove_cells(root, BENCHMARK_CELLS)


def remove_docker(root: Path) -> None:
    """No Docker: the GPU image and the compose files go, TF Serving's and the monitoring
    stack's included, with the monitoring stack's tests."""
    remove(root, DOCKER)


def remove_github_ci(root: Path) -> None:
    """No GitHub Actions: the workflows folder goes."""
    remove(root, GITHUB_CI)


def remove(root: Path, paths: list[str]) -> None:
    """Delete these files (a missing one is fine), the bytecode Python cached for them, and the
    folders that this leaves empty; a file the template did not write stays, with its folder."""
    folders: set[Path] = set()
    for relative in paths:
        path = root / relative
        path.unlink(missing_ok=True)
        for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
            cached.unlink()
        folders.update(path.parents[: len(Path(relative).parents) - 1])
    for folder in sorted(folders, key=lambda folder: len(folder.parts), reverse=True):
        for empty in (folder / "__pycache__", folder):
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()


def remove_cells(root: Path, cells: dict[str, tuple[str, ...]]) -> None:
    """Drop the cells with these ids from these notebooks (nbformat's JSON layout kept)."""
    for relative, ids in cells.items():
        path = root / relative
        if not path.is_file():
            continue
        notebook = json.loads(path.read_text(encoding="utf-8"))
        notebook["cells"] = [cell for cell in notebook["cells"] if cell.get("id") not in ids]
        text = json.dumps(notebook, indent=1, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")


def remove_serving_panels(path: Path) -> None:
    """Drop the Grafana dashboard's TF Serving row and panels (those querying its metrics)."""
    if not path.is_file():
        return
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    dashboard["panels"] = [
        panel
        for panel in dashboard["panels"]
        if "tensorflow:serving" not in json.dumps(panel)
        and not panel.get("title", "").startswith("TF Serving")
    ]
    dashboard["description"] = dashboard["description"].replace(", and TF Serving.", ".")
    path.write_text(json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def print_next_steps(answers: dict) -> None:
    slug, package = answers["project_slug"], answers["package_name"]
    print(
        f"\nBaked {slug}. Next:\n"
        f"  cd {slug}\n"
        "  make setup                 # virtual environment + the project and its dev tools\n"
        f"  make doctor                # {package} doctor: GPUs, driver, CUDA/cuDNN, precision\n"
        "  make run PROFILE=smoke     # the notebook chain headlessly, in seconds on a CPU\n"
        "  make lab                   # JupyterLab with a token, to read and tweak the notebooks\n"
        "  make test                  # unit tests and notebook tests\n"
    )


if __name__ == "__main__":
    ANSWERS = {
        "project_slug": json.loads(r""" {{ cookiecutter.project_slug | tojson }} """),
        "package_name": json.loads(r""" {{ cookiecutter.package_name | tojson }} """),
        "include_docker": json.loads(r""" {{ cookiecutter.include_docker | tojson }} """),
        "include_tuning": json.loads(r""" {{ cookiecutter.include_tuning | tojson }} """),
        "include_tensorrt": json.loads(r""" {{ cookiecutter.include_tensorrt | tojson }} """),
        "include_serving": json.loads(r""" {{ cookiecutter.include_serving | tojson }} """),
        "include_benchmarks": json.loads(r""" {{ cookiecutter.include_benchmarks | tojson }} """),
        "ci": json.loads(r""" {{ cookiecutter.ci | tojson }} """),
        "task": json.loads(r""" {{ cookiecutter.task | tojson }} """),
    }
    sys.exit(main(ANSWERS, Path.cwd()))
