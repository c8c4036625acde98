"""The fast tier and assembly, against a real DuckDB.

Every grammar shape is compiled from a question, executed on DuckDB and compared
with a hand-written oracle; questions outside the grammar must be declined, never
guessed. The example lenses' certified answers are re-asked exactly as the suite
does (answer excluded from its own exemplars) and must all come back correct.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from reconciler.assembly.request import assemble
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import normalize, tokenize
from reconciler.errors import LensLoadError
from reconciler.generators import DimensionValues, Generation, generate
from reconciler.generators.fast import parse
from reconciler.lens import AnswerId, Lens, load_lens

LENSES_DIR = Path(__file__).resolve().parent.parent / "lenses"

ORDERS = b"""\
name: orders
table: orders
default_time_dimension: order_date
dimensions:
  - name: status
    sample_values: ["completed", "returned", "cancelled"]
time_dimensions:
  - name: order_date
    data_type: date
facts:
  - name: quantity
  - name: amount
joins:
  - to: customers
    on: {customer_id: customer_id}
  - to: products
    on: {product_id: product_id}
"""
CUSTOMERS = b"""\
name: customers
table: customers
dimensions:
  - name: customer
    expr: customer_name
  - name: segment
    synonyms: ["customer segment"]
    sample_values: ["Enterprise", "SMB", "Consumer"]
joins:
  - to: regions
    on: {region_id: region_id}
"""
REGIONS = b"""\
name: regions
table: regions
dimensions:
  - name: region
    expr: region_name
    synonyms: ["sales region"]
  - name: country
"""
PRODUCTS = b"""\
name: products
table: products
dimensions:
  - name: category
    synonyms: ["product category"]
"""
NET_REVENUE = b"""\
name: net_revenue
label: Net revenue
synonyms: ["revenue", "sales"]
model: orders
expression: SUM(amount)
filters: ["status = 'completed'"]
"""
ORDER_COUNT = b"""\
name: order_count
label: Number of orders
synonyms: ["orders"]
model: orders
expression: COUNT(*)
"""
UNITS = b"""\
name: units_sold
label: Units sold
synonyms: ["units"]
model: orders
expression: SUM(quantity)
filters: ["status = 'completed'"]
"""
AOV = b"""\
name: average_order_value
label: Average order value
synonyms: ["aov"]
model: orders
expression: SUM(amount) / COUNT(*)
filters: ["status = 'completed'"]
"""
SHOP: dict[str, bytes] = {
    "lens.yaml": b"name: shop\n",
    "models/orders.yaml": ORDERS,
    "models/customers.yaml": CUSTOMERS,
    "models/regions.yaml": REGIONS,
    "models/products.yaml": PRODUCTS,
    "metrics/net_revenue.yaml": NET_REVENUE,
    "metrics/order_count.yaml": ORDER_COUNT,
    "metrics/units_sold.yaml": UNITS,
    "metrics/average_order_value.yaml": AOV,
    "skills/style.md": b"# Style\n",
}

SCHEMA = """
CREATE TABLE regions (region_id INTEGER, region_name VARCHAR, country VARCHAR);
INSERT INTO regions VALUES (1, 'West', 'United States'), (2, 'East', 'United States'),
    (3, 'North', 'Canada');
CREATE TABLE customers (customer_id INTEGER, customer_name VARCHAR, segment VARCHAR,
    region_id INTEGER);
INSERT INTO customers VALUES (1, 'Acme', 'Enterprise', 1), (2, 'Bolt', 'SMB', 2),
    (3, 'Core', 'Consumer', 3), (4, 'Dyna', 'Enterprise', 2);
CREATE TABLE products (product_id INTEGER, product_name VARCHAR, category VARCHAR);
INSERT INTO products VALUES (1, 'Phone', 'Electronics'), (2, 'Desk', 'Furniture'),
    (3, 'Ball', 'Toys'), (4, 'Lamp', 'Home & Garden');
CREATE TABLE orders (order_id INTEGER, order_date DATE, customer_id INTEGER,
    product_id INTEGER, quantity INTEGER, amount DECIMAL(10, 2), status VARCHAR);
INSERT INTO orders VALUES
    (1, DATE '2023-01-15', 1, 1, 2, 200.00, 'completed'),
    (2, DATE '2023-02-03', 2, 2, 1, 350.00, 'completed'),
    (3, DATE '2023-03-30', 3, 3, 5, 50.00, 'returned'),
    (4, DATE '2023-07-04', 4, 1, 1, 120.00, 'completed'),
    (5, DATE '2023-11-11', 1, 4, 3, 90.00, 'completed'),
    (6, DATE '2024-01-02', 2, 1, 1, 110.00, 'completed'),
    (7, DATE '2024-01-20', 3, 2, 2, 700.00, 'cancelled'),
    (8, DATE '2024-03-05', 1, 2, 1, 380.00, 'completed'),
    (9, DATE '2024-03-28', 4, 3, 4, 40.00, 'completed'),
    (10, DATE '2024-07-14', 2, 3, 2, 25.00, 'completed'),
    (11, DATE '2024-08-01', 3, 1, 1, 130.00, 'completed'),
    (12, DATE '2024-09-30', 1, 4, 6, 180.00, 'completed'),
    (13, DATE '2024-10-01', 4, 2, 1, 400.00, 'returned'),
    (14, DATE '2024-12-31', 1, 1, 3, 330.00, 'completed');
