"""The fast tier's broadened grammar, against a real DuckDB.

Relative periods resolved at the lens's pinned ``as_of``, counts of entities,
several measures in one question, shares of total, rankings with ties and period
comparisons. Each shape is compiled from a question on the shop lens of
``test_fast_tier``, executed on DuckDB and compared with a hand-written oracle (and,
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
from tests.test_fast_tier import (
    CRM,
    CRM_SCHEMA,
    CUSTOMERS,
    ORDERS,
    SCHEMA,
    SHOP,
    _ask,
    _same_rows,
    _values,
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
COMPLETED = "status = 'completed'"
REGION_JOIN = "FROM orders JOIN customers USING (customer_id) JOIN regions USING (region_id)"


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
    return _values(warehouse, lens)


def _rows(
    con: duckdb.DuckDBPyConnection, lens: Lens, question: str, values: DimensionValues
) -> tuple[str, list[tuple[Any, ...]]]:
    result = _ask(lens, question, values)
    assert result.sql is not None, result.declined
    return result.sql, con.execute(result.sql).fetchall()


# ---------------------------------------------------------------- shapes with oracles

SHAPES: list[tuple[str, str, str]] = [
    # Relative periods at as_of 2024-10-15.
    (
        "last_month",
        "Net revenue last month",
        f"SELECT SUM(amount) FROM orders WHERE {COMPLETED} "
        "AND order_date BETWEEN '2024-09-01' AND '2024-09-30'",
    ),
    (
        "last_quarter",
        "What was net revenue last quarter?",
        f"SELECT SUM(amount) FROM orders WHERE {COMPLETED} AND quarter(order_date) = 3 "
        "AND year(order_date) = 2024",
    ),
    (
        "previous_year",
        "Net revenue for the previous year",
        f"SELECT SUM(amount) FROM orders WHERE {COMPLETED} AND year(order_date) = 2023",
    ),
    (
        "year_to_date",
        "Net revenue year to date",
        f"SELECT SUM(amount) FROM orders WHERE {COMPLETED} "
        "AND order_date BETWEEN '2024-01-01' AND DATE '2024-10-15'",
    ),
    (
        "ytd_by_category",
        "YTD units sold by product category",
        "SELECT category, SUM(quantity) FROM orders JOIN products USING (product_id) "
        f"WHERE {COMPLETED} AND order_date BETWEEN '2024-01-01' AND '2024-10-15' GROUP BY 1",
    ),
    (
        "this_year_monthly",
        "Monthly orders this year",
        "SELECT CAST(date_trunc('month', order_date) AS DATE), COUNT(*) FROM orders "
        "WHERE year(order_date) = 2024 GROUP BY 1",
    ),
    (
        "this_month",
        "How many orders were placed this month?",
        "SELECT COUNT(*) FROM orders WHERE order_date BETWEEN '2024-10-01' AND '2024-10-31'",
    ),
    # Counts of entities: COUNT(DISTINCT primary key) of the model the noun names.
    ("how_many_entities", "How many customers are there?", "SELECT COUNT(*) FROM customers"),
    (
        "entities_by_segment",
        "How many customers by segment?",
        "SELECT segment, COUNT(*) FROM customers GROUP BY 1",
    ),
    (
        "entities_per_joined_dimension",
        "Number of customers per country",
        "SELECT country, COUNT(*) FROM customers JOIN regions USING (region_id) GROUP BY 1",
    ),
    (
        "entities_with_value_filter",
        "How many customers in the West region?",
        "SELECT COUNT(*) FROM customers JOIN regions USING (region_id) WHERE region_name = 'West'",
    ),
    (
        "entities_ranked",
        "Which region has the most customers?",
        "SELECT region_name, COUNT(*) AS n FROM customers JOIN regions USING (region_id) "
        "GROUP BY 1 ORDER BY n DESC LIMIT 1",
    ),
    # Several measures; each keeps its own filters.
    (
        "two_metrics_different_filters",
        "Net revenue and orders by region",
        f"SELECT region_name, SUM(amount) FILTER (WHERE {COMPLETED}), COUNT(*) {REGION_JOIN} "
        "GROUP BY 1",
    ),
    (
        "three_metrics_same_filters_in_a_year",
        "Net revenue, units sold and average order value in 2024",
        "SELECT SUM(amount), SUM(quantity), SUM(amount) / COUNT(*) FROM orders "
        f"WHERE {COMPLETED} AND year(order_date) = 2024",
    ),
    (
        "two_fact_aggregates",
        "Average amount and maximum quantity by category",
        "SELECT category, AVG(amount), MAX(quantity) FROM orders "
        "JOIN products USING (product_id) GROUP BY 1",
    ),
    (
        "metric_with_aggregation_word_and_another",
        "Total net revenue and number of orders by segment in 2024",
        "SELECT segment, SUM(amount) FILTER (WHERE status = 'completed'), COUNT(*) "
        "FROM orders JOIN customers USING (customer_id) WHERE year(order_date) = 2024 "
        "GROUP BY 1",
    ),
    # Measures on two models: each aggregated apart, then joined on the keys.
    (
        "two_models_by_region",
        "Net revenue and customer count by region",
        "WITH r AS (SELECT region_name, SUM(amount) AS v FROM orders JOIN customers "
        f"USING (customer_id) JOIN regions USING (region_id) WHERE {COMPLETED} GROUP BY 1), "
        "c AS (SELECT region_name, COUNT(*) AS n FROM customers JOIN regions USING (region_id) "
        "GROUP BY 1) SELECT region_name, v, n FROM r FULL JOIN c USING (region_name)",
    ),
    (
        "two_models_totals_with_a_shared_filter",
        "Orders and customer count for the Enterprise segment",
        "SELECT (SELECT COUNT(*) FROM orders JOIN customers USING (customer_id) "
        "WHERE segment = 'Enterprise'), (SELECT COUNT(*) FROM customers "
        "WHERE segment = 'Enterprise')",
    ),
    # Shares of total.
    (
        "share_by_category",
        "Share of net revenue by category",
        "SELECT category, SUM(amount) / SUM(SUM(amount)) OVER () FROM orders "
        f"JOIN products USING (product_id) WHERE {COMPLETED} GROUP BY 1",
    ),
    (
        "percentage_in_a_year",
        "Percentage of orders by segment in 2024",
        "SELECT segment, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () FROM orders "
        "JOIN customers USING (customer_id) WHERE year(order_date) = 2024 GROUP BY 1",
    ),
    (
        "share_of_entities",
        "Share of customers by region",
        "SELECT region_name, COUNT(*) / SUM(COUNT(*)) OVER () FROM customers "
        "JOIN regions USING (region_id) GROUP BY 1",
    ),
    # Rankings with ties.
    (
        "bottom_with_ties",
        "Bottom 1 segment by orders with ties",
        "SELECT segment, COUNT(*) AS n FROM orders JOIN customers USING (customer_id) "
        "GROUP BY 1 QUALIFY RANK() OVER (ORDER BY n ASC) <= 1",
    ),
    (
        "top_entities_including_ties",
        "Top 2 regions by number of customers including ties",
        "SELECT region_name, COUNT(*) AS n FROM customers JOIN regions USING (region_id) "
        "GROUP BY 1 QUALIFY RANK() OVER (ORDER BY n DESC) <= 2",
    ),
    # Changes between consecutive buckets (a self-join oracle: NULL when the previous
    # bucket has no rows, and the period's first bucket compares with the one before).
    (
        "month_over_month_change_in_a_year",
        "Month over month change in net revenue in 2024",
        "WITH s AS (SELECT CAST(date_trunc('month', order_date) AS DATE) AS m, SUM(amount) AS v "
        f"FROM orders WHERE {COMPLETED} GROUP BY 1) "
        "SELECT c.m, c.v, c.v - p.v FROM s AS c LEFT JOIN s AS p ON p.m = c.m - INTERVAL 1 MONTH "
        "WHERE year(c.m) = 2024",
    ),
    (
        "yoy_percent_change_by_segment",
        "Year-over-year percent change of orders by segment",
        "WITH s AS (SELECT make_date(year(order_date), 1, 1) AS y, segment, COUNT(*) AS v "
        "FROM orders JOIN customers USING (customer_id) GROUP BY 1, 2) "
        "SELECT c.y, c.segment, c.v, 100.0 * (c.v - p.v) / p.v FROM s AS c LEFT JOIN s AS p "
        "ON p.segment = c.segment AND p.y = c.y - INTERVAL 1 YEAR",
    ),
    (
        "qoq_change",
        "QoQ change in orders",
        "WITH s AS (SELECT CAST(date_trunc('quarter', order_date) AS DATE) AS q, COUNT(*) AS v "
        "FROM orders GROUP BY 1) SELECT c.q, c.v, c.v - p.v FROM s AS c LEFT JOIN s AS p "
        "ON p.q = c.q - INTERVAL 3 MONTH",
    ),
    # Period comparisons.
    (
        "year_vs_year",
        "Net revenue 2024 vs 2023",
        "SELECT make_date(year(order_date), 1, 1), SUM(amount) FROM orders "
        f"WHERE {COMPLETED} GROUP BY 1",
    ),
    (
        "quarter_compared_by_segment",
        "Compare orders by segment in Q1 2024 and Q1 2023",
        "SELECT make_date(year(order_date), 1, 1), segment, COUNT(*) FROM orders "
        "JOIN customers USING (customer_id) WHERE quarter(order_date) = 1 GROUP BY 1, 2",
    ),
    (
        "ytd_versus_last_year",
        "Net revenue year to date versus last year",
        "SELECT make_date(year(order_date), 1, 1), SUM(amount) FROM orders "
        f"WHERE {COMPLETED} AND order_date <= '2024-10-15' GROUP BY 1",
    ),
]


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
    expected = warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert _same_rows(generated, expected), (sql, generated, expected)


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

DECLINES: list[tuple[str, str, str]] = [
    ("last_week", "Net revenue last week", "'last'"),
    ("the_last_year_may_be_rolling", "Net revenue in the last year", "'last'"),
    ("rolling_window", "Net revenue in the last 3 months", "'last'"),
    ("next_year", "Net revenue next year", "'next'"),
    ("since", "Net revenue since last year", "'since'"),
    ("grain_within_relative", "Monthly net revenue last month", "within one month"),
    ("relative_and_absolute", "Net revenue last year in 2024", "more than one period"),
    ("entities_in_a_period", "How many customers in 2024?", "which date of customers"),
    ("entities_have_a_dimension", "How many customers have a segment?", "not introduced"),
    ("entities_unique", "How many unique customers are there?", "no metric"),
    ("entities_with_a_metric", "How many customers placed orders?", "counts customers"),
    ("entities_not_a_model", "How many stores are there?", "no metric"),
    ("ratio_not_a_list", "Net revenue per order", "not a plain list"),
    (
        "two_models_filter_unreachable",
        "Net revenue and customer count for Toys",
        "no declared join",
    ),
    ("two_models_period", "Net revenue and customer count in 2024", "time dimension"),
    ("ranking_by_two_metrics", "Top 2 regions by net revenue and orders", "several metrics"),
    ("metrics_on_other_joins", "Net revenue and weighted by category", "read different models"),
    ("inherited_word_does_not_fit", "Average amount and net revenue", "apply to 'net revenue'"),
    ("loose_aggregation_word", "Average net revenue and orders", "'average'"),
    ("share_of_a_ratio", "Share of average order value by segment", "only a sum or a count"),
    ("share_without_breakdown", "Share of net revenue in 2024", "exactly one breakdown"),
    ("share_over_two_keys", "Share of net revenue by region and category", "(this question has 2)"),
    ("share_of_two_metrics", "Share of net revenue and orders by region", "several metrics"),
    ("ties_without_ranking", "Net revenue by region with ties", "needs a ranking"),
    ("compare_units_differ", "Net revenue 2024 vs March 2023", "different units"),
    ("compare_one_period", "Net revenue vs 2023", "two periods"),
    ("metrics_versus", "Net revenue vs orders", "not a plain list"),
    ("change_without_step", "Net revenue change", "needs its step"),
    ("step_without_change", "Month over month net revenue", "'change' (a difference)"),
    ("week_over_week", "Weekly orders week over week change", "only month, quarter, year"),
    ("change_step_and_grain", "Monthly net revenue year over year change", "shown by month"),
    ("change_ranked", "Top 2 regions by month over month change in net revenue", "read alone"),
    ("change_within_its_step", "MoM change in net revenue last month", "within one month"),
    ("growth_is_not_read", "Month over month growth of net revenue", "'growth'"),
    ("two_periods_without_compare", "Net revenue in 2023 and 2024", "more than one period"),
    ("compare_coarser_grain", "Yearly net revenue Q1 2024 vs Q1 2023", "a year breakdown"),
]


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in DECLINES], ids=[d[0] for d in DECLINES]
)
def test_near_misses_are_declined(
    lens: Lens, values: DimensionValues, question: str, reason: str
) -> None:
    result = _ask(lens, question, values)
    assert result.sql is None, result.sql
    assert result.declined is not None and reason in result.declined, result.declined


def test_an_aggregation_word_carries_over_a_list(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Every CRM measure is both a SUM metric and a fact: "cycle length" alone would be
    # the SUM metric, but listed after "average deal size" it is averaged too.
    crm = load_lens("crm", CRM)
    con = duckdb.connect(str(tmp_path_factory.mktemp("crm") / "crm.duckdb"))
    try:
        con.execute(CRM_SCHEMA)
        question = "What's the average deal size and sales cycle length of won deals?"
        sql, rows = _rows(con, crm, question, _values(con, crm))
        oracle = (
            "SELECT AVG(amount), AVG(DATE_DIFF('day', created_on, closed_on)) FROM deals "
            "WHERE is_won"
        )
        assert _same_rows(rows, con.execute(oracle).fetchall()), sql
    finally:
        con.close()


def test_entity_count_needs_a_single_column_key(values: DimensionValues) -> None:
    keyless = load_lens("shop", {**MORE, "models/customers.yaml": CUSTOMERS})
    result = _ask(keyless, "How many customers are there?", values)
    assert result.declined is not None and "primary_key" in result.declined


def test_entity_count_declines_beside_a_filtered_count_metric(values: DimensionValues) -> None:
    active = b"name: big_customers\nmodel: customers\nexpression: COUNT(*)\nfilters: [x > 1]\n"
    lens = load_lens("shop", {**MORE, "metrics/big_customers.yaml": active})
    result = _ask(lens, "How many customers are there?", values)
    assert result.declined is not None and "big_customers" in result.declined
