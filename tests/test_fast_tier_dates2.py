"""A verb naming a date ("booked in 2025"), and open periods ending by the pinned as_of.

Each case of ``tests/fixtures/fast_tier_dates2.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason. With ``as_of: today`` an open period keeps its open end.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from datetime import date

import pytest

from reconciler.assembly.text import tokenize, verb_root
from reconciler.lens import Lens
from reconciler.lensfiles import TODAY
from reconciler.reading.phrases.periods import OPEN_STOP, period_at
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_dates2.yaml")


def _lens() -> Lens:
    return GOLDEN.lens()


def _period(question: str, as_of: str) -> tuple[object, object]:
    toks = tokenize(question)
    found = period_at(toks, 0, set(range(len(toks))), as_of)
    assert found is not None
    return found[1].span


def test_since_keeps_its_open_end_with_as_of_today() -> None:
    assert _period("since march 2025", TODAY) == (date(2025, 3, 1), OPEN_STOP)


def test_since_ends_the_day_after_a_pinned_as_of() -> None:
    assert _period("since march 2025", "2025-06-30") == (date(2025, 3, 1), date(2025, 7, 1))


@pytest.mark.parametrize(
    ("word", "root"),
    [("booked", "book"), ("booking", "book"), ("book", "book"), ("placed", "plac")],
)
def test_verb_roots(word: str, root: str) -> None:
    assert verb_root(word) == root
