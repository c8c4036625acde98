"""The fast tier never gives a confident wrong answer: golden soundness (and reach) cases.

Each case of ``tests/fixtures/fast_tier_soundness.yaml`` is asked in-process on its
small lens over a real DuckDB warehouse: an answer must return the hand-written
oracle's rows with the same columns (nothing the question did not ask for), a
decline must give its reason. The join-grain gate is also checked where the fast
tier is not the generator: a smart tier (a local function standing in for the
LLM endpoint) that joins through a non-unique key is blocked by ``dst ask``'s gates
and is not correct in the suite; the join-key facts are cached with the profiles.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.ask import ask as serve
from reconciler.assembly.grain import WarehouseFacts
from reconciler.assembly.profiles import ProfileStore
from reconciler.assembly.request import GenerationRequest, assemble
from reconciler.generators import DimensionValues, Generation, generate
from reconciler.lens import Lens, load_lens
from reconciler.suite import Outcome, ValueCache, run_answer
from reconciler.warehouse.connection import Warehouse
from tests.helpers import FIXTURES
from tests.helpers.grammar import golden_warehouses

DATA: dict[str, Any] = yaml.safe_load(
    (FIXTURES / "fast_tier_soundness.yaml").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = DATA["cases"]

FANOUT_SQL = (
    "SELECT c.segment, SUM(o.amount) AS revenue FROM orders AS o "
    "JOIN customers AS c ON o.customer_id = c.customer_id GROUP BY 1"
)
ANSWER = b"""\
id: revenue_by_segment
question: Revenue by segment
sql: |
  SELECT c.segment, SUM(o.amount) AS revenue
  FROM orders AS o
  JOIN (SELECT DISTINCT customer_id, MIN(segment) AS segment FROM customers GROUP BY 1) AS c
    ON o.customer_id = c.customer_id
  GROUP BY 1
status: active
provenance:
  certified_by: Dana Whitfield
  certified_at: "2025-01-15"
  source: manual
