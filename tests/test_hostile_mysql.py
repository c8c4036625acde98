"""Hostile MySQL / MariaDB SQL against the guard and a least-privilege connection.

The corpus is ``fixtures/hostile_mysql.yaml`` (the format of ``test_hostile.py``'s).
Every case must be refused by the read-only guard for dialect ``mysql``, so nothing
reaches a warehouse through dst. Then, when a MariaDB or MySQL server answers
(:mod:`tests.mariadb`: ``DST_TEST_MYSQL_URL``, off with ``DST_TEST_SERVERS=0``), the guard
is bypassed in a sandbox — a fresh ``dst_test_hostile_…`` database reached through dst's
read-only MySQL connection as a user granted only SELECT on it — and the sandbox
must come out unchanged: tables, rows, routines, triggers, events, views, users and
files. ``connection: blocks`` cases must also fail with a privilege or read-only error.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from reconciler import guard
from reconciler.errors import UnsafeSqlError, WarehouseError
from reconciler.warehouse.connection import Warehouse
from tests import mariadb
from tests.figures import record

FIXTURES = Path(__file__).parent / "fixtures"
CASES: list[dict[str, Any]] = yaml.safe_load(
    (FIXTURES / "hostile_mysql.yaml").read_text(encoding="utf-8")
)
# What MariaDB / MySQL say when a privilege or a read-only transaction stops a statement.
REFUSAL = (
    r"command denied|Access denied|READ ONLY transaction|read-only|you need \(at least one of\)"
)
TALLY: Counter[str] = Counter()


@dataclass
class Sandbox:
    """The scratch database, dst's read-only warehouse on it, the admin engine, the folder."""

    database: str
    warehouse: Warehouse
    admin: sa.Engine
    folder: Path

    def fingerprint(self) -> object:
        db = self.database
        queries = (
            f"SELECT GROUP_CONCAT(table_name, ':', table_type ORDER BY table_name)"
            f" FROM information_schema.tables WHERE table_schema = '{db}'",
            f"SELECT GROUP_CONCAT(id, ':', name ORDER BY id) FROM `{db}`.items",
            f"SELECT GROUP_CONCAT(routine_name) FROM information_schema.routines"
            f" WHERE routine_schema = '{db}'",
            f"SELECT GROUP_CONCAT(trigger_name) FROM information_schema.triggers"
            f" WHERE trigger_schema = '{db}'",
            f"SELECT GROUP_CONCAT(event_name) FROM information_schema.events"
            f" WHERE event_schema = '{db}'",
            "SELECT GROUP_CONCAT(user, '@', host ORDER BY user) FROM mysql.user"
            " WHERE user LIKE 'dst\\_test\\_hostile%'",
            "SELECT GROUP_CONCAT(schema_name ORDER BY schema_name)"
            " FROM information_schema.schemata WHERE schema_name LIKE 'dst\\_test\\_hostile%'",
            "SELECT @@GLOBAL.max_connections, @@GLOBAL.general_log, @@GLOBAL.read_only",
        )
        with self.admin.connect() as conn:
            rows = [
                tuple(conn.exec_driver_sql(q, execution_options={"no_parameters": True}).one())
                for q in queries
            ]
        files = sorted(
            (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in self.folder.iterdir()
        )
        return rows, files


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    folder = tmp_path_factory.mktemp("hostile-mysql")
    (folder / "in.csv").write_text("a\n1\n", encoding="utf-8")
    folder.chmod(0o777)
    with mariadb.scratch_database("hostile") as scratch:
        db = mariadb.quote(scratch.database)
        admin = mariadb.engine(scratch.owner_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for sql in (
                f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(20))",
                f"INSERT INTO {db}.items VALUES (1, 'a'), (2, 'b')",
                f"CREATE VIEW {db}.item_names AS SELECT name FROM {db}.items",
            ):
                mariadb.run(conn, sql)
            mariadb.grant_reader(conn, scratch)
        try:
            with Warehouse.open(scratch.reader_url) as wh:
                yield Sandbox(scratch.database, wh, admin, folder)
        finally:
            admin.dispose()


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    if TALLY["case"]:
        checked = (
            f"{TALLY['connection']} by connection, {TALLY['n/a']} policy only; sandbox "
            f"unchanged after {TALLY['unchanged']}"
            if TALLY["unchanged"]
            else "connection not checked: no server"
        )
        record(
            f"hostile statements: mysql {TALLY['case']} refused ({TALLY['guard']} by guard, "
            f"0 executed through the guard; {checked})"
        )


def test_corpus_is_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len(CASES) >= 150, "at least 150 hostile statements"
    for case in CASES:
        assert set(case) <= {"id", "sql", "connection", "note"}, case["id"]
        assert case["connection"] in ("blocks", "n/a"), case["id"]
        assert (case["connection"] == "n/a") == ("note" in case), case["id"]


def _run_unguarded(wh: Warehouse, sql: str) -> str | None:
    """Execute on dst's read-only connection with the guard bypassed; the error, if any."""
    try:
        with wh._read_only(5) as conn:
            result = conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
            if result.returns_rows:
                result.fetchmany(10)
            result.close()
    except WarehouseError as exc:
        return exc.message
    return None


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hostile_statement(case: dict[str, Any], request: pytest.FixtureRequest) -> None:
    # the guard first, so it is proven even where no server is reachable
    with pytest.raises(UnsafeSqlError) as refused:
        guard.check_read_only(case["sql"].replace("{dir}", "/srv/data"), "mysql")
    assert refused.value.fix
    TALLY["case"] += 1
    TALLY["guard"] += 1

    box: Sandbox = request.getfixturevalue("sandbox")
    sql = case["sql"].replace("{dir}", box.folder.as_posix())
    with pytest.raises(UnsafeSqlError):
        guard.check_read_only(sql, "mysql")
    before = box.fingerprint()
    error = _run_unguarded(box.warehouse, sql)
    if case["connection"] == "blocks":
        assert error is not None, "the connection let the statement through"
        assert re.search(REFUSAL, error), error
        TALLY["connection"] += 1
    else:
        TALLY["n/a"] += 1
    assert box.fingerprint() == before, "the sandbox changed"
    TALLY["unchanged"] += 1
    rows = box.warehouse.execute("SELECT COUNT(*) FROM items", row_cap=1, timeout_s=10).rows
    assert rows == ((2,),)
