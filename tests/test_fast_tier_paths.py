"""Counts and breakdowns through one-to-many joins and bridge models.

Each case of ``tests/fixtures/fast_tier_paths.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows with the same number of columns (in order where the case
says ``ordered``), a decline must give its reason. The warehouse repeats rows where a
fan-out would change the answer, so a SUM or row COUNT through the bridge could not pass.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from reconciler.assembly.grain import KeyFact, WarehouseFacts
from reconciler.lens import Lens, load_lens
from tests.helpers.grammar import (
    GoldenFile,
    ask,
    dimension_values,
)

GOLDEN = GoldenFile.read("fast_tier_paths.yaml")


def _lens() -> Lens:
    return GOLDEN.lens()


def test_a_join_walked_backwards_still_needs_its_one_side_unique(warehouse: Path) -> None:
    # venues ← papers walks papers → venues backwards: venues is still its "one" side.
    lens = _lens()
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        values = dimension_values(con, lens)
    finally:
        con.close()
    question = "How many venues are there for each year?"
    assert ask(lens, question, values).sql is not None
    assert isinstance(values, WarehouseFacts)
    doubled = KeyFact("venues", ("venue_id",), False, "venue_id = 10 occurs 2 times")
    facts = WarehouseFacts(values, {**values.key_facts, ("venues", ("venue_id",)): doubled})
    declined = ask(lens, question, facts).declined
    assert declined is not None and "join papers → venues (walked backwards)" in declined, declined
    assert "venues.venue_id is not unique in the warehouse" in declined, declined
    unknown = ask(lens, question, dict(values)).declined
    assert unknown is not None and "no warehouse facts were gathered" in unknown, unknown


def test_a_declared_one_to_many_join_carries_a_distinct_count(warehouse: Path) -> None:
    # The same relation declared from the venues' side: followed in its declared direction.
    files = dict(GOLDEN.files["paper_shop"])
    files["models/venues.yaml"] += (
        b"joins:\n  - to: papers\n    relationship: one_to_many\n    on: {venue_id: venue_id}\n"
    )
    lens = load_lens("paper_shop", files)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        values = dimension_values(con, lens)
        counted = ask(lens, "How many venues are there for each year?", values)
        assert counted.sql is not None, counted.declined
        assert "INNER JOIN papers" in counted.sql and "SELECT DISTINCT" not in counted.sql
        rows = sorted(con.execute(counted.sql).fetchall())
        assert rows == [(2020, 1), (2021, 2), (2022, 1)], counted.sql
    finally:
        con.close()
