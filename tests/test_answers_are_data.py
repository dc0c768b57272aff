"""Answers are data: an answer cookiecutter rendered as Jinja is refused before anything is written.

cookiecutter renders every answer given on the command line or in an answer file (config
`default_context`, `--extra-context`) before any hook runs, so `{{ 7*7 }}` arrives as "49" and an
expression's code has already run. The pre-gen hook compares what was given (cookiecutter's
`_cookiecutter`) with what it became and refuses the difference; cruft keeps no such copy, which
the README's security note says.
"""

from __future__ import annotations

import json

import pytest

RENDERED = [
    pytest.param(["project_name=P {{ 7*7 }}"], "project_name 'P {{ 7*7 }}'", "'P 49'", id="name"),
    pytest.param(["project_name={# c #}Lab"], "project_name '{# c #}Lab'", "'Lab'", id="comment"),
    pytest.param(["description=a {{ 'b' }}"], "description \"a {{ 'b' }}\"", "'a b'", id="desc"),
    pytest.param(["project_slug=x{{ 7*7 }}"], "project_slug 'x{{ 7*7 }}'", "'x49'", id="slug"),
    pytest.param(
        ["package_name={{ 'p' ~ 'kg' }}"], "package_name \"{{ 'p' ~ 'kg' }}\"", "'pkg'", id="pkg"
    ),
    pytest.param(
        ["author_name={% if true %}Eve{% endif %}"],
        "author_name '{% if true %}Eve{% endif %}'",
        "'Eve'",
        id="statement",
    ),
]


@pytest.mark.parametrize(("pairs", "given", "became"), RENDERED)
def test_a_rendered_answer_is_refused_and_nothing_is_written(
    cookiecutter_cli, tmp_path, pairs, given, became
):
    out = tmp_path / "out"
    out.mkdir()
    result = cookiecutter_cli(out, *pairs)
    assert result.returncode != 0, result.stdout
    assert f"{given} holds template syntax that cookiecutter rendered to {became}" in result.stderr
    assert "answer file you do not trust" in result.stderr
    assert list(out.iterdir()) == []


def test_braces_that_render_to_themselves_still_bake(cookiecutter_cli, tmp_path):
    """Text with braces but no template syntax is an ordinary answer."""
    result = cookiecutter_cli(tmp_path, "project_name=Sets {x} and }} ends", "description=50% {y}")
    assert result.returncode == 0, result.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["sets-x-and-ends"]


def test_the_templates_own_expressions_are_not_answers(pre_gen):
    """The derived defaults hold Jinja by design: equal to cookiecutter.json, so not refused."""
    answers = {"project_slug": "tf-gpu-project", "package_name": "tf_gpu_project"}
    given = dict(pre_gen.DERIVED_DEFAULTS)
    assert pre_gen.check_rendered(answers, given) == []
    assert pre_gen.check_rendered(answers, None) == []  # cruft: nothing kept to compare


def test_derived_defaults_match_cookiecutter_json(pre_gen, template):
    """The hook knows the template's own expressions exactly."""
    defaults = json.loads((template / "cookiecutter.json").read_text(encoding="utf-8"))
    for key, expression in pre_gen.DERIVED_DEFAULTS.items():
        assert defaults[key] == expression, key
