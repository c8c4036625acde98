"""The fast tier's test lenses: a shop and a CRM lens, their warehouses, and helpers.

``SHOP`` (orders, customers, regions, products; four metrics) and ``CRM`` (deals shaped
like an imported Cortex model) are ``{lens-relative path: bytes}`` for
:func:`reconciler.lens.load_lens`; ``SCHEMA`` and ``CRM_SCHEMA`` build their DuckDB
warehouses. :func:`grammar_cases` reads the grammar cases of
``tests/fixtures/fast_tier_cases.yaml``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import yaml

from reconciler.assembly.grain import (
    KeyFact,
    KeyPlace,
    WarehouseFacts,
    duplicate_detail,
    duplicate_key_sql,
    one_sides,
)
from reconciler.assembly.request import assemble
from reconciler.generators import DimensionValues, Generation, generate
from reconciler.lens import Lens, load_lens
from tests.helpers import FIXTURES

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


# ---------------------------------------------------------------- helpers


def canonical_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
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


def same_rows(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]) -> bool:
    """The same rows in any order, numbers equal to a 1e-9 relative tolerance."""
    a, b = canonical_rows(left), canonical_rows(right)
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


def dimension_values(con: duckdb.DuckDBPyConnection, lens: Lens) -> DimensionValues:
    """Distinct values of every dimension, read from the warehouse as the suite does,
    with its join-key facts (:class:`~reconciler.assembly.grain.WarehouseFacts`)."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for model in lens.models.values():
        for col in model.dimensions:
            rows = con.execute(
                f"SELECT DISTINCT CAST({col.sql} AS VARCHAR) FROM {model.table} "
                f"WHERE {col.sql} IS NOT NULL"
            ).fetchall()
            out[(model.name, col.name)] = tuple(sorted(str(r[0]) for r in rows))
    return WarehouseFacts(out, key_facts(con, lens))


def key_facts(con: duckdb.DuckDBPyConnection, lens: Lens) -> dict[KeyPlace, KeyFact]:
    """The join-key facts of ``lens``, read with the suite's own bounded query."""
    facts: dict[KeyPlace, KeyFact] = {}
    for model, columns in one_sides(lens):
        sql = duplicate_key_sql(lens.models[model].table, columns, "duckdb")
        row = con.execute(sql).fetchone()
        detail = duplicate_detail(columns, tuple(row)) if row else ""
        facts[(model, columns)] = KeyFact(model, columns, row is None, detail)
    return facts


def ask(lens: Lens, question: str, values: DimensionValues, **kw: Any) -> Generation:
    """Assemble ``question`` on ``lens`` (``kw``: :func:`assemble` options) and generate."""
    return generate(lens, assemble(lens, question, **kw), values)


def grammar_cases(section: str, kind: str) -> list[tuple[str, str, str]]:
    """``(id, question, oracle or reason)`` of ``kind`` (``shapes``/``declines``) in ``section``."""
    data = yaml.safe_load((FIXTURES / "fast_tier_cases.yaml").read_text(encoding="utf-8"))
    other = "oracle" if kind == "shapes" else "reason"
    return [(c["id"], c["question"], c[other]) for c in data[section][kind]]


@functools.cache
def _sections() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / "fast_tier_cases.yaml").read_text("utf-8"))
    return data


def held(section: str, question: str, result: Generation) -> None:
    """``result`` of ``question`` is read as its case in ``fast_tier_cases.yaml``'s
    ``section`` says: a shape's ``reads_as``, a decline's ``decline_kind``."""
    shapes, declines = _sections()[section]["shapes"], _sections()[section]["declines"]
    for case in shapes:
        if case["question"] == question:
            assert result.reading == case["reads_as"], f"read as {result.reading!r}"
            return
    for case in declines:
        if case["question"] == question:
            kind = result.decline_kind.value if result.decline_kind else None
            assert kind == case["decline_kind"], f"declined as {kind}: {result.declined}"
            return
    raise AssertionError(f"no case of {section!r} asks {question!r}")


def golden_warehouses(root: Path, schemas: dict[str, str]) -> dict[str, Path]:
    """One DuckDB file per golden-case lens under ``root``, each built from its schema SQL."""
    paths: dict[str, Path] = {}
    for name, schema in schemas.items():
        paths[name] = root / f"{name}.duckdb"
        con = duckdb.connect(str(paths[name]))
        con.execute(schema)
        con.close()
    return paths


