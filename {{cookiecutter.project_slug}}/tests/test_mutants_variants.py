"""The rows of the image pipeline benchmark (tasks/image/variants.py): naive, then one optimization
added at a time, and the photos' regime (`make mutate MUTATE=progress`)."""

from __future__ import annotations

from {{ cookiecutter.package_name }}.tasks.image import variants as image_variants


def test_the_variants_add_one_optimization_at_a_time() -> None:
    names = [variant.name for variant in image_variants.pipeline_variants(cache=True)]
    assert names == ["naive"] + [name for _, name, _ in image_variants.STEPS]
    variants = image_variants.pipeline_variants(cache=True)
    assert variants[0].stages is None
    assert variants[0].adds == "one record at a time: no parallel calls, cache or prefetch"
    assert [variant.adds for variant in variants[1:]] == [adds for *_, adds in image_variants.STEPS]
    assert variants[1].stages == image_variants.Stages(
        parallel=True, batch_parse=False, cache=False, shuffle=False, prefetch=False
    )
    assert variants[-1].stages == image_variants.Stages(
        parallel=True, batch_parse=True, cache=True, shuffle=True, prefetch=True
    )
    uncached = image_variants.pipeline_variants(cache=False)
    assert [variant.name for variant in uncached] == [
        "naive",
        "+ parallel map",
        "+ batch before parse",
        "+ shuffle",
        "+ prefetch",
    ]
    assert uncached[-1].stages.cache is False


def test_photos_measure_the_batched_regime_as_a_row_the_later_ones_do_not_build_on() -> None:
    variants = image_variants.pipeline_variants(cache=True, batched=False)
    assert [variant.name for variant in variants] == [
        "naive",
        "+ parallel map",
        image_variants.UNUSED,
        "+ cache",
        "+ shuffle",
        "+ prefetch",
    ]
    assert variants[2].adds == image_variants.ALTERNATIVE
    assert variants[2].stages == image_variants.Stages(
        parallel=True, batch_parse=True, cache=False, shuffle=False, prefetch=False
    )
    assert variants[-1].stages == image_variants.Stages(
        parallel=True, batch_parse=False, cache=True, shuffle=True, prefetch=True
    )
