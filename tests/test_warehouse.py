"""The warehouse edge against a real DuckDB file, and a real PostgreSQL when reachable."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from reconciler.errors import LensLoadError, UnsafeSqlError, UsageError, WarehouseError
from reconciler.warehouse import connection as warehouse
from reconciler.warehouse.connection import Warehouse, embedded_path, redact, resolve_url
from reconciler.warehouse.seed import SeedFile, seed
from tests import servers

ORDERS = (
    b"ID,Region,Amount,Ordered_On\n"
    b"1,east,10.5,2024-01-03\n"
    b"2,west,20,2024-01-04\n"
    b"3,east,5.25,2024-02-01\n"
    b"4,north,7,2024-02-10\n"
    b"5,,1,2024-02-11\n"
)
NUMBERS = b"n\n" + b"".join(f"{i}\n".encode() for i in range(1, 11))
PG_DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
SLOW_DUCKDB = "SELECT count(*) FROM range(100000000) a, range(100) b"


def _seeds() -> list[SeedFile]:
    """Repository-level seeds: the default schema, read without a search path."""
    return [
        SeedFile(None, "orders", "seeds/orders.csv", ORDERS),
        SeedFile(None, "numbers", "seeds/numbers.csv", NUMBERS),
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    seed(tmp_path, _seeds())
    return tmp_path


@pytest.fixture
def duck(repo: Path) -> Iterator[Warehouse]:
    wh = Warehouse.open(f"duckdb:///{embedded_path(repo).as_posix()}")
    yield wh
    wh.close()


# ---------------------------------------------------------------- seeding


def test_seed_builds_tables_with_lowercase_columns_and_types(repo: Path, duck: Warehouse) -> None:
    assert duck.dialect == "duckdb"
    rs = duck.execute("SELECT * FROM orders ORDER BY id", row_cap=100, timeout_s=10)
    assert rs.columns == ("id", "region", "amount", "ordered_on")
    assert rs.rows[0] == (1, "east", 10.5, dt.date(2024, 1, 3))
    assert rs.rows[4][1] is None
    assert (repo / ".dst" / ".gitignore").read_text(encoding="utf-8") == "*\n"
    assert sorted(p.name for p in (repo / ".dst").iterdir()) == [".gitignore", "warehouse.duckdb"]


def test_seed_reports_counts(tmp_path: Path) -> None:
    report = seed(tmp_path, _seeds())
    assert report.path == embedded_path(tmp_path)
    assert report.row_counts == {"numbers": 10, "orders": 5}
    assert [t.name for t in report.tables] == ["numbers", "orders"]
    assert report.tables[1].source == "seeds/orders.csv"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b"a,b\n1,2\n3,4,5,6\n", id="ragged-rows"),
        pytest.param(b"a,b\n1,\xff\xfe\n", id="not-utf8"),
        pytest.param(b"", id="empty"),
        pytest.param(b"Id,ID\n1,2\n", id="columns-differ-only-in-case"),
        pytest.param(b"a,,c\n1,2,3\n", id="unnamed-column"),
    ],
)
def test_seed_failure_leaves_previous_warehouse_intact(repo: Path, bad: bytes) -> None:
    before = _digest(embedded_path(repo))
    broken = [*_seeds(), SeedFile("sales", "zz_broken", "lenses/sales/seeds/zz_broken.csv", bad)]
    with pytest.raises(LensLoadError) as info:
        seed(repo, broken)
    assert info.value.path == "lenses/sales/seeds/zz_broken.csv"
    assert str(repo) not in info.value.render(), "no temp paths of this machine in messages"
    assert _digest(embedded_path(repo)) == before
    assert sorted(p.name for p in (repo / ".dst").iterdir()) == [".gitignore", "warehouse.duckdb"]
    with Warehouse.open(f"duckdb:///{embedded_path(repo).as_posix()}") as wh:
        assert wh.execute("SELECT count(*) FROM orders", row_cap=1, timeout_s=10).rows == ((5,),)


def test_two_lenses_each_seed_their_own_table_of_one_name(tmp_path: Path) -> None:
    other = b"sku,label\nA1,first\n"
    both = [
        *_seeds(),
        SeedFile("sales", "orders", "lenses/sales/seeds/orders.csv", ORDERS),
        SeedFile("my-lens", "orders", "lenses/my-lens/seeds/orders.csv", other),
    ]
    report = seed(tmp_path, both, schemas=["empty"])
    assert report.row_counts == {"numbers": 10, "orders": 5, "my-lens.orders": 1, "sales.orders": 5}
    assert report.schemas == ("empty", "my-lens", "sales")
    with Warehouse.open(f"duckdb:///{embedded_path(tmp_path).as_posix()}") as wh:
        assert wh.schemas() >= {"main", "sales", "my-lens", "empty"}
        mine = wh.execute("SELECT * FROM orders", row_cap=9, timeout_s=10, search_path=["my-lens"])
        assert mine.columns == ("sku", "label")
        # a table the lens lacks comes from the default schema, after the lens's own
        numbers = wh.execute("SELECT count(*) FROM numbers", row_cap=1, timeout_s=10,
                             search_path=["my-lens"])  # fmt: skip
        assert numbers.rows == ((10,),)
        # the pooled connection does not carry one lens's path into a query without one
        flat = wh.execute("SELECT * FROM orders ORDER BY id", row_cap=9, timeout_s=10)
        assert flat.columns[0] == "id"


def test_seed_same_table_of_one_lens_from_two_files_names_both(tmp_path: Path) -> None:
    clash = [
        SeedFile("sales", "orders", "lenses/sales/seeds/orders.csv", ORDERS),
        SeedFile(
            "sales", "orders", "lenses/sales/seeds/Orders.csv", ORDERS + b"6,x,1,2024-03-01\n"
        ),
    ]
    with pytest.raises(UsageError) as info:
        seed(tmp_path, clash)
    message = info.value.render()
    assert "lenses/sales/seeds/orders.csv" in message
    assert "lenses/sales/seeds/Orders.csv" in message
    assert not embedded_path(tmp_path).exists()


def test_seed_refuses_a_table_name_that_is_not_an_identifier(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="order-items"):
        seed(tmp_path, [SeedFile("s", "order-items", "lenses/s/seeds/order-items.csv", ORDERS)])


def test_reseed_replaces_the_file_seen_by_a_new_pool(repo: Path) -> None:
    seed(repo, [SeedFile(None, "orders", "seeds/orders.csv", b"id\n1\n")])
    with Warehouse.open(f"duckdb:///{embedded_path(repo).as_posix()}") as wh:
        assert wh.execute("SELECT count(*) FROM orders", row_cap=1, timeout_s=10).rows == ((1,),)
        with pytest.raises(WarehouseError, match="numbers"):
            wh.execute("SELECT * FROM numbers", row_cap=1, timeout_s=10)


# ---------------------------------------------------------------- DuckDB execution


def test_row_cap_fetches_one_extra_row(duck: Warehouse) -> None:
    exact = duck.execute("SELECT n FROM numbers ORDER BY n", row_cap=10, timeout_s=10)
    assert len(exact.rows) == 10 and exact.truncated is False
    over = duck.execute("SELECT n FROM numbers ORDER BY n", row_cap=9, timeout_s=10)
    assert len(over.rows) == 9 and over.truncated is True
    assert over.rows[-1] == (9,)
    assert over.elapsed_s >= 0


def test_guard_refuses_writes_before_they_reach_the_connection(duck: Warehouse) -> None:
    with pytest.raises(UnsafeSqlError):
        duck.execute("DELETE FROM orders", row_cap=10, timeout_s=10)
    with pytest.raises(UnsafeSqlError):
        duck.execute("SELECT * FROM read_csv('x.csv')", row_cap=10, timeout_s=10)


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        pytest.param("CREATE TABLE t (a INTEGER)", "read-only", id="create-table"),
        pytest.param("INSERT INTO numbers VALUES (11)", "read-only", id="insert"),
        pytest.param("COPY orders TO '{tmp}/out.csv'", "disabled", id="copy-to"),
        pytest.param("SELECT * FROM read_csv('{tmp}/in.csv')", "disabled", id="read-csv"),
        pytest.param("SELECT * FROM '{tmp}/in.csv'", "disabled", id="replacement-scan"),
        pytest.param("ATTACH '{tmp}/other.duckdb' AS o", "disabled", id="attach"),
        pytest.param("SET enable_external_access = true", "locked", id="unlock-config"),
    ],
)
def test_duckdb_connection_is_read_only_without_the_guard(
    duck: Warehouse, tmp_path: Path, sql: str, refusal: str
) -> None:
    (tmp_path / "in.csv").write_text("a\n1\n", encoding="utf-8")
    with pytest.raises(WarehouseError, match=refusal):
        duck._execute_raw(sql.format(tmp=tmp_path.as_posix()), row_cap=10, timeout_s=10)
    assert not (tmp_path / "out.csv").exists()
    assert not (tmp_path / "other.duckdb").exists()
    assert duck.execute("SELECT count(*) FROM numbers", row_cap=1, timeout_s=10).rows == ((10,),)


def test_duckdb_timeout_interrupts_and_the_pool_recovers(duck: Warehouse) -> None:
    started = time.monotonic()
    with pytest.raises(WarehouseError, match=r"timed out after 0\.5 s"):
        duck.execute(SLOW_DUCKDB, row_cap=1, timeout_s=0.5)
    assert time.monotonic() - started < 15
    assert duck.execute("SELECT 42 AS x", row_cap=1, timeout_s=10).rows == ((42,),)


def test_as_of_pins_the_clock(duck: Warehouse) -> None:
    sql = "SELECT CURRENT_DATE AS d, now() AS t, today() AS t2"
    pinned = duck.execute(sql, row_cap=1, timeout_s=10, as_of="2024-02-29")
    assert pinned.rows == ((dt.date(2024, 2, 29), dt.datetime(2024, 2, 29), dt.date(2024, 2, 29)),)
    live = duck.execute("SELECT CURRENT_DATE AS d", row_cap=1, timeout_s=10)
    assert live.rows[0][0] != dt.date(2024, 2, 29) or dt.date.today() == dt.date(2024, 2, 29)


def test_as_of_relative_window(duck: Warehouse) -> None:
    sql = "SELECT count(*) FROM orders WHERE ordered_on >= CURRENT_DATE - INTERVAL 30 DAY"
    rs = duck.execute(sql, row_cap=1, timeout_s=10, as_of="2024-02-15")
    assert rs.rows == ((3,),)


def test_execution_error_is_a_warehouse_error(duck: Warehouse) -> None:
    with pytest.raises(WarehouseError, match="no_such_table") as info:
        duck.execute("SELECT * FROM no_such_table", row_cap=1, timeout_s=10)
    assert "\n" not in info.value.message


def test_distinct_values(duck: Warehouse) -> None:
    assert duck.distinct_values("orders", "region", timeout_s=10) == ("east", "north", "west")
    assert duck.distinct_values("orders", "upper(Region)", timeout_s=10) == (
        "EAST",
        "NORTH",
        "WEST",
    )
    assert duck.distinct_values("main.orders", "id", limit=5, timeout_s=10) == tuple("12345")
    assert duck.distinct_values("orders", "id", limit=4, timeout_s=10) == ()
    with pytest.raises(UnsafeSqlError):
        duck.distinct_values("orders", "(SELECT 1)", timeout_s=10)
    with pytest.raises(UnsafeSqlError):
        duck.distinct_values("read_csv('x.csv')", "a", timeout_s=10)


def test_open_missing_duckdb_file_says_run_seed(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError) as info:
        Warehouse.open(f"duckdb:///{embedded_path(tmp_path).as_posix()}")
    assert info.value.fix is not None and "dst seed" in info.value.fix


def test_sqlite_is_opened_read_only(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    engine = sa.create_engine(f"sqlite:///{path.as_posix()}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (a INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1), (2)")
    engine.dispose()
    with Warehouse.open(f"sqlite:///{path.as_posix()}") as wh:
        assert wh.dialect == "sqlite"
        rs = wh.execute("SELECT a FROM t ORDER BY a", row_cap=1, timeout_s=10)
        assert rs.rows == ((1,),) and rs.truncated
        with pytest.raises(WarehouseError, match="readonly"):
            wh._execute_raw("INSERT INTO t VALUES (3)", row_cap=1, timeout_s=10)
        slow = (
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000) "
            "SELECT count(*) FROM c"
        )
        with pytest.raises(WarehouseError, match=r"timed out after 0\.5 s"):
            wh.execute(slow, row_cap=1, timeout_s=0.5)
        assert wh.execute("SELECT count(*) FROM t", row_cap=1, timeout_s=10).rows == ((2,),)


# ---------------------------------------------------------------- URLs


def test_redact_hides_password_and_secret_query_values() -> None:
    shown = redact("postgresql://analyst:s3cr3t@db.example:5432/sales?sslmode=require&api_key=k9")
    assert "s3cr3t" not in shown and "k9" not in shown
    assert shown == "postgresql://analyst:***@db.example:5432/sales?api_key=***&sslmode=require"
    assert redact("not a url s3cr3t") == "<unparseable warehouse URL>"


def test_unreachable_warehouse_message_has_no_password() -> None:
    with pytest.raises(WarehouseError) as info:
        Warehouse.open("postgresql://analyst:s3cr3t@127.0.0.1:1/sales")
    text = info.value.render()
    assert "s3cr3t" not in text
    assert "analyst:***@127.0.0.1:1/sales" in text


@pytest.mark.parametrize(
    ("cli", "env", "lens", "repo_cfg", "expected"),
    [
        ("duckdb:///cli.db", "duckdb:///env.db", "duckdb:///l.db", "duckdb:///r.db", "--warehouse"),
        (None, "duckdb:///env.db", "duckdb:///l.db", "duckdb:///r.db", "DST_WAREHOUSE_URL"),
        (None, None, "duckdb:///l.db", "duckdb:///r.db", "lens warehouse:"),
        (None, "", "duckdb:///l.db", "duckdb:///r.db", "lens warehouse:"),
        (None, None, None, "duckdb:///r.db", "dst.yaml warehouse:"),
        (None, None, "  ", None, "embedded default"),
    ],
)
def test_resolve_url_precedence(
    tmp_path: Path,
    cli: str | None,
    env: str | None,
    lens: str | None,
    repo_cfg: str | None,
    expected: str,
) -> None:
    environ = {} if env is None else {"DST_WAREHOUSE_URL": env}
    url, source = resolve_url(cli, environ, lens, repo_cfg, tmp_path)
    assert source == expected
    if expected == "embedded default":
        assert url == f"duckdb:///{embedded_path(tmp_path).as_posix()}"
        assert make_url(url).database == embedded_path(tmp_path).as_posix()


def test_resolve_url_anchors_repo_files_and_expands_env(tmp_path: Path) -> None:
    url, _ = resolve_url(None, {}, None, "duckdb:///data/w.duckdb", tmp_path)
    assert make_url(url).database == (tmp_path / "data" / "w.duckdb").as_posix()
    cli, _ = resolve_url("duckdb:///data/w.duckdb", {}, None, None, tmp_path)
    assert cli == "duckdb:///data/w.duckdb", "a typed URL is used as typed"
    env = {"PGPASS": "s3cr3t"}
    url, source = resolve_url(None, env, "postgresql://a:${PGPASS}@h/db", None, tmp_path)
    assert make_url(url).password == "s3cr3t" and source == "lens warehouse:"
    with pytest.raises(UsageError, match="NOPE"):
        resolve_url(None, {}, "postgresql://a:${NOPE}@h/db", None, tmp_path)
    with pytest.raises(UsageError) as info:
        resolve_url("::not a url s3cr3t", {}, None, None, tmp_path)
    assert "s3cr3t" not in info.value.render()


# ---------------------------------------------------------------- PostgreSQL


def _pg_url() -> str:
    return os.environ.get("DST_TEST_POSTGRES_URL", PG_DEFAULT_URL)


def _writable_engine(url: str) -> sa.Engine:
    return sa.create_engine(
        warehouse._with_installed_driver(make_url(url)), connect_args={"connect_timeout": 2}
    )


@pytest.fixture
def pg() -> Iterator[tuple[Warehouse, str, sa.Engine]]:
    """A read-only warehouse on PostgreSQL, a fresh schema, and a writable setup engine."""
    servers.skip_when_off("PostgreSQL")
    url = _pg_url()
    admin = _writable_engine(url)
    try:
        with admin.connect():
            pass
    except sa.exc.SQLAlchemyError as exc:
        admin.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        pytest.skip(f"PostgreSQL not reachable at {redact(url)}: {reason}")
    schema = servers.scratch_name("schema")
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        conn.exec_driver_sql(f'CREATE TABLE "{schema}".items (id integer, name text)')
        conn.exec_driver_sql(
            f"INSERT INTO \"{schema}\".items VALUES (1, 'apple'), (2, 'avocado'), (3, 'banana')"
        )
    wh = Warehouse.open(url)
    try:
        yield wh, schema, admin
    finally:
        wh.close()
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def test_pg_dialect_and_cap(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, schema, _ = pg
    assert wh.dialect == "postgres"
    sql = f"SELECT id FROM {schema}.items ORDER BY id"
    assert wh.execute(sql, row_cap=3, timeout_s=10).truncated is False
    capped = wh.execute(sql, row_cap=2, timeout_s=10)
    assert capped.rows == ((1,), (2,)) and capped.truncated is True
    series = wh.execute("SELECT g FROM generate_series(1, 100000) g", row_cap=5, timeout_s=10)
    assert len(series.rows) == 5 and series.truncated


def test_pg_percent_signs_reach_the_server_verbatim(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, schema, _ = pg
    sql = f"SELECT name FROM {schema}.items WHERE name LIKE 'a%' ORDER BY name"
    assert wh.execute(sql, row_cap=10, timeout_s=10).rows == (("apple",), ("avocado",))


def test_pg_read_only_transaction_refuses_writes(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, schema, admin = pg
    with pytest.raises(WarehouseError, match="read-only transaction"), wh._read_only(10) as conn:
        conn.exec_driver_sql(f"INSERT INTO {schema}.items VALUES (4, 'cherry')")
    # A query that writes (a sequence) reaches the server and the transaction refuses it.
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SEQUENCE {schema}.s")
    with pytest.raises(WarehouseError, match="read-only transaction"):
        wh._execute_raw(f"SELECT nextval('{schema}.s')", row_cap=1, timeout_s=10)
    # Through the result path (a server-side cursor) a bare INSERT does not even parse.
    with pytest.raises(WarehouseError):
        wh._execute_raw(f"INSERT INTO {schema}.items VALUES (5, 'date')", row_cap=1, timeout_s=10)
    with admin.connect() as conn:
        count = conn.exec_driver_sql(f"SELECT count(*) FROM {schema}.items").scalar()
    assert count == 3


def test_pg_statement_timeout(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, _, _ = pg
    started = time.monotonic()
    # pg_sleep is denied by the guard; the timeout is the connection's own bound
    with pytest.raises(WarehouseError, match=r"timed out after 0\.5 s"):
        wh._execute_raw("SELECT pg_sleep(5)", row_cap=1, timeout_s=0.5)
    assert time.monotonic() - started < 4
    with pytest.raises(UnsafeSqlError, match=r"pg_sleep\(\)"):
        wh.execute("SELECT pg_sleep(5)", row_cap=1, timeout_s=0.5)
    assert wh.execute("SELECT 1", row_cap=1, timeout_s=10).rows == ((1,),)


def test_pg_as_of_pins_the_clock(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, _, _ = pg
    rs = wh.execute("SELECT CURRENT_DATE, now()", row_cap=1, timeout_s=10, as_of="2024-02-29")
    assert rs.rows == ((dt.date(2024, 2, 29), dt.datetime(2024, 2, 29)),)


def test_pg_distinct_values(pg: tuple[Warehouse, str, sa.Engine]) -> None:
    wh, schema, _ = pg
    values = wh.distinct_values(f"{schema}.items", "name", timeout_s=10)
    assert values == ("apple", "avocado", "banana")
