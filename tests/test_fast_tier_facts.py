"""Raw facts of one model's rows: listings compared on a fact, rankings, per-row ratios.

Each case of ``tests/fixtures/fast_tier_facts.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``) with the same
column count, a decline must give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.assembly.text import ordering_phrase
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_facts.yaml")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Codes? Sort the codes in ascending order.", ("Codes?", "codes", "ascending")),
        ("Codes? Sort the results in descending order", ("Codes?", None, "descending")),
        (
            "Codes of all aircraft, sorted in ascending order.",
            ("Codes of all aircraft", None, "ascending"),
        ),
    ],
)
def test_closing_sort_phrases_are_split_off(
    question: str, expected: tuple[str, str | None, str | None]
) -> None:
    assert ordering_phrase(question) == expected