"""

# ---------------------------------------------------------------- helpers


def _canonical_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows as comparable values: numbers as floats rounded to 6 decimals, sorted."""

    def cell(value: Any) -> Any:
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float, Decimal)):
            number = round(float(value), 6)
            return 0.0 if number == 0 else number
        return value

    out = [tuple(cell(v) for v in row) for row in rows]
    return sorted(out, key=lambda row: tuple((v is None, str(v)) for v in row))


def _same_rows(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]) -> bool:
    a, b = _canonical_rows(left), _canonical_rows(right)
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b, strict=True)):
        return False
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) and isinstance(v, float):
                if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-6):
                    return False
            elif u != v:
                return False
    return True


def _values(con: duckdb.DuckDBPyConnection, lens: Lens) -> DimensionValues:
    """Distinct values of every dimension, read from the warehouse as the suite does."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for model in lens.models.values():
        for col in model.dimensions:
            rows = con.execute(
                f"SELECT DISTINCT CAST({col.sql} AS VARCHAR) FROM {model.table} "
                f"WHERE {col.sql} IS NOT NULL"
            ).fetchall()
            out[(model.name, col.name)] = tuple(sorted(str(r[0]) for r in rows))
    return out


def _ask(lens: Lens, question: str, values: DimensionValues, **kw: Any) -> Generation:
    return generate(lens, assemble(lens, question, **kw), values)


@pytest.fixture(scope="module")
def shop() -> Lens:
    return load_lens("shop", SHOP)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("wh") / "shop.duckdb"))
    con.execute(SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def values(warehouse: duckdb.DuckDBPyConnection, shop: Lens) -> DimensionValues:
    return _values(warehouse, shop)


# ---------------------------------------------------------------- grammar shapes

SHAPES: list[tuple[str, str, str]] = [
    (
        "total",
        "What was total net revenue in 2024?",
        "SELECT SUM(amount) FROM orders WHERE status = 'completed' AND year(order_date) = 2024",
    ),
    (
        "count_quarter",
        "How many orders were placed in Q3 2024?",
        "SELECT COUNT(*) FROM orders WHERE order_date BETWEEN '2024-07-01' AND '2024-09-30'",
    ),
    (
        "ratio_value_filter_on_join",
        "What is the average order value for the Enterprise segment?",
        "SELECT SUM(amount) / COUNT(*) FROM orders JOIN customers USING (customer_id) "
        "WHERE status = 'completed' AND segment = 'Enterprise'",
    ),
    (
        "breakdown_two_joins",
        "Net revenue by region",
        "SELECT region_name, SUM(amount) FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) WHERE status = 'completed' GROUP BY 1",
    ),
    (
        "breakdown_per",
        "Number of orders per product category",
        "SELECT category, COUNT(*) FROM orders JOIN products USING (product_id) GROUP BY 1",
    ),
    (
        "breakdown_for_each_with_year",
        "Units sold for each customer segment in 2023",
        "SELECT segment, SUM(quantity) FROM orders JOIN customers USING (customer_id) "
        "WHERE status = 'completed' AND year(order_date) = 2023 GROUP BY 1",
    ),
    (
        "two_dimensions",
        "Revenue by region and category",
        "SELECT region_name, category, SUM(amount) FROM orders "
        "JOIN customers USING (customer_id) JOIN regions USING (region_id) "
        "JOIN products USING (product_id) WHERE status = 'completed' GROUP BY 1, 2",
    ),
    (
        "monthly_series",
        "Monthly net revenue in 2024",
        "SELECT make_date(year(order_date), month(order_date), 1), SUM(amount) FROM orders "
        "WHERE status = 'completed' AND year(order_date) = 2024 GROUP BY 1",
    ),
    (
        "by_quarter_series",
        "Net revenue by quarter",
        "SELECT make_date(year(order_date), 3 * quarter(order_date) - 2, 1), SUM(amount) "
        "FROM orders WHERE status = 'completed' GROUP BY 1",
    ),
    (
        "yearly_series",
        "Yearly orders",
        "SELECT make_date(year(order_date), 1, 1), COUNT(*) FROM orders GROUP BY 1",
    ),
    (
        "weekly_series_in_quarter",
        "Weekly units sold in Q1 2024",
        "SELECT CAST(date_trunc('week', order_date) AS DATE), SUM(quantity) FROM orders "
        "WHERE status = 'completed' AND order_date >= '2024-01-01' "
        "AND order_date < '2024-04-01' GROUP BY 1",
    ),
    (
        "value_with_qualifier_and_month",
        "What was net revenue in the West region in March 2024?",
        "SELECT SUM(amount) FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) WHERE status = 'completed' AND region_name = 'West' "
        "AND order_date BETWEEN '2024-03-01' AND '2024-03-31'",
    ),
    (
        "warehouse_value_filter",
        "Total units sold for Electronics in 2024",
        "SELECT SUM(quantity) FROM orders JOIN products USING (product_id) "
        "WHERE status = 'completed' AND category = 'Electronics' AND year(order_date) = 2024",
    ),
    (
        "value_with_punctuation_and_ordinal_quarter",
        "Net revenue for Home & Garden in the third quarter of 2024",
        "SELECT SUM(amount) FROM orders JOIN products USING (product_id) "
        "WHERE status = 'completed' AND category = 'Home & Garden' AND quarter(order_date) = 3 "
        "AND year(order_date) = 2024",
    ),
    (
        "value_with_model_noun",
        "How many orders were placed by Enterprise customers in 2024?",
        "SELECT COUNT(*) FROM orders JOIN customers USING (customer_id) "
        "WHERE segment = 'Enterprise' AND year(order_date) = 2024",
    ),
    (
        "value_on_same_model",
        "Number of orders in Canada",
        "SELECT COUNT(*) FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) WHERE country = 'Canada'",
    ),
    (
        "top_n",
        "Top 2 product categories by net revenue",
        "SELECT category, SUM(amount) AS r FROM orders JOIN products USING (product_id) "
        "WHERE status = 'completed' GROUP BY 1 ORDER BY r DESC LIMIT 2",
    ),
    (
        "which_n_lowest",
        "Which 2 regions had the lowest net revenue in 2024?",
        "SELECT region_name, SUM(amount) AS r FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) WHERE status = 'completed' "
        "AND year(order_date) = 2024 GROUP BY 1 ORDER BY r ASC LIMIT 2",
    ),
    (
        "bottom_n",
        "Bottom 2 segments by orders",
        "SELECT segment, COUNT(*) AS n FROM orders JOIN customers USING (customer_id) "
        "GROUP BY 1 ORDER BY n ASC LIMIT 2",
    ),
    (
        "which_singular_most",
        "Which customer had the most units sold?",
        "SELECT customer_name, SUM(quantity) AS u FROM orders JOIN customers "
        "USING (customer_id) WHERE status = 'completed' GROUP BY 1 ORDER BY u DESC LIMIT 1",
    ),
    (
        "top_months",
        "Top 3 months by net revenue in 2024",
        "SELECT CAST(date_trunc('month', order_date) AS DATE), SUM(amount) AS r FROM orders "
        "WHERE status = 'completed' AND year(order_date) = 2024 GROUP BY 1 "
        "ORDER BY r DESC LIMIT 3",
    ),
]


@pytest.mark.parametrize(
    ("question", "oracle"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_grammar_shape_returns_the_oracle_rows(
    shop: Lens,
    warehouse: duckdb.DuckDBPyConnection,
    values: DimensionValues,
    question: str,
    oracle: str,
) -> None:
    result = _ask(shop, question, values)
    assert result.tier == "fast"
    assert result.sql is not None, result.declined
    generated = warehouse.execute(result.sql).fetchall()
    expected = warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert _same_rows(generated, expected), (result.sql, generated, expected)


def test_select_list_follows_the_sql_conventions(
    shop: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql = _ask(shop, "Monthly net revenue by region in 2024", values).sql
    assert sql is not None
    cursor = warehouse.execute(sql)
    assert [d[0] for d in cursor.description] == ["month", "region", "net_revenue"]
    rows = cursor.fetchall()
    assert rows == sorted(rows, key=lambda r: (r[0], r[1]))  # series: bucket, then dims

    sql = _ask(shop, "Net revenue by category", values).sql
    assert sql is not None
    rows = warehouse.execute(sql).fetchall()
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    assert "DATE_TRUNC" not in sql and "LIMIT" not in sql


def test_value_matching_uses_the_stored_casing(shop: Lens, values: DimensionValues) -> None:
    sql = _ask(shop, "net revenue for ELECTRONICS", values).sql
    assert sql is not None and "'Electronics'" in sql


def test_sample_values_work_without_warehouse_values(shop: Lens) -> None:
    sql = _ask(shop, "Net revenue for the SMB segment", {}).sql
    assert sql is not None and "'SMB'" in sql


def test_metric_expressions_and_filters_are_qualified(shop: Lens, values: DimensionValues) -> None:
    sql = _ask(shop, "Net revenue by region", values).sql
    assert sql is not None
    assert "SUM(o.amount)" in sql and "o.status = 'completed'" in sql


# ---------------------------------------------------------------- declines

DECLINES: list[tuple[str, str, str]] = [
    ("off_topic", "What is the weather in Paris?", "no metric"),
    ("two_metrics_as_a_ratio", "Net revenue per order by region", "not a plain list"),
    ("unknown_word", "Net revenue since 2023", "'since'"),
    ("negation", "Net revenue not in the West region", "'not'"),
    ("unknown_dimension", "Net revenue by warehouse", "'warehouse'"),
    ("aggregate_does_not_fit", "Average net revenue per customer", "'average'"),
    ("two_periods", "Net revenue in 2023 and 2024", "more than one period"),
    ("ranking_without_count", "Top regions by net revenue", "without a count"),
    ("two_values_one_dimension", "Net revenue in the West and East regions", "several values"),
    ("stray_number", "Net revenue for 5 regions", "number 5"),
    ("month_without_year", "Net revenue in March", "'march'"),
    ("grain_not_finer_than_period", "Yearly net revenue in 2024", "within one year"),
    ("unrelated_model", "Net revenue by region for products", "products"),
    ("relative_date_without_as_of", "Net revenue last month", "pins no as_of"),
]


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in DECLINES], ids=[d[0] for d in DECLINES]
)
def test_outside_the_grammar_is_declined(
    shop: Lens, values: DimensionValues, question: str, reason: str
) -> None:
    result = _ask(shop, question, values)
    assert result.sql is None
    assert result.declined is not None and reason in result.declined, result.declined


def test_ambiguous_dimension_is_declined(values: DimensionValues) -> None:
    stores = b"name: stores\ntable: stores\ndimensions:\n  - name: region\n"
    orders = ORDERS + b"  - to: stores\n    on: {store_id: store_id}\n"
    lens = load_lens("shop", {**SHOP, "models/stores.yaml": stores, "models/orders.yaml": orders})
    result = _ask(lens, "Net revenue by region", values)
    assert result.sql is None and result.declined is not None
    assert "ambiguous" in result.declined and "stores.region" in result.declined
    # Naming the model settles it.
    settled = _ask(lens, "Net revenue by stores region", values).sql
    assert settled is not None and "stores" in settled


def test_missing_join_is_declined(values: DimensionValues) -> None:
    orders = ORDERS.replace(b"  - to: products\n    on: {product_id: product_id}\n", b"")
    lens = load_lens("shop", {**SHOP, "models/orders.yaml": orders})
    result = _ask(lens, "Net revenue by category", values)
    assert result.sql is None and result.declined is not None
    assert "no declared join" in result.declined


def test_fan_out_join_is_declined(values: DimensionValues) -> None:
    customers = CUSTOMERS.replace(
        b"  - to: regions\n", b"  - to: regions\n    relationship: one_to_many\n"
    )
    lens = load_lens("shop", {**SHOP, "models/customers.yaml": customers})
    result = _ask(lens, "Net revenue by region", values)
    assert result.declined is not None and "fan out" in result.declined


def test_excluded_and_clarify_terms_are_declined(values: DimensionValues) -> None:
    config = (
        b"name: shop\nexclusions: [salary]\n"
        b"clarify:\n  - term: performance\n    ask: Which measure?\n"
    )
    salary = b"name: salary\nmodel: orders\nexpression: SUM(amount)\n"
    lens = load_lens("shop", {**SHOP, "lens.yaml": config, "metrics/salary.yaml": salary})
    refused = _ask(lens, "Salary by region", values)
    assert refused.declined is not None and "excludes" in refused.declined
    unclear = _ask(lens, "Net revenue performance by region", values)
    assert unclear.declined is not None and "Which measure?" in unclear.declined


def test_no_reachable_time_dimension_is_declined(values: DimensionValues) -> None:
    customers = b"name: customer_count\nmodel: customers\nexpression: COUNT(*)\n"
    lens = load_lens("shop", {**SHOP, "metrics/customer_count.yaml": customers})
    assert _ask(lens, "Customer count by segment", values).sql is not None
    result = _ask(lens, "Customer count in 2024", values)
    assert result.declined is not None and "time dimension" in result.declined


def test_facts_with_expressions_and_qualified_columns_are_expanded(
    warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    orders = ORDERS.replace(
        b"  - name: amount\n",
        b"  - name: amount\n  - name: line_value\n    expr: quantity * amount\n",
    )
    metric = (
        b"name: weighted\nmodel: orders\nexpression: SUM(line_value)\n"
        b"filters: [\"customers.segment <> 'SMB'\"]\n"
    )
    lens = load_lens(
        "shop", {**SHOP, "models/orders.yaml": orders, "metrics/weighted.yaml": metric}
    )
    sql = _ask(lens, "Weighted by category", values).sql
    assert sql is not None
    assert "o.quantity * o.amount" in sql and "c.segment <> 'SMB'" in sql
    oracle = (
        "SELECT category, SUM(quantity * amount) FROM orders JOIN products USING (product_id) "
        "JOIN customers USING (customer_id) WHERE segment <> 'SMB' GROUP BY 1"
    )
    generated = warehouse.execute(sql).fetchall()
    assert _same_rows(generated, warehouse.execute(oracle).fetchall())


def test_ambiguous_metric_synonym_is_declined(values: DimensionValues) -> None:
    gross = b"name: gross_revenue\nsynonyms: [revenue]\nmodel: orders\nexpression: SUM(amount)\n"
    lens = load_lens("shop", {**SHOP, "metrics/gross_revenue.yaml": gross})
    result = _ask(lens, "revenue by region", values)
    assert result.declined is not None and "several metrics" in result.declined
    assert _ask(lens, "net revenue by region", values).sql is not None  # longest match


# ---------------------------------------------------------------- fact aggregates, "who", flags

# A CRM lens shaped like an imported Cortex model: every measure is both a metric
# (SUM) and a model fact with the same synonyms; deals have a rep of their own and,
# through the account, an account owner (a longer join path to the same reps).
DEALS = b"""\
name: deals
table: deals
primary_key: [deal_id]
default_time_dimension: closed_on
dimensions:
  - name: stage
  - name: is_won
    data_type: BOOLEAN
  - name: isclosed
    data_type: BOOLEAN
