"""Remove the parts the user declined, then print the next commands to run.

One small function per declined part; `main()` reads like the checklist. Answers are read as data.
The file is valid Python before rendering, so tests can import it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

# Paths (relative to the baked project) that belong to each optional part; {pkg} is the package.
DOCKER = [
    "docker",
    ".dockerignore",
    "tests/test_monitoring.py",
    "tests/test_mutants_alerts.py",
    "tests/test_prometheus_scrape.py",
]
GITHUB_CI = [".github"]
TUNING = ["notebooks/02_tune.ipynb", "src/{pkg}/tune", "tests/test_tune.py"]
SERVING = ["src/{pkg}/serve", "tests/test_serving.py", "tests/test_mutants_serve.py"]
SERVING_DOCKER = ["docker/compose.serving.yml"]
TENSORRT = [
    "src/{pkg}/optimize/tensorrt_engine.py",
    "src/{pkg}/optimize/tf_trt.py",
    "tests/test_optimize_tensorrt.py",
]


def main(answers: dict, root: Path) -> int:
    if not answers["include_tuning"]:
        remove_tuning(root, answers["package_name"])
    if not answers["include_tensorrt"]:
        remove_tensorrt(root, answers["package_name"])
    if not answers["include_serving"]:
        remove_serving(root, answers["package_name"], docker=answers["include_docker"])
    if not answers["include_docker"]:
        remove_docker(root)
    if answers["ci"] != "github":
        remove_github_ci(root)
    print_next_steps(answers)
    return 0


def remove_tuning(root: Path, package: str) -> None:
    """No tuning: notebook 02, the tune module and its tests go (training runs without them)."""
    remove(root, [path.format(pkg=package) for path in TUNING])


def remove_tensorrt(root: Path, package: str) -> None:
    """No TensorRT: its two backends and their tests go (the ONNX backend finds them missing)."""
    remove(root, [path.format(pkg=package) for path in TENSORRT])


def remove_serving(root: Path, package: str, docker: bool = True) -> None:
    """No TF Serving: the serve module (configs, labels, load test), its tests and its compose
    file go (export still writes the SavedModel; the CLI says serving was declined)."""
    paths = [path.format(pkg=package) for path in SERVING]
    remove(root, paths + (SERVING_DOCKER if docker else []))


def remove_docker(root: Path) -> None:
    """No Docker: the GPU image and the compose files go, TF Serving's and the monitoring
    stack's included, with the monitoring stack's tests."""
    remove(root, DOCKER)


def remove_github_ci(root: Path) -> None:
    """No GitHub Actions: the workflows folder goes."""
    remove(root, GITHUB_CI)


def remove(root: Path, paths: list[str]) -> None:
    for relative in paths:
        path = root / relative
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


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
        "ci": json.loads(r""" {{ cookiecutter.ci | tojson }} """),
    }
    sys.exit(main(ANSWERS, Path.cwd()))