"""


def _lens(name: str, extra: dict[str, bytes] | None = None) -> Lens:
    files = {path: text.encode() for path, text in DATA["lenses"][name]["files"].items()}
    return load_lens(name, {**files, **(extra or {})})


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("soundness")
    yield golden_warehouses(root, {n: spec["schema"] for n, spec in DATA["lenses"].items()})


def _fanning_smart(_lens: Lens, _request: GenerationRequest, _hint: str | None) -> Generation:
    return Generation("smart", FANOUT_SQL)


def _smart_lens(*answers: tuple[str, bytes]) -> Lens:
    tiers = {"lens.yaml": b"name: dup_customers\ngenerator:\n  tiers: [smart]\n"}
    return _lens("dup_customers", {**tiers, **dict(answers)})


def test_smart_sql_through_a_non_unique_key_is_blocked(warehouses: dict[str, Path]) -> None:
    lens = _smart_lens()
    wh = Warehouse.open(f"duckdb:///{warehouses['dup_customers']}")
    try:
        values = ValueCache(wh, 30.0).for_lens(lens)
        resp = serve(lens, "Revenue by segment", wh, values, smart=_fanning_smart)
    finally:
        wh.close()
    gate = next(e for e in resp.evaluations if e.gate == "join_grain")
    assert not gate.passed and gate.severity == "blocking"
    assert "customers.customer_id is not unique in the warehouse" in gate.detail
    assert resp.trust_state == "blocked" and not resp.served_rows and resp.exit_code == 1
    assert gate.repair_action is not None and gate.repair_action.kind == "retry"
    assert "aggregate that side to one row per key" in gate.repair_action.hint


def test_smart_sql_through_a_non_unique_key_is_not_correct_in_the_suite(
    warehouses: dict[str, Path],
) -> None:
    lens = _smart_lens(("answers/revenue_by_segment.yaml", ANSWER))
    wh = Warehouse.open(f"duckdb:///{warehouses['dup_customers']}")
    try:
        values = ValueCache(wh, 30.0).for_lens(lens)
        answer = next(iter(lens.answers.values()))
        result = run_answer(lens, answer, wh, values, smart=_fanning_smart)
    finally:
        wh.close()
    assert result.outcome is Outcome.WRONG
    assert "join-grain gate" in result.detail and "customer_id = 1 occurs 3 times" in result.detail


def test_a_unique_key_passes_the_gate(warehouses: dict[str, Path]) -> None:
    lens = _smart_lens()
    by_category = (
        "SELECT p.category, SUM(o.amount) AS revenue FROM orders AS o "
        "JOIN products AS p ON o.product_id = p.product_id GROUP BY 1"
    )

    def smart(_lens: Lens, _request: GenerationRequest, _hint: str | None) -> Generation:
        return Generation("smart", by_category)

    wh = Warehouse.open(f"duckdb:///{warehouses['dup_customers']}")
    try:
        values = ValueCache(wh, 30.0).for_lens(lens)
        resp = serve(lens, "Revenue by category", wh, values, smart=smart)
    finally:
        wh.close()
    gate = next(e for e in resp.evaluations if e.gate == "join_grain")
    assert gate.passed and resp.trust_state == "grounded" and resp.served_rows


class _Counting:
    """The real warehouse, counting the queries that reach it."""

    def __init__(self, inner: Warehouse) -> None:
        self.inner = inner
        self.queries = 0

    def execute(self, sql: str, *, row_cap: int, timeout_s: float, as_of: str | None = None) -> Any:
        self.queries += 1
        return self.inner.execute(sql, row_cap=row_cap, timeout_s=timeout_s, as_of=as_of)

    def distinct_values(
        self, table: str, column_sql: str, *, limit: int = 200, timeout_s: float
    ) -> tuple[str, ...]:
        self.queries += 1
        return self.inner.distinct_values(table, column_sql, limit=limit, timeout_s=timeout_s)


def test_key_facts_are_cached_per_data_version(warehouses: dict[str, Path], tmp_path: Path) -> None:
    lens = _lens("dup_customers")
    wh = Warehouse.open(f"duckdb:///{warehouses['dup_customers']}")
    try:

        def facts(version: str) -> tuple[DimensionValues, int]:
            counting = _Counting(wh)
            store = ProfileStore(tmp_path / "profiles", "duckdb:///dup.duckdb", version)
            values = ValueCache(counting, 30.0, profiles=store, dialect="duckdb").for_lens(lens)
            return values, counting.queries

        cold, cold_queries = facts("file:1")
        warm, warm_queries = facts("file:1")
        _, moved_queries = facts("file:2")
    finally:
        wh.close()
    assert isinstance(cold, WarehouseFacts) and isinstance(warm, WarehouseFacts)
    assert cold_queries == 2 * 2 + 2  # two string dimensions, two join keys
    assert warm_queries == 0 and warm.key_facts == cold.key_facts
    assert moved_queries == cold_queries  # a new data version reads every fact again
    customers = cold.key_facts[("customers", ("customer_id",))]
    assert customers.unique is False and customers.detail == "customer_id = 1 occurs 3 times"
    assert cold.key_facts[("products", ("product_id",))].unique is True


def test_a_governed_metric_is_in_the_request_and_its_change_is_seen() -> None:
    question = "Total ad stats clicks by campaign"
    lens = _lens("clicks")
    request = assemble(lens, question)
    assert "metrics/clicks" in request.used_assets()  # so the binding names the metric
    before = generate(lens, request, WarehouseFacts({}, {})).sql
    changed = DATA["lenses"]["clicks"]["files"]["metrics/clicks.yaml"].replace(
        '["is_valid"]', '["is_valid", "impressions > 60"]'
    )
    edited = _lens("clicks", {"metrics/clicks.yaml": changed.encode()})
    after = generate(edited, assemble(edited, question), WarehouseFacts({}, {})).sql
    assert before is not None and after is not None
    assert "impressions > 60" not in before and "impressions > 60" in after


def test_an_ordering_phrase_selects_its_key_not_the_word_order() -> None:
    lens = _lens("order_count")  # metric order_count has the synonym "orders"
    request = assemble(lens, "Revenue by region ordered by revenue descending")
    assert request.metrics == ("revenue",)
    assert assemble(lens, "Revenue by region sorted by orders descending").metrics == (
        "order_count",
        "revenue",
    )
