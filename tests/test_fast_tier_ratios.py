"""Ratios and differences of two measures, and exemplars adapted across slots.

Each case of ``tests/fixtures/fast_tier_ratios.yaml`` is asked in-process on its lens
(assembly folds the exemplars, the fast tier generates) over a real DuckDB warehouse:
an answer must return the hand-written oracle's rows with the same number of
columns, a decline must give its reason; ``contains`` / ``lacks`` check whether an
exemplar's own rule reached the generated SQL.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from reconciler.lens import Lens, load_lens
from reconciler.reading.grammar.adapt import adapted_sql, skeleton
from tests.helpers.grammar import (
    GoldenFile,
    ask,
    dimension_values,
)

GOLDEN = GoldenFile.read("fast_tier_ratios.yaml")


def _lens() -> Lens:
    return GOLDEN.lens()


def test_an_exemplar_is_only_seen_through_the_request(warehouse: Path) -> None:
    """The generator adapts only the exemplars assembly put in the request: with the
    exemplar excluded (as the suite excludes an answer's own), the compiler answers."""
    lens = _lens()
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        values = dimension_values(con, lens)
    finally:
        con.close()
    question = "How many orders were placed in the SMB segment in Q3 2024?"
    exemplar = lens.exemplars["orders_enterprise_q1_2024"]
    adapted = adapted_sql(lens, exemplar, skeleton(lens, question, values), values)
    assert adapted is not None and "'SMB'" in adapted and "2024-07-01" in adapted
    bare = load_lens(
        "ratio_shop",
        {p: t for p, t in GOLDEN.files["ratio_shop"].items() if not p.startswith("exemplars/")},
    )
    result = ask(bare, question, values)
    assert result.sql is not None and "cancelled" not in result.sql


def test_only_a_number_after_a_ranking_word_is_a_slot(warehouse: Path) -> None:
    lens = _lens()
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        values = dimension_values(con, lens)
    finally:
        con.close()
    ranked = skeleton(lens, "Top 3 customers by revenue", values)
    bounded = skeleton(lens, "Revenue of orders with amount more than 3", values)
    assert [s.kind for s in ranked if not isinstance(s, str)] == ["n", "dimension:customers"]
    assert all(isinstance(s, str) for s in bounded)


def test_an_excluded_term_declines_before_an_exemplar_is_adapted(warehouse: Path) -> None:
    files = dict(GOLDEN.files["ratio_shop"])
    files["lens.yaml"] = b"name: ratio_shop\nexclusions: [SMB]\n"
    lens = load_lens("ratio_shop", files)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        values = dimension_values(con, lens)
    finally:
        con.close()
    result = ask(lens, "How many orders were placed in the SMB segment in Q3 2024?", values)
    assert result.sql is None and result.declined is not None
    assert "excludes" in result.declined, result.declined