time_dimensions:
  - name: created_on
    data_type: date
  - name: closed_on
    data_type: date
facts:
  - name: amount
    data_type: NUMBER
    synonyms: ["deal size", "revenue", "booked amount"]
  - name: probability
    data_type: NUMBER
  - name: cycle_days
    expr: DATE_DIFF('day', created_on, closed_on)
    data_type: NUMBER
    synonyms: ["sales cycle length"]
  - name: deal_label
    expr: stage
    data_type: TEXT
    synonyms: ["label"]
joins:
  - to: accounts
    on: {account_id: account_id}
  - to: reps
    on: {rep_id: rep_id}
"""
ACCOUNTS = b"""\
name: accounts
table: accounts
dimensions:
  - name: industry
  - name: account
    expr: account_name
joins:
  - to: reps
    on: {owner_rep_id: rep_id}
"""
REPS = b"""\
name: reps
table: reps
dimensions:
  - name: rep
    expr: rep_name
    synonyms: ["sales rep", "owner"]
  - name: rep_email
    synonyms: ["rep email"]
"""
SNAPSHOT = b"""\
name: store_days
table: store_days
primary_key: [day, store]
dimensions:
  - name: store
time_dimensions:
  - name: day
    data_type: date
facts:
  - name: store_sales
    expr: sales
  - name: daily_visits
    expr: visits
