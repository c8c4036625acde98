"""A SQLite database copied into DuckDB or PostgreSQL, and its schema as DDL for a lens.

Spider ships each database as a SQLite file, whose columns carry a declared type but
whose cells may hold any value (SQLite's dynamic typing, sqlite.org/datatype3.html).
Each table (SQLite's own ``sqlite_*`` tables aside) becomes a table of the same name
in the target's default schema, with the same column names; its declared type maps
to one of four (:func:`family`):

========================================================  ==========================
declared (case-insensitive, length and precision ignored)  loaded as
========================================================  ==========================
contains ``INT`` (INT, INTEGER, BIGINT, SMALLINT …;        ``BIGINT``
SQLite's own first affinity rule)
REAL, FLOAT, DOUBLE, DOUBLE PRECISION, NUMERIC,           ``DOUBLE``
DECIMAL, NUMBER
DATE, DATETIME, TIMESTAMP                                 ``TIMESTAMP``
anything else (TEXT, VARCHAR(n), CHAR(n), BOOL, none)     ``VARCHAR``
========================================================  ==========================

A column whose non-NULL cells do not all convert to that type is loaded as
``VARCHAR`` instead, every cell as its text (:func:`convert`): an integer cell
converts to ``BIGINT`` as is, a float cell only when it is whole, a text cell when it
is an integer literal; any number or a numeric literal converts to ``DOUBLE``; a
text cell in ISO form (``YYYY-MM-DD`` with an optional `` HH:MM[:SS[.f]]``) to
``TIMESTAMP``. An empty string stays an empty string, never NULL. No key or
constraint is declared in the target (Spider's data does not always honour them);
:func:`creates` gives the keys to the lens built from the schema.

In PostgreSQL the names are folded to lower case, as PostgreSQL folds unquoted
names, so SQL that spells them as SQLite (case-insensitively) resolves the same.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import sqlglot
from sqlalchemy.engine import make_url
from sqlglot import exp

from reconciler.warehouse.readonly import with_installed_driver
from tests.servers import PREFIX

_DOUBLE = ("REAL", "FLOAT", "DOUBLE", "DOUBLE PRECISION", "NUMERIC", "DECIMAL", "NUMBER")
_TIMESTAMP = ("DATE", "DATETIME", "TIMESTAMP")
ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?")
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_POSTGRES_TYPE = {"DOUBLE": "DOUBLE PRECISION"}
_CHUNK = 250  # rows per INSERT: DuckDB's executemany runs one statement per row


@dataclass(frozen=True)
class Table:
    """One SQLite table, read and converted.

    Attributes:
        name: the table's name as SQLite spells it.
        columns: ``(name, declared type, loaded type)`` per column, in order; the
            loaded type is ``BIGINT``, ``DOUBLE``, ``TIMESTAMP`` or ``VARCHAR``.
        primary_key: the primary-key columns, in key order (may be empty).
        foreign_keys: ``(column, referenced table, referenced column)`` for each
            single-column foreign key whose target table and column exist.
        rows: every row, its cells converted to the loaded types.
    """

    name: str
    columns: tuple[tuple[str, str, str], ...]
    primary_key: tuple[str, ...]
    foreign_keys: tuple[tuple[str, str, str], ...]
    rows: tuple[tuple[Any, ...], ...]


def family(declared: str) -> str:
    """The loaded type for a declared SQLite type (the module docstring's table)."""
    base = re.sub(r"\(.*", "", declared).strip().upper()
    base = re.sub(r"\s+", " ", base)
    if "INT" in base:
        return "BIGINT"
    if base in _DOUBLE:
        return "DOUBLE"
    if base in _TIMESTAMP:
        return "TIMESTAMP"
    return "VARCHAR"


def convert(cells: Sequence[Any], loaded: str) -> tuple[str, list[Any]]:
    """``(type, converted cells)``: ``loaded`` when every non-NULL cell converts, else
    ``VARCHAR`` with every cell as its text (NULL stays NULL)."""
    out: list[Any] = []
    for cell in cells:
        value = _to(cell, loaded)
        if value is _REFUSED:
            return "VARCHAR", [None if c is None else _text(c) for c in cells]
        out.append(value)
    return loaded, out


_REFUSED = object()


def _to(cell: Any, loaded: str) -> Any:
    if cell is None:
        return None
    if loaded == "VARCHAR":
        return _text(cell)
    if loaded == "BIGINT":
        if isinstance(cell, int):
            return cell
        if isinstance(cell, float) and cell.is_integer():
            return int(cell)
        if isinstance(cell, str) and _INTEGER.fullmatch(cell):
            return int(cell)
    elif loaded == "DOUBLE":
        if isinstance(cell, (int, float)):
            return float(cell)
        if isinstance(cell, str) and _NUMBER.fullmatch(cell):
            return float(cell)
    elif isinstance(cell, str) and ISO_TIMESTAMP.fullmatch(cell):
        try:
            return datetime.fromisoformat(cell)
        except ValueError:  # in ISO form but no calendar date, e.g. 2020-02-30
            return _REFUSED
    return _REFUSED


def _text(cell: Any) -> str:
    if isinstance(cell, bytes):
        return cell.decode("utf-8", errors="replace")
    return str(cell)


def read_sqlite(path: Path) -> list[Table]:
    """Every user table of the SQLite file at ``path`` (opened read-only), converted."""
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
            )
        ]
        info = {n: list(con.execute(f"PRAGMA table_info({_quote(n)})")) for n in names}
        return [_read_table(con, n, info) for n in names]
    finally:
        con.close()


