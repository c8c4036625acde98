"""Month names ordered in calendar order, and an opening "[please] provide".

Each case of ``tests/fixtures/fast_tier_more3.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from sqlglot import exp

from reconciler.reading.phrases.months import calendar_position
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_more3.yaml")


def test_calendar_position_holds_every_full_name_and_the_stored_spellings() -> None:
    case = calendar_position(exp.column("m"), (("Sept", 9), ("JAN", 1)))
    sql = case.sql(dialect="duckdb")
    assert sql.startswith("CASE LOWER(TRIM(m)) WHEN 'jan' THEN 1 WHEN 'january' THEN 1")
    assert "WHEN 'may' THEN 5" in sql
    assert "WHEN 'sept' THEN 9" in sql
    assert sql.count("WHEN") == 14
