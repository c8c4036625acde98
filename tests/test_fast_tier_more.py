"""The fast tier's broadened grammar, against a real DuckDB.

Relative periods resolved at the lens's pinned ``as_of``, counts of entities,
several measures in one question, shares of total, rankings with ties and period
comparisons. Each shape is compiled from a question on the shop lens of
``tests/helpers/grammar.py``, executed on DuckDB and compared with a hand-written oracle (and,
where it says something, the exact figures); near-miss phrasings must decline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from reconciler.assembly.request import assemble
from reconciler.generators import DimensionValues
from reconciler.lens import Lens, load_lens
from tests.helpers.grammar import (
    CRM,
    CRM_SCHEMA,
    CUSTOMERS,
    ORDERS,
    SCHEMA,
    SHOP,
    ask,
    dimension_values,
    grammar_cases,
    held,
    same_rows,
)

# Pinned mid-quarter, mid-month, before the last orders of 2024: "year to date" stops
# at 2024-10-15, "this year" is the whole calendar year (order 14 of 2024-12-31 in).
AS_OF = "2024-10-15"
CUSTOMER_COUNT = b"name: customer_count\nmodel: customers\nexpression: COUNT(*)\n"
MORE: dict[str, bytes] = {
    **SHOP,
    "lens.yaml": f'name: shop\nas_of: "{AS_OF}"\n'.encode(),
    "models/customers.yaml": CUSTOMERS.replace(
        b"table: customers\n", b"table: customers\nprimary_key: [customer_id]\n"
    ),
    "models/orders.yaml": ORDERS.replace(
        b"table: orders\n", b"table: orders\nprimary_key: [order_id]\n"
    ),
    "metrics/customer_count.yaml": CUSTOMER_COUNT,
    # Reads customers too: beside net revenue its inner join would drop their rows.
    "metrics/weighted.yaml": (
        b"name: weighted\nmodel: orders\nexpression: SUM(amount)\n"
        b"filters: [\"customers.segment <> 'SMB'\"]\n"
    ),
}


@pytest.fixture(scope="module")
def lens() -> Lens:
    return load_lens("shop", MORE)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("wh") / "shop.duckdb"))
    con.execute(SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def values(warehouse: duckdb.DuckDBPyConnection, lens: Lens) -> DimensionValues:
    return dimension_values(warehouse, lens)


def _rows(
    con: duckdb.DuckDBPyConnection, lens: Lens, question: str, values: DimensionValues
) -> tuple[str, list[tuple[Any, ...]]]:
    result = ask(lens, question, values)
    assert result.sql is not None, result.declined
    return result.sql, con.execute(result.sql).fetchall()


# ---------------------------------------------------------------- shapes with oracles

SHAPES = grammar_cases("shop_as_of", "shapes")


@pytest.mark.parametrize(
    ("question", "oracle"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_broadened_shape_returns_the_oracle_rows(
    lens: Lens,
    warehouse: duckdb.DuckDBPyConnection,
    values: DimensionValues,
    question: str,
    oracle: str,
) -> None:
    sql, generated = _rows(warehouse, lens, question, values)
    held("shop_as_of", question, ask(lens, question, values))
    expected = warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert same_rows(generated, expected), (sql, generated, expected)


# ---------------------------------------------------------------- exact figures


def test_relative_periods_stop_at_as_of(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    # Completed 2024 orders up to 2024-10-15: 110 + 380 + 40 + 25 + 130 + 180.
    assert _rows(warehouse, lens, "Net revenue year to date", values)[1] == [(865,)]
    assert _rows(warehouse, lens, "Net revenue in 2024", values)[1] == [(1195,)]
    assert _rows(warehouse, lens, "Net revenue this year", values)[1] == [(1195,)]
    assert _rows(warehouse, lens, "Net revenue for the current quarter", values)[1] == [(330,)]
    assert _rows(warehouse, lens, "Net revenue last quarter", values)[1] == [(335,)]
    # Another as_of moves every relative period with it.
    later = load_lens("shop", {**MORE, "lens.yaml": b'name: shop\nas_of: "2025-01-10"\n'})
    assert _rows(warehouse, later, "Net revenue last quarter", values)[1] == [(330,)]
    assert _rows(warehouse, later, "Net revenue last year", values)[1] == [(1195,)]


def test_several_measures_keep_their_own_filters(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql, rows = _rows(warehouse, lens, "Net revenue and orders by segment", values)
    # Enterprise: orders 1, 4, 5, 8, 9, 12, 13, 14; returned order 13 is counted, not summed.
    assert rows[0] == ("Enterprise", 1340, 8), sql
    assert [d[0] for d in warehouse.execute(sql).description] == [
        "segment",
        "net_revenue",
        "order_count",
    ]


def test_two_models_do_not_fan_out(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    # Joining customers to orders before counting would count Acme once per order (5).
    sql, rows = _rows(warehouse, lens, "Net revenue and customer count by region", values)
    assert rows == [("West", 1180, 1), ("East", 645, 2), ("North", 130, 1)], sql


def test_share_and_ties_figures(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql, rows = _rows(warehouse, lens, "Share of net revenue by category", values)
    assert [r[0] for r in rows] == ["Electronics", "Furniture", "Home & Garden", "Toys"]
    assert abs(sum(r[1] for r in rows) - 1.0) < 1e-9 and abs(rows[0][1] - 890 / 1955) < 1e-9
    cursor = warehouse.execute(sql)
    assert [d[0] for d in cursor.description] == ["category", "net_revenue_share"]
    _, pct = _rows(warehouse, lens, "Percentage of customers by segment", values)
    assert pct[0] == ("Enterprise", 50.0)
    # SMB and Consumer both have 3 orders: LIMIT 1 would drop one of them.
    _, tied = _rows(warehouse, lens, "Bottom 1 segment by orders with ties", values)
    assert tied == [("Consumer", 3), ("SMB", 3)]
    _, plain = _rows(warehouse, lens, "Bottom 1 segment by orders", values)
    assert len(plain) == 1


def test_change_is_null_after_an_empty_bucket(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql, rows = _rows(warehouse, lens, "Month over month change in net revenue in 2024", values)
    assert [d[0] for d in warehouse.execute(sql).description] == [
        "month",
        "net_revenue",
        "net_revenue_change",
    ]
    # No completed orders in December 2023, February or April-June 2024: no change there.
    assert [(r[0].isoformat(), r[2]) for r in rows] == [
        ("2024-01-01", None),
        ("2024-03-01", None),
        ("2024-07-01", None),
        ("2024-08-01", 105),
        ("2024-09-01", 50),
        ("2024-12-01", None),
    ]


def test_comparison_buckets_are_the_periods(
    lens: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql, rows = _rows(warehouse, lens, "Net revenue YTD vs last year", values)
    assert [d[0] for d in warehouse.execute(sql).description] == ["year", "net_revenue"]
    assert [(r[0].isoformat(), r[1]) for r in rows] == [("2023-01-01", 760), ("2024-01-01", 865)]


def test_entity_count_is_selected_by_assembly(lens: Lens) -> None:
    request = assemble(lens, "How many customers in the West region?")
    assert request.metrics == ()
    assert request.models == ("customers", "regions")


# ---------------------------------------------------------------- near misses decline

DECLINES = grammar_cases("shop_as_of", "declines")


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in DECLINES], ids=[d[0] for d in DECLINES]
)
def test_near_misses_are_declined(
    lens: Lens, values: DimensionValues, question: str, reason: str
) -> None:
    result = ask(lens, question, values)
    assert result.sql is None, result.sql
    assert result.declined is not None and reason in result.declined, result.declined
    held("shop_as_of", question, result)


def test_an_aggregation_word_carries_over_a_list(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Every CRM measure is both a SUM metric and a fact: "cycle length" alone would be
    # the SUM metric, but listed after "average deal size" it is averaged too.
    crm = load_lens("crm", CRM)
    con = duckdb.connect(str(tmp_path_factory.mktemp("crm") / "crm.duckdb"))
    try:
        con.execute(CRM_SCHEMA)
        question = "What's the average deal size and sales cycle length of won deals?"
        sql, rows = _rows(con, crm, question, dimension_values(con, crm))
        oracle = (
            "SELECT AVG(amount), AVG(DATE_DIFF('day', created_on, closed_on)) FROM deals "
            "WHERE is_won"
        )
        assert same_rows(rows, con.execute(oracle).fetchall()), sql
    finally:
        con.close()


def test_entity_count_needs_a_single_column_key(values: DimensionValues) -> None:
    keyless = load_lens("shop", {**MORE, "models/customers.yaml": CUSTOMERS})
    result = ask(keyless, "How many customers are there?", values)
    assert result.declined is not None and "primary_key" in result.declined


def test_entity_count_declines_beside_a_filtered_count_metric(values: DimensionValues) -> None:
    active = b"name: big_customers\nmodel: customers\nexpression: COUNT(*)\nfilters: [x > 1]\n"
    lens = load_lens("shop", {**MORE, "metrics/big_customers.yaml": active})
    result = ask(lens, "How many customers are there?", values)
    assert result.declined is not None and "big_customers" in result.declined