def _read_table(con: sqlite3.Connection, name: str, info: dict[str, list[Any]]) -> Table:
    cols = info[name]
    raw = con.execute(f"SELECT * FROM {_quote(name)}").fetchall()
    converted: list[list[Any]] = []
    columns = []
    for i, col in enumerate(cols):
        loaded, cells = convert([r[i] for r in raw], family(col[2] or ""))
        columns.append((col[1], col[2] or "", loaded))
        converted.append(cells)
    keys = tuple(c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5]))
    return Table(
        name=name,
        columns=tuple(columns),
        primary_key=keys,
        foreign_keys=_foreign_keys(con, name, info),
        rows=tuple(zip(*converted, strict=True)) if converted and raw else (),
    )


def _foreign_keys(
    con: sqlite3.Connection, name: str, info: dict[str, list[Any]]
) -> tuple[tuple[str, str, str], ...]:
    """Single-column foreign keys whose target exists (SQLite does not check them)."""
    tables = {t.lower(): t for t in info}
    rows = list(con.execute(f"PRAGMA foreign_key_list({_quote(name)})"))
    out = []
    for fk_id in dict.fromkeys(r[0] for r in rows):
        parts = [r for r in rows if r[0] == fk_id]
        target = tables.get(str(parts[0][2]).lower())
        if len(parts) != 1 or target is None:
            continue
        column, to = parts[0][3], parts[0][4]
        target_cols = {c[1].lower(): c[1] for c in info[target]}
        if to is None:  # REFERENCES t with no column: t's primary key
            pk = [c[1] for c in info[target] if c[5]]
            to = pk[0] if len(pk) == 1 else None
        if to is not None and str(to).lower() in target_cols:
            out.append((column, target, target_cols[str(to).lower()]))
    return tuple(out)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _create_sql(table: Table, *, fold: bool, types: dict[str, str]) -> str:
    def ident(n: str) -> str:
        return _quote(n.lower() if fold else n)

    cols = ", ".join(f"{ident(c)} {types.get(t, t)}" for c, _, t in table.columns)
    return f"CREATE TABLE {ident(table.name)} ({cols})"


def _insert_sql(table: Table, marker: str, *, fold: bool, rows: int = 1) -> str:
    name = _quote(table.name.lower() if fold else table.name)
    row = f"({', '.join(marker for _ in table.columns)})"
    return f"INSERT INTO {name} VALUES {', '.join(row for _ in range(rows))}"