"""
CRM: dict[str, bytes] = {
    "lens.yaml": b"name: crm\n",
    "models/deals.yaml": DEALS,
    "models/accounts.yaml": ACCOUNTS,
    "models/reps.yaml": REPS,
    "models/store_days.yaml": SNAPSHOT,
    "metrics/amount.yaml": (
        b'name: amount\nsynonyms: ["deal size", "revenue"]\nmodel: deals\nexpression: SUM(amount)\n'
    ),
    "metrics/won_amount.yaml": (
        b'name: won_amount\nsynonyms: ["booked amount"]\nmodel: deals\n'
        b"expression: SUM(amount)\nfilters: [is_won]\n"
    ),
    "metrics/cycle.yaml": (
        b'name: cycle\nsynonyms: ["sales cycle length"]\nmodel: deals\n'
        b"expression: SUM(DATE_DIFF('day', created_on, closed_on))\n"
    ),
}
CRM_SCHEMA = """
CREATE TABLE reps (rep_id INTEGER, rep_name VARCHAR, rep_email VARCHAR);
INSERT INTO reps VALUES (1, 'Ana', 'ana@x.io'), (2, 'Ben', 'ben@x.io'), (3, 'Cy', 'cy@x.io');
CREATE TABLE accounts (account_id INTEGER, account_name VARCHAR, industry VARCHAR,
    owner_rep_id INTEGER);
