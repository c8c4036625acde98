"""Relative periods on the warehouse's clock (``as_of: today``) and rolling windows.

Each case of ``tests/fixtures/fast_tier_today.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse whose data is dated from
``CURRENT_DATE``: an answer must return the hand-written oracle's rows, a decline must
give its reason. Every spelling of one period must give the same SQL, and a certified
answer with a relative date is still rejected at load under ``as_of: today``.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from reconciler.errors import LensLoadError
from reconciler.lens import load_lens
from tests.helpers.grammar import GoldenFile, ask, dimension_values

GOLDEN = GoldenFile.read("fast_tier_today.yaml")

SAME_PERIOD = [
    (
        "Revenue in the past 30 days",
        "Revenue in the last 30 days",
        "Revenue in the past 30 days, inclusive of 30 days ago",
        "Revenue in the past 30 days (inclusive of 30 days ago)",
        "Revenue in the past 30 days, inclusive of today",
        "Revenue in the last 30 days from today",
        "Revenue within the last 30 days",
        "Revenue within the past 30 days",
    ),
    (
        "Revenue in the past 3 months",
        "Revenue in the last 3 months, inclusive of today's date",
        "Revenue in the last 3 months from today",
    ),
    ("Revenue in the past 6 calendar months", "Revenue in the last 6 calendar months"),
    (
        "Revenue in the previous ISO week",
        "Revenue in the last ISO week",
        "Revenue in the previous ISO week not including the current week",
        "Revenue in the whole of the previous ISO week, excluding the current week",
    ),
]


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield GOLDEN.warehouses(tmp_path_factory.mktemp("today"))


@pytest.mark.parametrize("spellings", SAME_PERIOD, ids=[s[0] for s in SAME_PERIOD])
def test_every_spelling_of_a_period_gives_one_sql(
    warehouses: dict[str, Path], spellings: tuple[str, ...]
) -> None:
    lens = GOLDEN.lens("live")
    con = duckdb.connect(str(warehouses["live"]), read_only=True)
    try:
        values = dimension_values(con, lens)
        sql = {q: ask(lens, q, values).sql for q in spellings}
    finally:
        con.close()
    assert None not in sql.values(), sql
    assert len(set(sql.values())) == 1, sql


def test_live_window_reads_the_clock_in_sql(warehouses: dict[str, Path]) -> None:
    lens = GOLDEN.lens("live")
    con = duckdb.connect(str(warehouses["live"]), read_only=True)
    try:
        sql = ask(lens, "Revenue in the past 30 days", dimension_values(con, lens)).sql
    finally:
        con.close()
    assert sql is not None and "CURRENT_DATE" in sql and "2024" not in sql, sql


ANSWER = b"""\
id: recent
question: What was the revenue in the past 30 days?
sql: SELECT SUM(amount) FROM orders WHERE order_date >= CURRENT_DATE - 30
status: active
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def test_certified_relative_answer_needs_a_pinned_day_under_as_of_today() -> None:
    files = {**GOLDEN.files["live"], "answers/recent.yaml": ANSWER}
    with pytest.raises(LensLoadError) as caught:
        load_lens("live", files)
    error = caught.value
    assert "answers/recent.yaml" in str(error.path)
    assert error.line == 2
    assert "as_of: today follows the warehouse's clock" in error.message
    assert 'replace as_of: today with as_of: "YYYY-MM-DD"' in (error.fix or "")
    # A pinned day loads it, evaluated on that day.
    pinned = {**files, "lens.yaml": b'name: live\nas_of: "2025-01-31"\n'}
    assert load_lens("live", pinned).config.pinned_as_of == "2025-01-31"
