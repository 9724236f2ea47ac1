"""How hard to fuzz: a modest, derandomized run in make test (reproducible, quick), many
random examples under --chaos (make chaos). Never the example database: a run is a pure
function of the code and the scale."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

SHORT_FACTOR, FULL_FACTOR = 1, 25


def fuzz_settings(chaos_scale: str, examples: int) -> settings:
    """`examples` is the short run's count; the full run does FULL_FACTOR times as many."""
    full = chaos_scale == "full"
    return settings(
        max_examples=examples * (FULL_FACTOR if full else SHORT_FACTOR),
        derandomize=not full,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