INSERT INTO accounts VALUES (10, 'Acme', 'Retail', 2), (11, 'Bolt', 'Finance', 1),
    (12, 'Core', 'Retail', 3);
CREATE TABLE deals (deal_id INTEGER, account_id INTEGER, rep_id INTEGER, stage VARCHAR,
    is_won BOOLEAN, isclosed BOOLEAN, amount DECIMAL(10, 2), probability INTEGER,
    created_on DATE, closed_on DATE);
INSERT INTO deals VALUES
    (1, 10, 1, 'Closed Won', TRUE, TRUE, 100, 100, DATE '2024-01-01', DATE '2024-02-01'),
    (2, 10, 2, 'Closed Lost', FALSE, TRUE, 300, 0, DATE '2024-01-10', DATE '2024-03-01'),
    (3, 11, 2, 'Open', FALSE, FALSE, 500, 40, DATE '2024-02-01', DATE '2024-06-30'),
    (4, 12, 3, 'Closed Won', TRUE, TRUE, 250, 100, DATE '2023-05-01', DATE '2023-07-01'),
    (5, 11, 1, 'Open', FALSE, FALSE, 50, 20, DATE '2024-03-01', DATE '2024-09-01'),
    (6, 12, 3, 'Closed Won', TRUE, TRUE, 90, 100, DATE '2024-04-01', DATE '2024-04-20');
