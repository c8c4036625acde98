"""NULL and unmatched join keys in breakdowns, and filters that meet a metric's own.

Each case of ``tests/fixtures/fast_tier_nulls.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason. A yes/no flag, and a measure of a plan's joined part, meet a metric's
filter the same way (checked on plans directly: the grammar reads neither here).

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.reading.ir import Measure, Plan
from reconciler.reading.resolve.metricfilters import filter_clash
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_nulls.yaml")


@pytest.mark.parametrize(
    ("metric", "clash"),
    [
        ("renewals", None),  # filters: is_renewed — the flag restates it
        ("first_loans", "first_loans counts only NOT is_renewed; the question's is_renewed"),
    ],
)
def test_a_flag_meets_the_metric_filter_on_its_column(metric: str, clash: str | None) -> None:
    lens = GOLDEN.lens()
    plan = Plan(Measure.of_metric(lens, metric), flags=(("loans", "is_renewed"),))
    found = filter_clash(lens, plan)
    if clash is None:
        assert found is None
    else:
        assert found is not None and clash in found


def test_a_clash_in_a_joined_part_is_found() -> None:
    lens = GOLDEN.lens()
    waived = (("fines", "fine_status", "waived"),)
    part = Plan(Measure.of_metric(lens, "collected"), filters=waived)
    plan = Plan(Measure.of_metric(lens, "fine_total"), filters=waived, joined=(part,))
    found = filter_clash(lens, plan)
    assert found is not None and found.startswith("collected counts only fine_state = 'paid'")
