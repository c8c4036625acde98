"""Ordering by a value ("from highest to lowest") and values tied to a row by a name or an id.

Each case of ``tests/fixtures/fast_tier_phrases.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.assembly.text import ordering_phrase
from reconciler.lens import Lens
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_phrases.yaml")


def _lens() -> Lens:
    return GOLDEN.lens()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Revenue by state, ordered from highest to lowest?",
            ("Revenue by state", None, "highest"),
        ),
        (
            "Revenue by state sorted in descending order by revenue",
            ("Revenue by state", "revenue", "descending"),
        ),
        (
            "Revenue by state, ordered by the lowest revenue first.",
            ("Revenue by state", "revenue", "lowest"),
        ),
        ("Revenue by state? Sort by revenue", ("Revenue by state?", "revenue", None)),
    ],
)
def test_ordering_phrases_are_split_off(
    question: str, expected: tuple[str, str | None, str | None]
) -> None:
    assert ordering_phrase(question) == expected


def test_sort_inside_a_sentence_is_no_ordering_phrase() -> None:
    assert ordering_phrase("Revenue by sort by region") is None
