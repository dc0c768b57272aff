"""Refuse answers that would bake a broken project, before anything is written.

Each check returns one sentence that names the value and what is allowed. The answers are read as
data (`tojson`), never spliced into code, so a name full of quotes cannot break or inject this hook.
The file is valid Python before rendering: tests import it and call `problems()` directly.
"""

from __future__ import annotations

import json
import keyword
import re
import sys

# Everything up to the entry point is copied verbatim: it names template syntax as text.
# {% raw %}
# Python versions each offered TensorFlow ships wheels for (measured with pip against PyPI).
TF_PYTHON = {
    "2.18": ("3.9", "3.12"),
    "2.19": ("3.9", "3.12"),
    "2.20": ("3.9", "3.13"),
    "2.21": ("3.10", "3.13"),
}

# Modules the generated project imports: a package of the same name would shadow them.
SHADOWED = {
    "tensorflow", "keras", "numpy", "papermill", "nbformat", "nbclient", "yaml", "matplotlib",
    "sklearn", "scipy", "pandas", "tensorboard", "keras_tuner", "onnx", "onnxruntime", "tf2onnx",
    "tensorrt", "jupyter", "jupyterlab", "ipykernel", "IPython", "pytest", "nbval", "h5py",
    "google", "absl", "PIL", "tf_keras", "setuptools", "pip",
}  # fmt: skip

SLUG = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
EMAIL = re.compile(r"^[^@\s\"<>\\]+@[^@\s\"<>\\]+\.[^@\s\"<>\\]+$")
FREE_TEXT = ("project_name", "description", "author_name", "author_email")
FLAGS = (
    "include_tuning",
    "include_tensorrt",
    "include_serving",
    "include_benchmarks",
    "include_docker",
)
# What a bake's model learns (the `task` question): each bakes its own folder under tasks/ and the
# hook removes the others' modules, notebooks and tests (post_gen_project.TASK_FILES).
TASKS = ("image_classification", "text_classification", "tabular_classification")
# Answers given as text; the two derived ones default to these expressions (cookiecutter.json).
TYPED = (*FREE_TEXT, "project_slug", "package_name")
DERIVED_DEFAULTS = {
    "project_slug": "{{ cookiecutter.project_name | slugify }}",
    "package_name": "{% set p = cookiecutter.project_slug | replace('-', '_') %}"
    "{{ 'tf_' ~ p if p[:1].isdigit() else p }}",
}
JINJA = re.compile(r"\{\{|\{%|\{#")


def problems(answers: dict, given: dict | None = None) -> list[str]:
    """Every reason to refuse these answers, one sentence each (empty when they bake cleanly).

    `given` is what the answers were before cookiecutter rendered them (its `_cookiecutter`), or
    None where the tool keeps no such copy (cruft).
    """
    found = check_rendered(answers, given)
    checks = (
        check_text,
        check_slug,
        check_package,
        check_python,
        check_email,
        check_flags,
        check_task,
    )
    for check in checks:
        found.extend(check(answers))
    return found


def check_rendered(answers: dict, given: dict | None) -> list[str]:
    """An answer holding Jinja was rendered before any hook ran (its code has already run): refuse
    to bake with a value the user did not write. Only detectable when the tool kept the given
    answers; the template's own expressions for slug and package are not answers."""
    found = []
    for key in TYPED:
        typed = (given or {}).get(key)
        if not isinstance(typed, str) or not JINJA.search(typed):
            continue
        if typed == DERIVED_DEFAULTS.get(key) or typed == str(answers.get(key)):
            continue
        found.append(
            f"{key} {typed!r} holds template syntax that cookiecutter rendered to "
            f"{str(answers.get(key))!r} before this check: answers are data, so write the value "
            "itself, without '{{', '{%' or '{#', and never bake from an answer file you do not "
            "trust."
        )
    return found


def check_text(answers: dict) -> list[str]:
    """Line breaks and control characters would break one-line fields in TOML and JSON."""
    found = []
    for key in FREE_TEXT:
        value = str(answers.get(key, ""))
        if any(ord(char) < 32 or ord(char) == 127 for char in value):
            found.append(
                f"{key} {value!r} contains a line break or control character: use a single line."
            )
    if not str(answers.get("project_name", "")).strip():
        found.append("project_name is empty: give the project a name, e.g. 'Digits Classifier'.")
    return found