CREATE TABLE store_days (day DATE, store VARCHAR, sales INTEGER, visits INTEGER);
INSERT INTO store_days VALUES (DATE '2024-01-01', 'A', 10, 3), (DATE '2024-01-01', 'B', 30, 5);
"""


@pytest.fixture(scope="module")
def crm() -> Lens:
    return load_lens("crm", CRM)


@pytest.fixture(scope="module")
def crm_warehouse(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("crm") / "crm.duckdb"))
    con.execute(CRM_SCHEMA)
    yield con
    con.close()


@pytest.fixture(scope="module")
def crm_values(crm_warehouse: duckdb.DuckDBPyConnection, crm: Lens) -> DimensionValues:
    return _values(crm_warehouse, crm)


FACT_SHAPES: list[tuple[str, str, str]] = [
    (
        "average_of_fact_by_joined_dimension_whole_span",
        "What is the average deal size by industry over the entire available time period?",
        "SELECT industry, AVG(amount) FROM deals JOIN accounts USING (account_id) GROUP BY 1",
    ),
    (
        "who_highest_average_in_the_team",
        "Who has the highest average deal size in the team over the entire available time period?",
        # The deal's own rep (the shortest join path), not the account owner.
        "SELECT rep_name, AVG(amount) AS a FROM deals JOIN reps USING (rep_id) "
        "GROUP BY 1 ORDER BY a DESC LIMIT 1",
    ),
    (
        "who_most_metric",
        "Who sold the most revenue in 2024?",
        "SELECT rep_name, SUM(amount) AS s FROM deals JOIN reps USING (rep_id) "
        "WHERE year(closed_on) = 2024 GROUP BY 1 ORDER BY s DESC LIMIT 1",
    ),
    (
        "fact_with_expression_min_max",
        "Maximum sales cycle length by stage in 2024",
        "SELECT stage, MAX(closed_on - created_on) FROM deals "
        "WHERE year(closed_on) = 2024 GROUP BY 1",
    ),
    (
        "fact_without_metric_average_of_the",
        "Mean of the probability for each industry",
        "SELECT industry, AVG(probability) FROM deals JOIN accounts USING (account_id) GROUP BY 1",
    ),
    (
        "flag_before_model_noun",
        "What is the average deal size of won deals?",
        "SELECT AVG(amount) FROM deals WHERE is_won",
    ),
    (
        "flag_without_underscore_and_breakdown",
        "Total deal size of closed deals by sales rep",
        "SELECT rep_name, SUM(amount) FROM deals JOIN reps USING (rep_id) WHERE isclosed "
        "GROUP BY 1",
    ),
    (
        "metric_total_of_all_time",
        "Total revenue of all time",
        "SELECT SUM(amount) FROM deals",
    ),
    (
        "total_on_average_metric_uses_the_fact",
        "Total sales cycle length",
        "SELECT SUM(closed_on - created_on) FROM deals",
    ),
]


@pytest.mark.parametrize(
    ("question", "oracle"), [s[1:] for s in FACT_SHAPES], ids=[s[0] for s in FACT_SHAPES]
)
def test_fact_who_and_flag_shapes_return_the_oracle_rows(
    crm: Lens,
    crm_warehouse: duckdb.DuckDBPyConnection,
    crm_values: DimensionValues,
    question: str,
    oracle: str,
) -> None:
    result = _ask(crm, question, crm_values)
    assert result.sql is not None, result.declined
    generated = crm_warehouse.execute(result.sql).fetchall()
    expected = crm_warehouse.execute(oracle).fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert _same_rows(generated, expected), (result.sql, generated, expected)


def test_fact_aggregate_follows_the_sql_conventions(
    crm: Lens, crm_warehouse: duckdb.DuckDBPyConnection, crm_values: DimensionValues
) -> None:
    sql = _ask(crm, "Average deal size by industry", crm_values).sql
    assert sql is not None and "AVG(d.amount)" in sql
    cursor = crm_warehouse.execute(sql)
    assert [d[0] for d in cursor.description] == ["industry", "avg_amount"]
    # Without an aggregation word the phrase is still the metric.
    plain = _ask(crm, "Deal size by industry", crm_values).sql
    assert plain is not None and "SUM(d.amount) AS amount" in plain


def test_the_amount_fact_of_the_shop_lens_can_be_averaged(
    shop: Lens, warehouse: duckdb.DuckDBPyConnection, values: DimensionValues
) -> None:
    sql = _ask(shop, "Average amount by region", values).sql
    assert sql is not None
    oracle = (
        "SELECT region_name, AVG(amount) FROM orders JOIN customers USING (customer_id) "
        "JOIN regions USING (region_id) GROUP BY 1"
    )
    assert _same_rows(warehouse.execute(sql).fetchall(), warehouse.execute(oracle).fetchall())


FACT_DECLINES: list[tuple[str, str, str]] = [
    ("fact_without_aggregation", "Probability by stage", "say how to aggregate"),
    ("flag_not_before_its_model", "Top 2 accounts by total closed revenue", "'closed'"),
    ("flag_after_the_noun", "Average deal size of deals that are won", "'won'"),
    ("metric_filters_would_be_lost", "Average booked amount", "filters would be lost"),
    ("count_is_not_a_fact_aggregate", "Count of probability", "'count' is not a way"),
    ("text_fact", "Average label by stage", "TEXT"),
    ("per_period_cells", "Average store sales by store", "per-period"),
    ("my_team", "Who has the highest average deal size in my team?", "'team'"),
    ("team_without_who", "Average deal size in the team", "'team'"),
    ("who_without_ranking", "Who has the average deal size?", "ranking word"),
    ("who_and_another_breakdown", "Who has the highest revenue by industry?", "cannot also"),
    ("who_with_grain", "Who has the highest monthly revenue?", "'who' with a month"),
    ("whole_span_and_period", "Revenue over the entire period in 2024", "both a period"),
    ("over_something_else", "Average deal size over 30 days", "'over'"),
    ("two_fact_aggregates_not_a_list", "Average deal size by average probability", "plain list"),
    ("mixed_aggregation_words", "Average maximum probability", "'average'"),
]


@pytest.mark.parametrize(
    ("question", "reason"), [d[1:] for d in FACT_DECLINES], ids=[d[0] for d in FACT_DECLINES]
)
def test_fact_who_and_flag_questions_outside_the_grammar_are_declined(
    crm: Lens, crm_values: DimensionValues, question: str, reason: str
) -> None:
    result = _ask(crm, question, crm_values)
    assert result.sql is None, result.sql
    assert result.declined is not None and reason in result.declined, result.declined


def test_a_grain_word_in_a_fact_phrase_declines_even_without_a_key(
    crm_values: DimensionValues,
) -> None:
    keyless = SNAPSHOT.replace(b"primary_key: [day, store]\n", b"")
    lens = load_lens("crm", {**CRM, "models/store_days.yaml": keyless})
    assert _ask(lens, "Average store sales by store", crm_values).sql is not None
    result = _ask(lens, "Average daily visits by store", crm_values)
    assert result.declined is not None and "per-period" in result.declined


def test_who_needs_one_person_dimension(shop: Lens, values: DimensionValues) -> None:
    result = _ask(shop, "Who had the most units sold?", values)
    assert result.declined is not None and "no dimension of the lens names one" in result.declined
    # A relative "who" is an ordinary word, as before.
    relative = _ask(shop, "Number of orders by customers who are in the West region", values)
    assert relative.sql is not None, relative.declined


def test_assembly_selects_fact_person_and_flag_models(crm: Lens) -> None:
    assert assemble(crm, "Mean probability by industry").models == ("accounts", "deals")
    assert assemble(crm, "Who has the highest revenue?").models == ("deals", "reps")
    assert assemble(crm, "Average deal size of won deals").models == ("deals",)
    found = retrieve(crm, "average deal size of won deals")
    kinds = [(m.kind, m.targets[0].name) for m in found.mentions]
    assert kinds == [("metric", "amount"), ("flag", "is_won")]
    assert [f.name for f in found.mentions[0].facts] == ["amount"]


# ---------------------------------------------------------------- assembly


def test_normalization_is_case_punctuation_and_plural_blind() -> None:
    assert normalize("Net Revenue, by Product-Categories?") == "net revenue by product category"
    assert tokenize("customer's boxes branches") == ("customer", "box", "branch")
    assert normalize("status analysis") == "status analysis"


def test_retrieval_prefers_the_longest_phrase(shop: Lens) -> None:
    found = retrieve(shop, "average order value by customer segment")
    assert found.metrics() == ("average_order_value",)
    kinds = [(m.kind, m.targets[0].name) for m in found.mentions]
    assert kinds == [("metric", "average_order_value"), ("dimension", "segment")]


@pytest.mark.parametrize(
    ("question", "metrics", "models"),
    [
        ("How many orders were placed in 2024?", ("order_count",), ("orders",)),
        ("Net revenue by region", ("net_revenue",), ("customers", "orders", "regions")),
        ("Net revenue for the SMB segment", ("net_revenue",), ("customers", "orders")),
        ("Units sold per product category", ("units_sold",), ("orders", "products")),
        ("What is the weather in Paris?", (), ()),
    ],
)
def test_assembly_selects_only_what_the_question_names(
    shop: Lens, question: str, metrics: tuple[str, ...], models: tuple[str, ...]
) -> None:
    request = assemble(shop, question)
    assert request.metrics == metrics
    assert request.models == models
    assert request.skills == ("skills/style.md",)
    assert request.tiers == ("fast",)
    expected = {f"metrics/{m}" for m in metrics} | {f"models/{m}" for m in models}
    assert request.used_assets() == frozenset(expected | {"skills/style.md"})


def test_assembly_follows_joins_transitively() -> None:
    # region lives two joins away; customers is on the path and is selected too.
    lens = load_lens("shop", SHOP)
    assert assemble(lens, "orders by sales region").models == ("customers", "orders", "regions")


ANSWER = """\
id: {id}
question: "{question}"
sql: "{sql}"
status: active
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def _with_exemplars() -> Lens:
    files = dict(SHOP)
    files["answers/rev_2024.yaml"] = ANSWER.format(
        id="rev_2024",
        question="What was net revenue in 2024?",
        sql="SELECT SUM(amount) FROM orders WHERE status = 'completed' AND year(order_date)=2024",
    ).encode()
    exemplars = {
        # Same question, other punctuation and case.
        "same_question": ("what was NET revenue in 2024", "SELECT 1"),
        # Another question, but the answer's SQL reformatted with a comment.
        "same_sql": (
            "Net revenue during 2024",
            "select sum(amount) -- total\\nfrom orders where status = 'completed' "
            "and YEAR(order_date) = 2024",
        ),
        "similar": ("What was net revenue in 2023?", "SELECT 2"),
        "unrelated": ("Orders per category", "SELECT 3"),
    }
    for name, (question, sql) in exemplars.items():
        files[f"exemplars/{name}.yaml"] = (
            f'name: {name}\nquestion: "{question}"\nsql: "{sql}"\n'
        ).encode()
    return load_lens("shop", files)


