"""Groups with no rows, joins walked backwards into non-bridge models, and "of the <model>".

Each case of ``tests/fixtures/fast_tier_zero_rows.yaml`` is asked in-process on its
lens (assembly, then the fast tier) over a real DuckDB warehouse: an answer must
return the hand-written oracle's rows (in order where the case says ``ordered``), a
decline must give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.reading.resolve.paths import is_bridge
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_zero_rows.yaml")


@pytest.mark.parametrize(
    ("model", "bridge"),
    [
        ("rental_promotions", True),  # keys only, a count of its distinct keys as a metric
        ("promotions", True),  # a label per key: no facts, no time, no metric
        ("rentals", False),  # facts, a time dimension, metrics
        ("payments", False),
        ("repairs", False),
    ],
)
def test_which_models_are_bridges(model: str, bridge: bool) -> None:
    assert is_bridge(GOLDEN.lens(), model) is bridge