def rounded(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows in their order, numbers as floats rounded to 6 decimals."""
    return [
        tuple(round(float(v), 6) if isinstance(v, (int, float, Decimal)) else v for v in row)
        for row in rows
    ]


def check_golden_case(lens: Lens, warehouse: Path, case: dict[str, Any]) -> None:
    """Ask ``case["question"]`` on ``lens`` over ``warehouse`` and hold it to the case.

    A case with ``reason`` must decline with that text in its reason, and of its
    ``decline_kind`` (:class:`~reconciler.reading.ir.DeclineKind`). Otherwise the
    question must be read as its ``reads_as`` says (the reading's compact form,
    :meth:`~reconciler.reading.ir.Plan.reads_as`), and the generated SQL must run and
    return the hand-written ``oracle``'s rows (as a multiset, or in order with
    ``ordered: true``) with the same column count, and contain ``contains`` / lack
    ``lacks`` when the case gives them. ``python -m tests.helpers.readings`` writes
    a missing ``reads_as`` / ``decline_kind`` from the current code, for review.
    """
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        result = ask(lens, case["question"], dimension_values(con, lens))
        if "reason" in case:
            assert result.sql is None, f"answered instead of declining:\n{result.sql}"
            assert result.declined is not None and case["reason"] in result.declined, (
                result.declined
            )
            kind = result.decline_kind.value if result.decline_kind else None
            assert kind == case["decline_kind"], f"declined as {kind}: {result.declined}"
            return
        assert result.sql is not None, result.declined
        if "contains" in case:
            assert case["contains"] in result.sql, result.sql
        if "lacks" in case:
            assert case["lacks"] not in result.sql, result.sql
        _holds_served(con, case, result)
    finally:
        con.close()


def check_paraphrase(lens: Lens, warehouse: Path, case: dict[str, Any], question: str) -> None:
    """Ask ``question``, a paraphrase of ``case``, on the case's lens and warehouse.

    It must decline (of any :class:`~reconciler.reading.ir.DeclineKind`) or be served
    exactly as the case is: its ``reads_as`` and its oracle's rows. A paraphrase of a
    declined case must decline. Never a different served reading.
    """
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        result = ask(lens, question, dimension_values(con, lens))
        if result.sql is None:
            assert result.decline_kind is not None, f"declined with no kind: {result.declined}"
            return
        assert "reason" not in case, f"served what the case declines:\n{result.sql}"
        _holds_served(con, case, result)
    finally:
        con.close()


def _holds_served(con: duckdb.DuckDBPyConnection, case: dict[str, Any], result: Generation) -> None:
    """``result`` is read as ``case``'s ``reads_as`` and returns its oracle's rows."""
    assert result.sql is not None
    assert result.reading == case["reads_as"], f"read as {result.reading!r}"
    generated = con.execute(result.sql)
    columns = len(generated.description or ())
    rows = generated.fetchall()
    oracle = con.execute(case["oracle"])
    expected = oracle.fetchall()
    assert expected, "the oracle must return rows for the comparison to mean something"
    assert columns == len(oracle.description or ()), f"column count differs:\n{result.sql}"
    if case.get("ordered"):
        assert rounded(rows) == rounded(expected), f"{result.sql}\n{rows} != {expected}"
    else:
        assert same_rows(rows, expected), f"{result.sql}\n{rows} != {expected}"


def paraphrases(case: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(question, xfail reason or None)`` of each of ``case``'s ``paraphrases``."""
    out: list[tuple[str, str | None]] = []
    for item in case.get("paraphrases", ()):
        if isinstance(item, str):
            out.append((item, None))
        else:
            out.append((item["question"], item.get("xfail")))
    return out


@dataclass(frozen=True)
class GoldenFile:
    """One golden fixture file of the fast tier, read from ``tests/fixtures/``.

    Either ``lenses: {name: {files: {path: text}, schema: SQL}}`` with cases naming
    their ``lens``, or one ``lens: {path: text}`` with its ``schema`` (the lens named
    by its ``lens.yaml``); ``cases`` is the list of cases either way.

    A case may list ``paraphrases``: other wordings of its question, each a string or
    ``{question: …, xfail: reason}``. Each is asked on the case's lens and must read
    the same (the case's ``reads_as`` and oracle rows) or decline, never be served
    another reading (:func:`check_paraphrase`); ``xfail`` names a known misreading,
    which the runner expects to fail, strictly.
    """

    files: dict[str, dict[str, bytes]]
    schemas: dict[str, str]
    cases: list[dict[str, Any]]

    @classmethod
    def read(cls, name: str) -> GoldenFile:
        """Parse ``tests/fixtures/<name>``."""
        data: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text("utf-8"))
        if "lenses" in data:
            lenses = data["lenses"]
            files = {n: {p: t.encode() for p, t in s["files"].items()} for n, s in lenses.items()}
            return cls(files, {n: spec["schema"] for n, spec in lenses.items()}, data["cases"])
        only = yaml.safe_load(data["lens"]["lens.yaml"])["name"]
        files = {only: {p: t.encode() for p, t in data["lens"].items()}}
        return cls(files, {only: data["schema"]}, data["cases"])

    def lens(self, name: str | None = None, extra: dict[str, bytes] | None = None) -> Lens:
        """The lens ``name`` (default: the file's one lens), with ``extra`` files over it."""
        name = name or next(iter(self.files))
        return load_lens(name, {**self.files[name], **(extra or {})})

    def warehouses(self, root: Path) -> dict[str, Path]:
        """One DuckDB file per lens under ``root`` (:func:`golden_warehouses`)."""
        return golden_warehouses(root, self.schemas)

    def check(self, warehouses: dict[str, Path], case: dict[str, Any]) -> None:
        """:func:`check_golden_case` of ``case`` on its lens (with the case's own
        ``lens_yaml`` over the lens's, when it gives one) and warehouse."""
        name = case.get("lens") or next(iter(self.files))
        extra = {"lens.yaml": case["lens_yaml"].encode()} if "lens_yaml" in case else None
        check_golden_case(self.lens(name, extra), warehouses[name], case)

    def check_paraphrase(
        self, warehouses: dict[str, Path], case: dict[str, Any], question: str
    ) -> None:
        """:func:`check_paraphrase` of ``question``, a paraphrase of ``case``, on the
        case's lens and warehouse."""
        name = case.get("lens") or next(iter(self.files))
        extra = {"lens.yaml": case["lens_yaml"].encode()} if "lens_yaml" in case else None
        check_paraphrase(self.lens(name, extra), warehouses[name], case, question)