def test_the_answer_under_test_is_never_folded_as_an_exemplar() -> None:
    lens = _with_exemplars()
    question = lens.answers[AnswerId("rev_2024")].question
    free = assemble(lens, question)
    assert set(free.exemplars) == {"same_question", "same_sql", "similar"}
    assert free.exemplars[0] == "same_question"  # most similar first

    excluded = assemble(lens, question, exclude_answer=AnswerId("rev_2024"))
    assert excluded.exemplars == ("similar",)
    assert excluded.excluded_answer == "rev_2024"
    assert "exemplars/same_question" not in excluded.used_assets()


def test_an_exact_exemplar_is_served_only_when_folded() -> None:
    lens = _with_exemplars()
    question = lens.answers[AnswerId("rev_2024")].question
    served = generate(lens, assemble(lens, question), {})
    assert served.sql == "SELECT 1"
    compiled = generate(lens, assemble(lens, question, exclude_answer=AnswerId("rev_2024")), {})
    assert compiled.sql is not None and "SUM(o.amount)" in compiled.sql


def test_unknown_excluded_answer_is_an_error(shop: Lens) -> None:
    with pytest.raises(KeyError):
        assemble(shop, "Net revenue", exclude_answer=AnswerId("nope"))


# ---------------------------------------------------------------- tiers


