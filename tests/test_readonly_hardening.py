"""Bounds of the statement guard and the connection settings behind it."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reconciler import guard
from reconciler.errors import UnsafeSqlError, WarehouseError
from reconciler.warehouse.connection import Warehouse
from tests import pg
from tests.figures import record


def _longest_query() -> str:
    body = " UNION ALL ".join(
        f"SELECT {i} AS n, 'x{i}' AS s FROM t WHERE a IN (1, 2)" for i in range(10_000)
    )
    return body[: guard.MAX_SQL_CHARS].rsplit(" UNION ALL ", 1)[0]


def test_sql_over_the_size_limit_is_refused_before_parsing() -> None:
    sql = "SELECT 1 AS x" + " " * guard.MAX_SQL_CHARS
    with pytest.raises(UnsafeSqlError, match="characters long") as info:
        guard.check_read_only(sql, "duckdb")
    assert info.value.fix


def test_deep_nesting_is_refused_without_recursing() -> None:
    depth = guard.MAX_NESTING + 1
    with pytest.raises(UnsafeSqlError, match=f"{depth} deep"):
        guard.check_read_only("SELECT " + "(" * depth + "1" + ")" * depth, "postgres")
    inside_a_string = "SELECT '" + "(" * depth + "' AS s"
    guard.check_read_only(inside_a_string, "postgres")
    fine = guard.MAX_NESTING
    guard.check_read_only("SELECT " + "(" * fine + "1" + ")" * fine, "postgres")


def test_validation_time_of_the_largest_accepted_query_is_bounded() -> None:
    sql = _longest_query()
    assert len(sql) <= guard.MAX_SQL_CHARS
    guard._parsed.cache_clear()  # time a parse, not a look-up of the memo
    started = time.perf_counter()
    guard.check_read_only(sql, "postgres")
    elapsed = time.perf_counter() - started
    record(f"guard: validating a {len(sql)}-character query took {elapsed:.2f} s")
    assert elapsed < 10


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT pg_sleep(10)",
        "SELECT query_to_xml('DELETE FROM items RETURNING id', true, false, '')",
        "SELECT * FROM dblink_get_result('c') AS t(a integer)",
        "SELECT lo_get(4242)",
        "SELECT pg_advisory_unlock_all()",
    ],
)
def test_functions_that_reach_outside_or_run_sql_text_are_denied(sql: str) -> None:
    with pytest.raises(UnsafeSqlError, match=r"\(\)"):
        guard.check_read_only(sql, "postgres")


def test_a_lens_may_allow_list_a_denied_function() -> None:
    sql = "SELECT nextval('ids') AS n"
    with pytest.raises(UnsafeSqlError, match="nextval"):
        guard.check_read_only(sql, "postgres")
    guard.check_read_only(sql, "postgres", allow_functions=["NEXTVAL"])
    # writes stay refused whatever is allow-listed
    with pytest.raises(UnsafeSqlError):
        guard.check_read_only("DELETE FROM t", "postgres", allow_functions=["nextval"])


def test_sqlite_reporting_pragmas_stay_readable(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    setup = sa.create_engine(f"sqlite:///{path.as_posix()}")
    with setup.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (a INTEGER, b TEXT)")
    setup.dispose()
    with Warehouse.open(f"sqlite:///{path.as_posix()}") as wh:
        rs = wh.execute(
            "SELECT name FROM pragma_table_info('t') ORDER BY cid", row_cap=5, timeout_s=5
        )
        assert rs.rows == (("a",), ("b",))
        with pytest.raises(WarehouseError, match="not authorized"):
            wh._execute_raw("PRAGMA query_only = OFF", row_cap=1, timeout_s=5)
        with pytest.raises(WarehouseError, match=r"not authorized|authorization denied"):
            wh._execute_raw(
                f"VACUUM INTO '{(tmp_path / 'copy.sqlite').as_posix()}'", row_cap=1, timeout_s=5
            )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.sqlite"]


@pytest.fixture
def pg_scratch() -> Iterator[pg.Scratch]:
    with pg.scratch_database("dst_ro") as scratch:
        yield scratch


def test_pg_session_is_read_only_before_any_statement(pg_scratch: pg.Scratch) -> None:
    # A URL asking for a read-write default still gets a read-only session.
    loosened = pg.admin_url().rsplit("/", 1)[0] + f"/{pg_scratch.database}"
    options = urllib.parse.quote("-c default_transaction_read_only=off")
    with Warehouse.open(f"{loosened}?options={options}") as wh:
        with wh._engine.connect() as conn:  # a bare pooled session, no SET TRANSACTION yet
            assert conn.exec_driver_sql("SHOW default_transaction_read_only").scalar() == "on"
            assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
        with (
            wh._read_only(5) as conn,
            pytest.raises(sa.exc.DBAPIError, match="before any query"),
        ):
            conn.exec_driver_sql("SET transaction_read_only = off")
        assert wh.execute("SELECT 1 AS one", row_cap=1, timeout_s=5).rows == ((1,),)
