"""Month names ordered in calendar order, and an opening "[please] provide".

Each case of ``tests/fixtures/fast_tier_more3.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from reconciler.reading.phrases.months import calendar_position
from tests.helpers.grammar import GoldenFile, check_golden_case

GOLDEN = GoldenFile.read("fast_tier_more3.yaml")
CASES = GOLDEN.cases


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_more3_case(warehouse: Path, case: dict[str, Any]) -> None:
    check_golden_case(GOLDEN.lens(), warehouse, case)


def test_calendar_position_holds_every_full_name_and_the_stored_spellings() -> None:
    case = calendar_position(exp.column("m"), (("Sept", 9), ("JAN", 1)))
    sql = case.sql(dialect="duckdb")
    assert sql.startswith("CASE LOWER(TRIM(m)) WHEN 'jan' THEN 1 WHEN 'january' THEN 1")
    assert "WHEN 'may' THEN 5" in sql
    assert "WHEN 'sept' THEN 9" in sql
    assert sql.count("WHEN") == 14
