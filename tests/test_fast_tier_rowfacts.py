"""Rankings of rows by a fact, served end to end: the cut keeps every tied row.

The golden cases of ``tests/fixtures/fast_tier_rowfacts.yaml`` run in
``tests/test_fast_tier_golden.py`` (the reading and the SQL's rows). A ranking by a
fact is written ``ORDER BY <fact> … LIMIT n``; served through :func:`reconciler.ask.ask`,
the tie gate keeps every row tied at the cut (``rank ≤ n``) and says so in a note,
a row whose fact is NULL is never ranked, and a row whose name, on a model the
ranked rows reach by a join, is missing is not named (the NULL-group gate).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.ask import AskResponse, ask
from reconciler.context import LensExecutor
from reconciler.suite import ValueCache
from reconciler.warehouse.connection import Warehouse
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_rowfacts.yaml")


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return GOLDEN.warehouses(tmp_path_factory.mktemp("rowfacts"))


def _serve(warehouses: dict[str, Path], lens_name: str, question: str) -> AskResponse:
    lens = GOLDEN.lens(lens_name)
    warehouse = Warehouse.open(f"duckdb:///{warehouses[lens_name]}")
    try:
        executor = LensExecutor(warehouse, (), lens.config.dialect)
        values = ValueCache(executor, 30.0).for_lens(lens)
        return ask(lens, question, executor, values, smart=None, max_repairs=0)
    finally:
        warehouse.close()


def test_the_row_with_the_highest_fact_keeps_every_tied_row(warehouses: dict[str, Path]) -> None:
    resp = _serve(warehouses, "club", "What is the name of the player with the highest rating?")
    assert resp.result is not None, resp.evaluations
    assert sorted(resp.result.rows) == [("Ann",), ("Bob",)]
    assert any("tie at the cut" in note for note in resp.notes), resp.notes


def test_a_ranking_by_a_fact_never_ranks_a_null_fact(warehouses: dict[str, Path]) -> None:
    resp = _serve(warehouses, "club", "What are the names of the 2 players with the lowest rating?")
    assert resp.result is not None, resp.evaluations
    assert sorted(resp.result.rows) == [("Cid",), ("Eve",)]


def test_a_joined_ranking_names_no_row_without_its_related_row(
    warehouses: dict[str, Path],
) -> None:
    """Member 13 (earnings 700) has no person: its NULL name is not ranked as one, and
    member 12's NULL earnings are not ranked at all."""
    question = "What are the names of the 2 members with the highest earnings?"
    resp = _serve(warehouses, "tour", question)
    assert resp.result is not None, resp.evaluations
    assert sorted(resp.result.rows) == [("Ann Lee",), ("Bo Kim",)]
    assert any("is not ranked" in note for note in resp.notes), resp.notes