def check_slug(answers: dict) -> list[str]:
    slug = str(answers.get("project_slug", ""))
    if SLUG.match(slug):
        return []
    return [
        f"project_slug {slug!r} is not a valid folder and distribution name: use lowercase ASCII "
        "letters and digits, separated by single '-', '_' or '.', e.g. 'digits-classifier'."
    ]


def check_package(answers: dict) -> list[str]:
    name = str(answers.get("package_name", ""))
    if not (name.isascii() and name.isidentifier()):
        return [
            f"package_name {name!r} is not a Python identifier: use ASCII letters, digits and "
            "underscores, not starting with a digit, e.g. 'digits_classifier'."
        ]
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return [
            f"package_name {name!r} is a Python keyword: choose another, e.g. '{name}_project'."
        ]
    if name in SHADOWED or name in sys.stdlib_module_names:
        return [
            f"package_name {name!r} would shadow the {name} module the project imports: "
            f"choose another, e.g. '{name}_project'."
        ]
    return []


def check_python(answers: dict) -> list[str]:
    python, tf = str(answers.get("python_version")), str(answers.get("tensorflow_version"))
    if tf not in TF_PYTHON:
        return [f"tensorflow_version {tf!r} is not offered: use one of {', '.join(TF_PYTHON)}."]
    low, high = TF_PYTHON[tf]
    if not _version(low) <= _version(python) <= _version(high):
        return [
            f"python_version {python} is not supported by TensorFlow {tf} (it supports Python "
            f"{low} to {high}): choose another Python or TensorFlow version."
        ]
    return []


def check_email(answers: dict) -> list[str]:
    email = str(answers.get("author_email", ""))
    if not email or EMAIL.match(email):
        return []
    return [
        f"author_email {email!r} is not an e-mail address: use name@example.org, or leave it empty."
    ]


def check_flags(answers: dict) -> list[str]:
    """Old cookiecutters pass `include_x=no` on as the text "no", which Jinja takes as true."""
    return [
        f"{key} {answers[key]!r} reached the template as text, not yes/no: "
        "use cookiecutter 2.6 or newer, which turns yes/no/true/false into booleans."
        for key in FLAGS
        if key in answers and not isinstance(answers[key], bool)
    ]


def check_task(answers: dict) -> list[str]:
    task = answers.get("task", TASKS[0])
    if task in TASKS:
        return []
    return [f"task {task!r} is not a task this template bakes: use one of {', '.join(TASKS)}."]


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (0,)


def main(answers: dict, given: dict | None = None) -> int:
    found = problems(answers, given)
    for sentence in found:
        print(f"ERROR: {sentence}", file=sys.stderr)
    return 1 if found else 0


# {% endraw %}
if __name__ == "__main__":
    ANSWERS = {
        "project_name": json.loads(r""" {{ cookiecutter.project_name | tojson }} """),
        "project_slug": json.loads(r""" {{ cookiecutter.project_slug | tojson }} """),
        "package_name": json.loads(r""" {{ cookiecutter.package_name | tojson }} """),
        "description": json.loads(r""" {{ cookiecutter.description | tojson }} """),
        "author_name": json.loads(r""" {{ cookiecutter.author_name | tojson }} """),
        "author_email": json.loads(r""" {{ cookiecutter.author_email | tojson }} """),
        "python_version": json.loads(r""" {{ cookiecutter.python_version | tojson }} """),
        "tensorflow_version": json.loads(r""" {{ cookiecutter.tensorflow_version | tojson }} """),
        "include_tuning": json.loads(r""" {{ cookiecutter.include_tuning | tojson }} """),
        "include_tensorrt": json.loads(r""" {{ cookiecutter.include_tensorrt | tojson }} """),
        "include_serving": json.loads(r""" {{ cookiecutter.include_serving | tojson }} """),
        "include_benchmarks": json.loads(r""" {{ cookiecutter.include_benchmarks | tojson }} """),
        "include_docker": json.loads(r""" {{ cookiecutter.include_docker | tojson }} """),
        "task": json.loads(r""" {{ cookiecutter.task | tojson }} """),
    }
    # The answers as given, before rendering: cookiecutter keeps them, cruft does not (null).
    GIVEN = json.loads(r""" {{ _cookiecutter | default(none) | tojson }} """)
    sys.exit(main(ANSWERS, GIVEN))
