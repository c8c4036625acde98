"""Days of the week as a filter, an opening "Return the …", and output-list items
whose one extra word only restates their measure.

Each case of ``tests/fixtures/fast_tier_more2.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.reading.ir import Declined
from reconciler.reading.phrases.weekdays import split_weekdays
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_more2.yaml")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Sales on weekends by channel", ("Sales by channel", (0, 6))),
        ("Sales during weekdays", ("Sales", (1, 2, 3, 4, 5))),
        ("Sales on Thursdays, Wednesdays or Saturdays", ("Sales", (3, 4, 6))),
        ("Sales by weekday", ("Sales by weekday", ())),
        ("Sales of the vendor 'Open on Sundays'", ("Sales of the vendor 'Open on Sundays'", ())),
    ],
)
def test_days_of_the_week_are_split_off(
    question: str, expected: tuple[str, tuple[int, ...]]
) -> None:
    assert split_weekdays(GOLDEN.lens(), question, {}) == expected


def test_a_singular_day_declines() -> None:
    with pytest.raises(Declined, match="one date, or every one"):
        split_weekdays(GOLDEN.lens(), "Sales on Friday", {})
