"""Every answered fast-tier golden case, run on MariaDB as dst runs it there.

The same cases as ``tests/test_fast_tier_postgres.py`` (:func:`tests.helpers.golden.collect`):
each is generated as in the DuckDB tests, transpiled to sqlglot's ``mysql`` dialect with
:func:`reconciler.guard.transpile`, and executed through dst's own read-only
:class:`~reconciler.warehouse.connection.Warehouse`, as a user holding only ``SELECT``,
on a scratch server database holding the same data: one database per lens
(``<database>__<lens>``, binary collation, as ``dst seed --warehouse`` makes them), which
the warehouse puts first on the lens's path by naming it on every table. Its rows must
equal the hand-written oracle's rows on DuckDB, with the same column count. Skipped,
with the reason, when no MariaDB server answers (``tests/mariadb.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa
import sqlglot
from sqlglot import exp

from reconciler.guard import transpile
from reconciler.warehouse.connection import Warehouse
from reconciler.warehouse.mysql import binary_collation, lens_database
from tests import mariadb
from tests.helpers.golden import Golden, collect
from tests.helpers.grammar import ask, dimension_values, rounded, same_rows

LENSES, SCHEMAS, CASES = collect()
# Golden cases whose rows differ on MariaDB by a warehouse semantic, not by dst: each is
# still run, and must match once the one difference named here is taken out.
NAIVE_TIMES = {
    "reach-timestamp_bucket_stays_a_timestamp": "MySQL has no time-zone-aware type: "
    "FROM_UNIXTIME (DuckDB's TO_TIMESTAMP) is the session's wall-clock DATETIME, where "
    "DuckDB gives a TIMESTAMP WITH TIME ZONE; the server here runs in UTC",
}


@dataclass
class Warehouses:
    duck: dict[str, duckdb.DuckDBPyConnection]
    mariadb: Warehouse


def _load(conn: sa.Connection, database: str, sql: str, duck: duckdb.DuckDBPyConnection) -> None:
    """The tables of ``sql`` created in ``database``, holding the rows DuckDB computed.

    The rows are copied, not re-computed: the fixtures date some of them with DuckDB's
    ``CURRENT_DATE - 30`` (date minus days), which MySQL reads as a number.
    """
    mariadb.run(conn, f"USE {mariadb.quote(database)}")
    for statement in sqlglot.parse(sql, read="duckdb"):
        if isinstance(statement, exp.Create) and statement.kind == "TABLE":
            mariadb.run(conn, statement.sql("mysql"))
    for (table,) in duck.execute("SELECT table_name FROM information_schema.tables").fetchall():
        rows = duck.execute(f'SELECT * FROM "{table}"').fetchall()
        if rows:
            marks = ", ".join(["%s"] * len(rows[0]))
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            cursor.executemany(f"INSERT INTO {mariadb.quote(table)} VALUES ({marks})", rows)
            cursor.close()


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouses]:
    with mariadb.scratch_database("golden") as scratch:
        admin = mariadb.admin_or_skip()
        root: Path = tmp_path_factory.mktemp("golden")
        duck: dict[str, duckdb.DuckDBPyConnection] = {}
        try:
            with admin.connect() as conn:
                collation = binary_collation(conn)
                for schema, sql in SCHEMAS.items():
                    duck[schema] = duckdb.connect(str(root / f"{schema}.duckdb"))
                    duck[schema].execute(sql)
                    database = lens_database(scratch.database, schema)
                    mariadb.run(
                        conn,
                        f"CREATE DATABASE {mariadb.quote(database)} "
                        f"CHARACTER SET utf8mb4 COLLATE {collation}",
                    )
                    _load(conn, database, sql, duck[schema])
                mariadb.grant_reader(conn, scratch)
            with Warehouse.open(scratch.reader_url) as warehouse:
                yield Warehouses(duck, warehouse)
        finally:
            for con in duck.values():
                con.close()
            admin.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_gives_the_oracle_rows_on_mariadb(warehouses: Warehouses, case: Golden) -> None:
    lens, duck = LENSES[case.lens], warehouses.duck[case.lens]
    result = ask(lens, case.question, dimension_values(duck, lens))
    assert result.sql is not None, result.declined
    sql = transpile(result.sql, lens.config.dialect, "mysql")
    ran = warehouses.mariadb.execute(sql, row_cap=1000, timeout_s=30.0, search_path=(case.lens,))
    rows = [tuple(r) for r in ran.rows]
    oracle = duck.execute(case.oracle)
    expected = oracle.fetchall()
    if case.id in NAIVE_TIMES:
        naive = [tuple(_naive_utc(v) for v in row) for row in expected]
        assert naive != expected, f"no longer differs ({NAIVE_TIMES[case.id]}): drop it"
        expected = naive
    assert columns_match(len(ran.columns), len(oracle.description or ())), sql
    if case.ordered:
        assert rounded(rows) == rounded(expected), f"{sql}\n{rows} != {expected}"
    else:
        assert same_rows(rows, expected), f"{sql}\n{rows} != {expected}"


def _naive_utc(value: object) -> object:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def columns_match(got: int, expected: int) -> bool:
    """The generated query returns as many columns as the oracle."""
    return got == expected
