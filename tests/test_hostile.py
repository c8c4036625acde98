"""Hostile SQL against both defences, per dialect (fixtures/hostile_<dialect>.yaml).

For every case the statement guard must refuse the text. Then the guard is
bypassed (the warehouse's read-only connection is used directly, as only a test
may) in a sandbox — a DuckDB file, a SQLite file, a fresh PostgreSQL database
reached as a least-privilege role — and the sandbox must come out unchanged:
files, tables, rows, sequences, large objects, cluster-wide roles and databases.
Cases marked ``connection: blocks`` must also fail with a read-only or privilege
error; ``n/a`` cases are policy only and say why.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa
import yaml

from reconciler import guard
from reconciler.errors import UnsafeSqlError, WarehouseError
from reconciler.warehouse.connection import Warehouse
from reconciler.warehouse.duck import DuckWarehouse
from tests import pg
from tests.figures import record

FIXTURES = Path(__file__).parent / "fixtures"
DIALECTS = ("duckdb", "sqlite", "postgres")
CASE_KEYS = {"id", "sql", "connection", "note"}
MIN_CASES = {"duckdb": 150, "postgres": 150, "sqlite": 80}
# What each connection says when it stops a statement (read-only or privilege).
REFUSAL = {
    "duckdb": r"read-only|disabled through configuration|file system operations are disabled"
    r"|configuration has been locked",
    "sqlite": r"readonly database|not authorized|may not be modified|one statement at a time",
    "postgres": r"read-only transaction|permission denied|must be (a )?(superuser|owner)"
    r"|cannot run inside a transaction block|read-write mode must be set before any query"
    r"|is not allowed",
}


def _load(dialect: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = yaml.safe_load(
        (FIXTURES / f"hostile_{dialect}.yaml").read_text(encoding="utf-8")
    )
    return cases


CASES = [(d, c) for d in DIALECTS for c in _load(d)]
TALLY: Counter[tuple[str, str]] = Counter()


@dataclass
class Sandbox:
    """A warehouse under test, its folder, and a fingerprint of everything it holds."""

    warehouse: Warehouse | DuckWarehouse
    folder: Path
    fingerprint: Callable[[], object]


def _files(folder: Path) -> list[tuple[str, str]]:
    return sorted(
        (p.relative_to(folder).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        if p.is_file()
        else (p.relative_to(folder).as_posix(), "dir")
        for p in folder.rglob("*")
    )


def _folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    folder = tmp_path_factory.mktemp(name)
    (folder / "in.csv").write_text("a\n1\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def duckdb_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    folder = _folder(tmp_path_factory, "hostile-duckdb")
    path = folder / "sandbox.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR);"
        "INSERT INTO items VALUES (1, 'a'), (2, 'b');"
        "CREATE SEQUENCE item_ids; CREATE VIEW item_names AS SELECT name FROM items"
    )
    con.close()
    with Warehouse.open(f"duckdb:///{path.as_posix()}") as wh:
        yield Sandbox(wh, folder, lambda: _files(folder))


@pytest.fixture(scope="module")
def sqlite_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    folder = _folder(tmp_path_factory, "hostile-sqlite")
    path = folder / "sandbox.sqlite"
    setup = sa.create_engine(f"sqlite:///{path.as_posix()}")
    with setup.begin() as conn:
        for sql in (
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)",
            "INSERT INTO items VALUES (1, 'a'), (2, 'b')",
            "CREATE INDEX item_id_idx ON items (name)",
            "CREATE TRIGGER item_guard BEFORE DELETE ON items BEGIN SELECT 1; END",
            "CREATE VIEW item_names AS SELECT name FROM items",
        ):
            conn.exec_driver_sql(sql)
    setup.dispose()
    with Warehouse.open(f"sqlite:///{path.as_posix()}") as wh:
        yield Sandbox(wh, folder, lambda: _files(folder))


_PG_FINGERPRINT = (
    "SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY 1)"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')",
    "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM items",
    "SELECT last_value::text || is_called::text FROM item_ids",
    "SELECT string_agg(oid::text, ',' ORDER BY oid) FROM pg_largeobject_metadata",
    "SELECT count(*) FROM pg_largeobject",
    "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc p"
    " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'",
    "SELECT string_agg(rolname, ',') FROM pg_roles WHERE rolname = 'dst_hostile_role'",
    "SELECT string_agg(datname, ',') FROM pg_database WHERE datname = 'dst_hostile_db'",
    "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension",
    "SELECT string_agg(pubname, ',') FROM pg_publication",
)


@pytest.fixture(scope="module")
def postgres_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    folder = _folder(tmp_path_factory, "hostile-postgres")
    with pg.scratch_database("dst_hostile") as scratch:
        owner = pg.engine(scratch.owner_url)
        with owner.begin() as conn:
            for sql in (
                "CREATE TABLE items (id integer PRIMARY KEY, name text)",
                "INSERT INTO items VALUES (1, 'a'), (2, 'b')",
                "CREATE SEQUENCE item_ids",
                "CREATE VIEW item_names AS SELECT name FROM items",
                "CREATE MATERIALIZED VIEW item_totals AS SELECT count(*) AS n FROM items",
                "SELECT lo_create(4242)",
            ):
                conn.exec_driver_sql(sql)
            pg.grant_reader(conn, scratch.reader)

        def fingerprint() -> object:
            with owner.connect() as conn:
                rows = [
                    conn.exec_driver_sql(sql, execution_options={"no_parameters": True}).scalar()
                    for sql in _PG_FINGERPRINT
                ]
            return rows, _files(folder)

        try:
            with Warehouse.open(scratch.reader_url) as wh:
                yield Sandbox(wh, folder, fingerprint)
        finally:
            owner.dispose()


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    for dialect in DIALECTS:
        total = TALLY[dialect, "case"]
        if total:
            checked = TALLY[dialect, "unchanged"]
            record(
                f"hostile statements: {dialect} {total} refused "
                f"({TALLY[dialect, 'guard']} by guard, "
                f"{TALLY[dialect, 'connection']} by connection, "
                f"{TALLY[dialect, 'n/a']} policy only; sandbox unchanged after {checked})"
                if checked
                else f"hostile statements: {dialect} {total} refused by guard "
                "(connection not checked: no sandbox)"
            )


def test_corpus_is_well_formed() -> None:
    for dialect in DIALECTS:
        cases = _load(dialect)
        ids = [c["id"] for c in cases]
        assert len(ids) == len(set(ids)), f"{dialect}: case ids must be unique"
        least = MIN_CASES[dialect]
        assert len(cases) >= least, f"{dialect}: at least {least} hostile statements"
        for case in cases:
            assert set(case) <= CASE_KEYS, case["id"]
            assert case["connection"] in ("blocks", "n/a"), case["id"]
            assert (case["connection"] == "n/a") == ("note" in case), (
                f"{dialect}/{case['id']}: an n/a case says why, a blocked one needs no note"
            )


def _run_unguarded(wh: Warehouse | DuckWarehouse, sql: str) -> str | None:
    """Execute on the read-only connection with the guard bypassed; the error, if any."""
    try:
        if isinstance(wh, DuckWarehouse):  # DuckDB is opened without SQLAlchemy
            wh._execute_raw(sql, row_cap=10, timeout_s=5)
            return None
        with wh._read_only(5) as conn:
            result = conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
            if result.returns_rows:
                result.fetchmany(10)
            result.close()
    except WarehouseError as exc:
        return exc.message
    return None


@pytest.mark.parametrize(("dialect", "case"), CASES, ids=[f"{d}-{c['id']}" for d, c in CASES])
def test_hostile_statement(
    dialect: str, case: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    # the guard first, so it is proven even where no sandbox server is reachable
    with pytest.raises(UnsafeSqlError) as refused:
        guard.check_read_only(case["sql"].replace("{dir}", "/srv/data"), dialect)
    assert refused.value.fix
    TALLY[dialect, "case"] += 1
    TALLY[dialect, "guard"] += 1

    sandbox: Sandbox = request.getfixturevalue(f"{dialect}_sandbox")
    sql = case["sql"].replace("{dir}", sandbox.folder.as_posix())
    with pytest.raises(UnsafeSqlError):
        guard.check_read_only(sql, dialect)

    before = sandbox.fingerprint()
    error = _run_unguarded(sandbox.warehouse, sql)
    if case["connection"] == "blocks":
        assert error is not None, "the connection let the statement through"
        assert re.search(REFUSAL[dialect], error), error
        TALLY[dialect, "connection"] += 1
    else:
        TALLY[dialect, "n/a"] += 1
    assert sandbox.fingerprint() == before, "the sandbox changed"
    TALLY[dialect, "unchanged"] += 1
    # the pool still serves plain queries afterwards
    rows = sandbox.warehouse.execute("SELECT count(*) FROM items", row_cap=1, timeout_s=10).rows
    assert rows == ((2,),)
