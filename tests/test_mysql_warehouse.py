"""MariaDB/MySQL as a warehouse: a read-only session, timeouts, lens databases, write grants.

Each test runs on a scratch database of the local server (``tests/mariadb.py``), and
skips, naming the reason, when none answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from reconciler.errors import UsageError, WarehouseError
from reconciler.warehouse.connection import Warehouse
from reconciler.warehouse.mysql import write_privilege
from reconciler.warehouse.seed import SeedFile, seed
from tests import mariadb
from tests.mariadb import quote, run


@pytest.fixture
def scratch() -> Iterator[mariadb.Scratch]:
    with mariadb.scratch_database("wh") as made:
        yield made


def _lens_tables(scratch: mariadb.Scratch) -> None:
    """Lens ``a`` holds ``products``, lens ``b`` ``products`` and ``things``; the default
    database holds ``shared``."""
    admin = mariadb.admin_or_skip()
    with admin.connect() as conn:
        for lens in ("a", "b"):
            run(conn, f"CREATE DATABASE {quote(f'{scratch.database}__{lens}')}")
        run(conn, f"CREATE TABLE {quote(scratch.database + '__a')}.products (id INT, name TEXT)")
        run(conn, f"INSERT INTO {quote(scratch.database + '__a')}.products VALUES (1, 'a-one')")
        run(conn, f"CREATE TABLE {quote(scratch.database + '__b')}.products (id INT, name TEXT)")
        run(conn, f"INSERT INTO {quote(scratch.database + '__b')}.products VALUES (1, 'b-one')")
        run(conn, f"CREATE TABLE {quote(scratch.database + '__b')}.things (id INT, n INT)")
        run(conn, f"INSERT INTO {quote(scratch.database + '__b')}.things VALUES (1, 7)")
        run(conn, f"CREATE TABLE {quote(scratch.database)}.shared (id INT, label TEXT)")
        run(conn, f"INSERT INTO {quote(scratch.database)}.shared VALUES (1, 'common')")
        mariadb.grant_reader(conn, scratch)
    admin.dispose()


def test_a_lens_reads_its_database_then_seeds_from_then_the_default(
    scratch: mariadb.Scratch,
) -> None:
    _lens_tables(scratch)
    sql = (
        "SELECT p.name, t.n, s.label FROM products AS p JOIN things AS t ON t.id = p.id "
        "JOIN shared AS s ON s.id = p.id"
    )
    with Warehouse.open(scratch.reader_url) as wh:
        assert wh.schemas() == frozenset({"a", "b"})
        assert wh.execute(sql, row_cap=10, timeout_s=10, search_path=("a", "b")).rows == (
            ("a-one", 7, "common"),
        )
        assert wh.execute(sql, row_cap=10, timeout_s=10, search_path=("b",)).rows == (
            ("b-one", 7, "common"),
        )
        # a CTE of the same name is the query's own, never a lens table
        cte = "WITH products AS (SELECT 9 AS id) SELECT id FROM products"
        assert wh.execute(cte, row_cap=10, timeout_s=10, search_path=("a",)).rows == ((9,),)
        with pytest.raises(WarehouseError, match="doesn't exist"):
            wh.execute("SELECT * FROM things", row_cap=10, timeout_s=10, search_path=("a",))


def test_the_session_stays_read_only_even_for_a_login_that_may_write(
    scratch: mariadb.Scratch,
) -> None:
    _lens_tables(scratch)
    with Warehouse.open(scratch.owner_url) as wh:  # the admin account: ALL PRIVILEGES
        insert = f"INSERT INTO {quote(scratch.database)}.shared VALUES (2, 'x')"
        with pytest.raises(WarehouseError, match=r"READ ONLY|read only|read-only"):
            wh._execute_raw(insert, row_cap=1, timeout_s=10)
        # a statement that turns the session's mode back cannot open a writing transaction
        wh._execute_raw("SET SESSION TRANSACTION READ WRITE", row_cap=1, timeout_s=10)
        with pytest.raises(WarehouseError, match=r"READ ONLY|read only|read-only"):
            wh._execute_raw(insert, row_cap=1, timeout_s=10)
        with pytest.raises(WarehouseError):  # one statement at a time, never two
            wh._execute_raw("SELECT 1; SELECT 2", row_cap=1, timeout_s=10)
        with pytest.raises(WarehouseError, match=r"READ ONLY|read only|read-only"):
            wh._execute_raw(f"DROP TABLE {quote(scratch.database)}.shared", row_cap=1, timeout_s=10)
    admin = mariadb.admin_or_skip()
    with admin.connect() as conn:
        count = run(conn, f"SELECT COUNT(*) FROM {quote(scratch.database)}.shared").scalar()
    admin.dispose()
    assert count == 1


def test_a_statement_over_its_timeout_is_stopped_by_the_server(scratch: mariadb.Scratch) -> None:
    with Warehouse.open(scratch.owner_url) as wh:
        with pytest.raises(WarehouseError, match=r"timed out after 0\.5 s"):
            wh._execute_raw(
                "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b,"
                " information_schema.columns c, information_schema.columns d",
                row_cap=1,
                timeout_s=0.5,
            )
        # the pooled connection still answers, with the next statement's own timeout
        assert wh._execute_raw("SELECT 1", row_cap=1, timeout_s=10).rows == ((1,),)


def test_write_privilege_names_what_a_login_could_write(scratch: mariadb.Scratch) -> None:
    _lens_tables(scratch)
    lens_dbs = [scratch.database, f"{scratch.database}__a", f"{scratch.database}__b"]
    admin = mariadb.admin_or_skip()
    writer = f"{scratch.reader}_w"
    try:
        with admin.connect() as conn:
            assert write_privilege(conn) == "ALL PRIVILEGES, GRANT OPTION on *.*"
            run(conn, f"CREATE USER {quote(writer)}@'%' IDENTIFIED BY 'pw-{scratch.reader}'")
            run(conn, f"GRANT SELECT ON {quote(scratch.database)}.* TO {quote(writer)}@'%'")
            other = f"{scratch.database}__c"
            run(conn, f"GRANT INSERT ON {quote(other)}.* TO {quote(writer)}@'%'")
        reader = mariadb.engine(scratch.reader_url)
        with reader.connect() as conn:
            assert write_privilege(conn, lens_dbs) is None
            assert write_privilege(conn) is None
        reader.dispose()
        writer_url = make_url(scratch.reader_url).set(
            username=writer, password=f"pw-{scratch.reader}"
        )
        as_writer = mariadb.engine(writer_url.render_as_string(hide_password=False))
        with as_writer.connect() as conn:
            # INSERT on a database no lens reads: not a reason for these lenses
            assert write_privilege(conn, lens_dbs) is None
            assert write_privilege(conn) == f"INSERT on `{other}`.*"
        with admin.connect() as conn:
            run(conn, f"GRANT UPDATE ON {quote(scratch.database + '__a')}.* TO {quote(writer)}@'%'")
        with as_writer.connect() as conn:
            assert write_privilege(conn, lens_dbs) == f"UPDATE on `{scratch.database}__a`.*"
        as_writer.dispose()
    finally:
        with admin.connect() as conn:
            run(conn, f"DROP USER IF EXISTS {quote(writer)}@'%'")
        admin.dispose()


def test_seed_makes_a_database_per_lens_and_swaps_tables_in_whole(
    scratch: mariadb.Scratch, tmp_path: Path
) -> None:
    first = [
        SeedFile("shop", "orders", "lenses/shop/seeds/orders.csv", b"id,tag\n1,a\n2,A\n3,a \n"),
        SeedFile(None, "fx", "seeds/fx.csv", b"cur,rate\nEUR,1.1\n"),
    ]
    report = seed(tmp_path, first, url=scratch.owner_url, schemas=["shop", "empty"])
    assert report.row_counts == {"fx": 1, "shop.orders": 3}
    assert report.databases == (f"{scratch.database}__empty", f"{scratch.database}__shop")
    admin = mariadb.admin_or_skip()
    with admin.connect() as conn:
        mariadb.grant_reader(conn, scratch)
    with Warehouse.open(scratch.reader_url) as wh:
        assert wh.schemas() == frozenset({"shop", "empty"})
        # strings compare byte for byte, as on DuckDB: 'a', 'A' and 'a ' are three groups
        grouped = wh.execute(
            "SELECT tag, COUNT(*) FROM orders GROUP BY tag ORDER BY tag",
            row_cap=10,
            timeout_s=10,
            search_path=("shop",),
        )
        assert grouped.rows == (("A", 1), ("a", 1), ("a ", 1))
    again = [SeedFile("shop", "orders", "lenses/shop/seeds/orders.csv", b"id,tag\n9,z\n")]
    seed(tmp_path, again, url=scratch.owner_url, schemas=["shop"])
    with admin.connect() as conn:
        rows = run(conn, f"SELECT id FROM {quote(scratch.database + '__shop')}.orders").all()
        left = run(
            conn,
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema LIKE '{scratch.database}%' AND table_name LIKE '%dst%'",
        ).all()
    admin.dispose()
    assert [tuple(r) for r in rows] == [(9,)]
    assert left == [], "no scratch or replaced table is left behind"


def test_repository_seeds_need_a_database_in_the_url(tmp_path: Path) -> None:
    flat = [SeedFile(None, "fx", "seeds/fx.csv", b"cur,rate\nEUR,1.1\n")]
    with pytest.raises(UsageError, match="names none") as caught:
        seed(tmp_path, flat, url="mysql+pymysql://root@127.0.0.1:3306")
    assert "mysql+pymysql://user@host:3306/analytics" in (caught.value.fix or "")


def test_a_missing_driver_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pymysql'] = None\n"
        "from reconciler.errors import WarehouseError\n"
        "from reconciler.warehouse.connection import Warehouse\n"
        "try:\n"
        "    Warehouse.open('mysql+pymysql://reader@127.0.0.1:3306/analytics')\n"
        "except WarehouseError as exc:\n"
        "    print(exc.message); print(exc.fix)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert "no driver installed" in done.stdout
    assert "pip install -e '.[mysql]' (PyMySQL)" in done.stdout


def test_a_login_that_can_write_is_named_and_a_reader_is_not(
    scratch: mariadb.Scratch,
) -> None:
    # dst refuses answer SQL on a write_access login (tests/test_privilege.py).
    _lens_tables(scratch)
    with Warehouse.open(scratch.owner_url) as wh:
        assert wh.write_access == ("the account holds ALL PRIVILEGES, GRANT OPTION on *.*",)
    with Warehouse.open(scratch.reader_url) as wh:
        assert wh.write_access == () and wh.warnings == ()
