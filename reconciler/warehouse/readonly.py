"""Connection-level read-only, per backend: what the driver is told before any statement.

The statement guard (:mod:`reconciler.guard`) is one defence; these settings are
the other, and each must hold with the guard bypassed (tests/test_hostile.py):

* DuckDB: opened ``read_only`` with ``enable_external_access=false`` and
  ``lock_configuration=true``; URL options that could loosen that are dropped.
* SQLite: ``mode=ro``, ``PRAGMA query_only``, no attached databases and an
  authorizer that denies ATTACH/DETACH and every PRAGMA that is not a report.
* PostgreSQL: ``default_transaction_read_only=on`` in the startup packet,
  checked with ``SHOW transaction_read_only`` when the warehouse opens.
"""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, Connection

from reconciler.errors import WarehouseError

_NO_PARAMETERS = {"no_parameters": True}
# DuckDB URL query keys that cannot loosen the read-only configuration.
_DUCKDB_QUERY_ALLOWED = frozenset({"threads", "memory_limit", "max_memory"})
# PRAGMAs that only report (also callable as table-valued pragma_* functions).
_SQLITE_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "database_list", "collation_list", "function_list", "module_list",
    "pragma_list", "compile_options",
})  # fmt: skip


# Drivers dst's extras install, by SQLAlchemy backend: (pip package, extra).
_DRIVERS = {
    "postgresql": ("psycopg2-binary", "postgres"),
    "mysql": ("PyMySQL", "mysql"),
    "mariadb": ("PyMySQL", "mysql"),
}


def missing_driver_fix(backend: str) -> str:
    """The fix for a URL whose driver is not installed: the package and dst's extra."""
    known = _DRIVERS.get(backend)
    if known is None:
        return "install the SQLAlchemy dialect and driver for this database"
    package, extra = known
    return (
        f"install the {backend} driver: pip install {package} (or dst with its "
        f"{extra} extra, from a clone of dst: pip install -e '.[{extra}]')"
    )


def with_installed_driver(parsed: URL) -> URL:
    """A bare ``postgresql://`` URL with psycopg (3) when installed, else psycopg2.

    A bare ``mysql://`` or ``mariadb://`` URL (mysqlclient by default) uses PyMySQL
    when mysqlclient is not installed and PyMySQL is.

    Raises:
        WarehouseError: the scheme is ``postgres://`` (Heroku's spelling), which
            SQLAlchemy does not know: the fix is ``postgresql://``, not a driver.
    """
    if parsed.drivername.split("+")[0] == "postgres":
        raise WarehouseError(
            "the warehouse URL starts with postgres://, which SQLAlchemy does not know "
            "(it is not a missing driver)",
            fix="write it as postgresql://user@host:5432/database",
        )
    if parsed.drivername in ("mysql", "mariadb"):
        if importlib.util.find_spec("MySQLdb") is None and importlib.util.find_spec("pymysql"):
            return parsed.set(drivername=f"{parsed.drivername}+pymysql")
        return parsed
    # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg (3); many machines only
    # have psycopg2. Pick whichever is installed rather than fail on import.
    if parsed.drivername != "postgresql":
        return parsed
    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2"):
        return parsed.set(drivername="postgresql+psycopg2")
    return parsed


def duckdb_options(parsed: URL, shown: str) -> tuple[URL, dict[str, Any]]:
    """The URL without loosening query keys, and ``create_engine`` options.

    Raises:
        WarehouseError: the DuckDB file does not exist (fix: ``dst seed``).
    """
    database = parsed.database or ":memory:"
    memory = database == ":memory:"
    if not memory and not database.startswith("md:") and not Path(database).is_file():
        raise WarehouseError(
            f"warehouse {shown}: the DuckDB file does not exist",
            fix="run `dst seed` to build the embedded warehouse from the lenses' seeds/, "
            "or point --warehouse at an existing database",
        )
    loosening = [k for k in parsed.query if k not in _DUCKDB_QUERY_ALLOWED]
    parsed = parsed.difference_update_query(loosening)
    config = {"enable_external_access": False, "lock_configuration": True}
    # An in-memory database cannot open read-only; it is empty and cut off from
    # files, so nothing outside it can be written.
    return parsed, {"connect_args": {"read_only": not memory, "config": config}}


def postgres_options(parsed: URL) -> tuple[URL, dict[str, Any]]:
    """libpq options that make every session read-only before its first statement.

    ``options=-c default_transaction_read_only=on`` is sent in the startup
    packet, so the server applies it before any statement of ours runs; each
    transaction also starts with ``SET TRANSACTION READ ONLY`` (see
    :meth:`Warehouse._read_only`). Options already in the URL are kept, and
    ours come last, so a URL cannot turn the setting off.

    Returns:
        The URL without ``options`` and the driver's ``connect_args``.
    """
    args: dict[str, Any] = {}
    if "connect_timeout" not in parsed.query:
        args["connect_timeout"] = 10  # seconds; libpq waits forever
    given = parsed.query.get("options", "")
    given = " ".join(given) if isinstance(given, tuple) else given
    args["options"] = f"{given} -c default_transaction_read_only=on".strip()
    return parsed.difference_update_query(["options"]), args


def check_postgres_session(conn: Connection, shown: str) -> None:
    """Refuse a session whose ``SHOW transaction_read_only`` is not ``on``.

    Raises:
        WarehouseError: the session would accept writes.
    """
    # A pooler or a server-side setting could drop the startup option; refuse to
    # run on a session that would accept writes.
    state = conn.exec_driver_sql("SHOW transaction_read_only", _NO_PARAMETERS).scalar()
    conn.rollback()
    if state != "on":
        raise WarehouseError(
            f"warehouse {shown}: the session is not read-only (transaction_read_only = {state})",
            fix="connect directly to the server, or through a pooler that forwards "
            "startup options, with a role whose default_transaction_read_only is on",
        )


def lock_down_sqlite(dbapi_connection: Any, _record: object) -> None:
    """Close what ``mode=ro`` leaves open on each new SQLite connection.

    ``mode=ro`` stops writes to the database file, but ``ATTACH`` and ``VACUUM
    INTO`` can still create other files and a ``PRAGMA`` can turn defences off.
    So: ``PRAGMA query_only`` (no writes to temp or attached schemas either),
    no attached databases (``SQLITE_LIMIT_ATTACHED`` = 0, where Python has
    ``setlimit``), and an authorizer that denies ATTACH/DETACH (``VACUUM
    INTO`` attaches its target) and every PRAGMA not in a read-only list.
    Source: SQLite's "Compile-Time Authorization Callbacks" and "Run-Time Limits".
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA query_only = ON")
    finally:
        cursor.close()
    if hasattr(dbapi_connection, "setlimit"):
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    dbapi_connection.set_authorizer(_sqlite_authorize)


def _sqlite_authorize(
    action: int, arg1: str | None, _arg2: str | None, _db: str | None, _source: str | None
) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in _SQLITE_READ_PRAGMAS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def sqlite_url(parsed: URL) -> URL:
    """The file as a ``mode=ro`` URI (an in-memory database is returned as is)."""
    database = parsed.database
    if not database or database == ":memory:":
        return parsed
    if parsed.query.get("uri") not in ("true", "1"):
        database = Path(database).absolute().as_uri()
    return parsed.set(database=database).update_query_dict({"mode": "ro", "uri": "true"})
