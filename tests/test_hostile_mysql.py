"""Hostile MySQL / MariaDB SQL against the guard and a least-privilege connection.

The corpus is ``fixtures/hostile_mysql.yaml`` (the format of ``test_hostile.py``'s).
Every case must be refused by the read-only guard for dialect ``mysql``, so nothing
reaches a warehouse through dst. Then, when a MariaDB or MySQL server answers
(``DST_TEST_MYSQL_URL``, default root on 127.0.0.1:3306), the guard is bypassed in a
sandbox — a fresh ``dst_test_hostile_…`` database reached as a ``dst_test_…`` user
granted only SELECT on it, inside ``START TRANSACTION READ ONLY`` — and the sandbox
must come out unchanged: tables, rows, routines, triggers, events, views, users and
files. ``connection: blocks`` cases must also fail with a privilege or read-only error.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from tests.figures import record

FIXTURES = Path(__file__).parent / "fixtures"
CASES: list[dict[str, Any]] = yaml.safe_load(
    (FIXTURES / "hostile_mysql.yaml").read_text(encoding="utf-8")
)
ADMIN_URL = os.environ.get("DST_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/")
# What MariaDB / MySQL say when a privilege or a read-only transaction stops a statement.
REFUSAL = (
    r"command denied|Access denied|READ ONLY transaction|read-only|you need \(at least one of\)"
)
TALLY: Counter[str] = Counter()


@dataclass
class Sandbox:
    """The scratch database, its reader's engine, the admin engine and the sandbox folder."""

    database: str
    reader: sa.Engine
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


def _admin_or_none() -> sa.Engine | None:
    engine = sa.create_engine(ADMIN_URL, connect_args={"connect_timeout": 2})
    try:
        with engine.connect():
            return engine
    except (sa.exc.OperationalError, ImportError):
        engine.dispose()
        return None


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    admin = _admin_or_none()
    if admin is None:
        pytest.skip(f"no MySQL/MariaDB server answers at {sa.make_url(ADMIN_URL).host}")
    tag = secrets.token_hex(4)
    database, user, password = (
        f"dst_test_hostile_{tag}",
        f"dst_test_hostile_r{tag}",
        secrets.token_hex(8),
    )
    folder = tmp_path_factory.mktemp("hostile-mysql")
    (folder / "in.csv").write_text("a\n1\n", encoding="utf-8")
    folder.chmod(0o777)
    setup = (
        f"CREATE DATABASE `{database}`",
        f"CREATE TABLE `{database}`.items (id INT PRIMARY KEY, name VARCHAR(20))",
        f"INSERT INTO `{database}`.items VALUES (1, 'a'), (2, 'b')",
        f"CREATE VIEW `{database}`.item_names AS SELECT name FROM `{database}`.items",
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
        f"GRANT SELECT ON `{database}`.* TO '{user}'@'%'",
    )
    with admin.connect() as conn:
        for sql in setup:
            conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
        conn.commit()
    url = sa.make_url(ADMIN_URL).set(username=user, password=password, database=database)
    reader = sa.create_engine(url, connect_args={"connect_timeout": 2, "read_timeout": 10})
    try:
        yield Sandbox(database, reader, admin, folder)
    finally:
        reader.dispose()
        with admin.connect() as conn:
            for sql in (
                f"DROP DATABASE IF EXISTS `{database}`",
                f"DROP USER IF EXISTS '{user}'@'%'",
            ):
                conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
            conn.commit()
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


def _run_unguarded(sandbox: Sandbox, sql: str) -> str | None:
    """Execute as the reader inside a READ ONLY transaction; the error, if any."""
    try:
        with sandbox.reader.connect() as conn:
            conn.exec_driver_sql("START TRANSACTION READ ONLY")
            try:
                result = conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
                if result.returns_rows:
                    result.fetchmany(10)
                result.close()
            finally:
                conn.exec_driver_sql("ROLLBACK")
    except sa.exc.DBAPIError as exc:
        return str(exc.orig)
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
    error = _run_unguarded(box, sql)
    if case["connection"] == "blocks":
        assert error is not None, "the connection let the statement through"
        assert re.search(REFUSAL, error), error
        TALLY["connection"] += 1
    else:
        TALLY["n/a"] += 1
    assert box.fingerprint() == before, "the sandbox changed"
    TALLY["unchanged"] += 1
    with box.reader.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM items").scalar() == 2