def _with_tiers(tiers: str) -> Lens:
    return load_lens(
        "shop", {**SHOP, "lens.yaml": f"name: shop\ngenerator:\n  tiers: {tiers}\n".encode()}
    )


def test_smart_alone_declines_as_not_configured() -> None:
    lens = _with_tiers("[smart]")
    result = _ask(lens, "Net revenue by region", {})
    assert (result.tier, result.sql, result.declined) == (
        "smart",
        None,
        "smart tier not configured",
    )


def test_fast_then_smart_keeps_the_fast_answer_or_reason() -> None:
    lens = _with_tiers("[fast, smart]")
    assert _ask(lens, "Net revenue by region", {}).tier == "fast"
    declined = _ask(lens, "What is the weather in Paris?", {})
    assert declined.tier == "fast" and declined.sql is None


def test_parse_is_consistent_with_assembly(shop: Lens, values: DimensionValues) -> None:
    plan = parse(shop, "Top 2 product categories by net revenue in 2024", values)
    assert (plan.measure.name, plan.breakdowns, plan.rank) == (
        "net_revenue",
        (("products", "category"),),
        (True, 2),
    )


# ---------------------------------------------------------------- example lenses


def _lens_files(name: str) -> Mapping[str, bytes]:
    root = LENSES_DIR / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def example_warehouse(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("examples") / "examples.duckdb"))
    for csv in sorted(LENSES_DIR.glob("*/seeds/*.csv")):
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {csv.stem.lower()} AS SELECT * FROM read_csv_auto(?)",
            [str(csv)],
        )
    yield con
    con.close()


def _example_answers() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name in ("sales", "finance"):
        if not (LENSES_DIR / name / "lens.yaml").exists():
            continue
        try:
            lens = load_lens(name, _lens_files(name))
        except LensLoadError:
            out.append((name, "(lens does not load)"))  # the test reports the load error
            continue
        out.extend((name, answer.id) for answer in lens.active_answers())
    return out


EXAMPLES = _example_answers()


@pytest.mark.skipif(not EXAMPLES, reason="the example lenses are not in this checkout")
@pytest.mark.parametrize(
    ("lens_name", "answer_id"), EXAMPLES, ids=[f"{n}/{a}" for n, a in EXAMPLES]
)
def test_example_answer_is_reproduced(
    example_warehouse: duckdb.DuckDBPyConnection, lens_name: str, answer_id: str
) -> None:
    lens = load_lens(lens_name, _lens_files(lens_name))
    answer = lens.answers[AnswerId(answer_id)]
    request = assemble(lens, answer.question, exclude_answer=AnswerId(answer_id))
    result = generate(lens, request, _values(example_warehouse, lens))
    assert result.sql is not None, f"declined: {result.declined}"
    generated = example_warehouse.execute(result.sql).fetchall()
    expected = example_warehouse.execute(answer.sql).fetchall()
    assert _same_rows(generated, expected), (result.sql, generated[:5], expected[:5])