def load_duckdb(tables: Sequence[Table], target: Path) -> dict[str, int]:
    """Write ``tables`` into a new DuckDB file at ``target``.

    Returns:
        ``{"tables": n, "rows": n}`` written.
    """
    import duckdb  # why: only this loader writes a DuckDB file; the benchmark reads it read-only

    con = duckdb.connect(str(target))
    try:
        for t in tables:
            con.execute(_create_sql(t, fold=False, types={}))
            for start in range(0, len(t.rows), _CHUNK):
                chunk = t.rows[start : start + _CHUNK]
                con.execute(_insert_sql(t, "?", fold=False, rows=len(chunk)), list(chain(*chunk)))
    finally:
        con.close()
    return {"tables": len(tables), "rows": sum(len(t.rows) for t in tables)}


@contextmanager
def read_only_role(admin: sa.Engine, url: str) -> Iterator[str]:
    """A login role ``dst_test_bench_reader_<token>`` with CONNECT on ``url``'s database
    and USAGE and SELECT on every schema in it, as the README's read-only role: dst runs
    answer SQL on no login that can write.

    Args:
        admin: an AUTOCOMMIT superuser engine (creates and drops the role).
        url: the superuser URL of the loaded database (grants there).

    Yields:
        The role's URL; the role and its grants are dropped on exit.
    """
    role, password = f"{PREFIX}bench_reader_{secrets.token_hex(4)}", secrets.token_hex(12)
    parsed = make_url(url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
    granter = sa.create_engine(parsed, isolation_level="AUTOCOMMIT")
    try:
        with granter.connect() as conn:
            conn.exec_driver_sql(f'GRANT CONNECT ON DATABASE "{parsed.database}" TO "{role}"')
            schemas = conn.exec_driver_sql(
                "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' "
                "AND nspname <> 'information_schema'"
            ).scalars()
            for schema in list(schemas):
                conn.exec_driver_sql(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
                conn.exec_driver_sql(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        yield parsed.set(username=role, password=password).render_as_string(hide_password=False)
    finally:
        with granter.connect() as conn:
            conn.exec_driver_sql(f'DROP OWNED BY "{role}"')
        granter.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP ROLE IF EXISTS "{role}"')


@contextmanager
def postgres_database(admin_url: str, db: str, tables: Sequence[Table]) -> Iterator[str]:
    """A new PostgreSQL database ``dst_test_bench_<db>_<token>`` holding ``tables`` (names
    folded to lower case), loaded as the superuser.

    Yields:
        The URL of a read-only role on it (:func:`read_only_role`); the database and the
        role are dropped on exit.
    """
    name = f"{PREFIX}bench_{db}"[:55] + f"_{secrets.token_hex(3)}"
    parsed = with_installed_driver(make_url(admin_url))
    admin = sa.create_engine(parsed, isolation_level="AUTOCOMMIT")
    url = parsed.set(database=name).render_as_string(hide_password=False)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            loader = sa.create_engine(make_url(url))
            try:
                with loader.begin() as conn:
                    for t in tables:
                        conn.exec_driver_sql(_create_sql(t, fold=True, types=_POSTGRES_TYPE))
                        if t.rows:
                            conn.exec_driver_sql(_insert_sql(t, "%s", fold=True), list(t.rows))
            finally:
                loader.dispose()
            with read_only_role(admin, url) as reader:
                yield reader
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def creates(tables: Sequence[Table]) -> list[exp.Create]:
    """``CREATE TABLE`` statements for the loaded tables with their primary and foreign
    keys, as :func:`tests.benchmarks.autolens.lens_files` reads them."""
    out = []
    for t in tables:
        parts = [f"{_quote(c)} {loaded}" for c, _, loaded in t.columns]
        if t.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(_quote(k) for k in t.primary_key)})")
        parts += [
            f"FOREIGN KEY ({_quote(c)}) REFERENCES {_quote(to)} ({_quote(col)})"
            for c, to, col in t.foreign_keys
        ]
        create = sqlglot.parse_one(f"CREATE TABLE {_quote(t.name)} ({', '.join(parts)})")
        assert isinstance(create, exp.Create)
        out.append(create)
    return out
