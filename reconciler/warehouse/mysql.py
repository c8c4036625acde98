"""MariaDB and MySQL: the read-only session, statement timeouts, lens databases, write grants.

MySQL has no schemas inside a database (``SCHEMA`` is a synonym of ``DATABASE``), so
where PostgreSQL gives lens ``L`` a schema ``L`` (DESIGN §2 "Seeds are per lens"), a
MySQL warehouse gives it a database of its own, named after the URL's database:
``mysql+pymysql://reader@db/analytics`` holds lens ``sales`` in ``analytics__sales``
(:func:`lens_database`), so two environments on one server (``staging``, ``prod``)
never share a lens's tables. The URL's database is the default schema.

A connection is locked down in three ways, each of which holds without the others:

* each new connection's session is made ``TRANSACTION READ ONLY`` before any statement
  of ours (:func:`lock_down`), checked with ``@@transaction_read_only`` (``@@tx_read_only``
  before MariaDB 11.1) when the warehouse opens (:func:`check_session`);
* every statement runs in a ``START TRANSACTION READ ONLY`` that is rolled back, with
  the session's read-only mode and the statement timeout set again first
  (``max_statement_time`` in seconds on MariaDB, ``max_execution_time`` in milliseconds
  on MySQL, :func:`begin`);
* a least-privilege account (``GRANT SELECT ON `analytics`.*`` …): :func:`write_privilege`
  reads ``SHOW GRANTS`` and names what would still let a login write.

MySQL has no search path either: a query reads unqualified tables from the current
database only. :func:`qualify` names, for every unqualified table that is not a CTE,
the first database of the lens's path (its own, then its ``seeds_from`` lenses', then
the default) that holds it, so certified SQL never names a database.

Sources: MariaDB "SET TRANSACTION", "max_statement_time", "SHOW GRANTS", "Identifier
Case-sensitivity"; MySQL 8.0 "START TRANSACTION", "Optimizer Hints" (max_execution_time).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import sqlglot
from sqlalchemy.engine import URL, Connection
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.scope import traverse_scope

from reconciler.errors import WarehouseError

BACKENDS = frozenset({"mysql", "mariadb"})
LENS_SEPARATOR = "__"
# Session settings sent by the driver before any statement of ours. Division and AVG
# keep 4 decimals by default (div_precision_increment); 30 keeps them within the
# comparison's 1e-9 tolerance of the DOUBLE that DuckDB and PostgreSQL return.
_SESSION = ("SET SESSION TRANSACTION READ ONLY", "SET SESSION div_precision_increment = 30")
# MariaDB's default join_cache_level (2) joins unindexed tables by nested loops: a
# three-way join of seed tables (no indexes) takes minutes. Level 4 allows hash joins.
_MARIADB_HASH_JOINS = "SET SESSION join_cache_level = 4"
_NO_PARAMETERS = {"no_parameters": True}
_MODE_KEY = "dst_mysql_mode"  # pool record info: (read-only variable, is MariaDB)
# Server error codes of a statement stopped by its timeout: MariaDB ER_STATEMENT_TIMEOUT,
# MySQL ER_QUERY_TIMEOUT, and ER_QUERY_INTERRUPTED (MySQL's for max_execution_time).
_TIMEOUT_CODES = frozenset({1969, 3024, 1317})
# Collations that compare strings byte for byte, as DuckDB and PostgreSQL's C collation
# do, and (the first two) without padding trailing spaces; the first the server has wins.
BINARY_COLLATIONS = ("utf8mb4_0900_bin", "utf8mb4_nopad_bin", "utf8mb4_bin")
_GRANT = re.compile(r"^GRANT\s+(?P<privileges>.+?)\s+ON\s+(?P<target>.+?)\s+TO\s+", re.I | re.S)
_ROLE = re.compile(r"^GRANT\s+(?P<roles>.+?)\s+TO\s+", re.I | re.S)
# Privileges that only read (or do nothing): every other one can change data, files or
# accounts. Source: MariaDB "GRANT" privilege tables; MySQL 8.0 "Privileges Provided".
_READ_PRIVILEGES = frozenset({"SELECT", "USAGE", "SHOW VIEW", "SHOW DATABASES"})


def lens_database(default: str | None, lens: str) -> str:
    """The database that holds lens ``lens``'s tables: ``<default>__<lens>``, or ``lens``.

    Args:
        default: the URL's database (``None`` or ``""`` when it names none).
        lens: the lens name.
    """
    return f"{default}{LENS_SEPARATOR}{lens}" if default else lens


def lens_of(default: str | None, database: str) -> str | None:
    """The lens whose database is ``database`` (the inverse of :func:`lens_database`)."""
    if not default:
        return database
    prefix = f"{default}{LENS_SEPARATOR}"
    return database[len(prefix) :] if database.startswith(prefix) else None


def connect_args(parsed: URL) -> tuple[URL, dict[str, Any]]:
    """The URL without ``init_command`` (the session set-up is ours), and ``connect_args``."""
    args: dict[str, Any] = {}
    if "connect_timeout" not in parsed.query:
        args["connect_timeout"] = 10  # seconds
    return parsed.difference_update_query(["init_command"]), args


def lock_down(dbapi_connection: Any, record: Any) -> None:
    """Make a new connection's session read-only before any statement of ours runs.

    Registered for SQLAlchemy's ``connect`` event, so it runs once per DBAPI connection,
    before the pool hands it out; it notes on the pool record which variable holds the
    session's read-only mode (:func:`begin` sets it again before every statement).
    """
    cursor = dbapi_connection.cursor()
    try:
        for statement in _SESSION:
            cursor.execute(statement)
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
        version = str(row[0]).lower() if row else ""
        if "mariadb" in version:
            cursor.execute(_MARIADB_HASH_JOINS)
        try:
            cursor.execute("SELECT @@session.transaction_read_only")
            variable = "transaction_read_only"
        except Exception:  # MariaDB before 11.1 names it tx_read_only
            variable = "tx_read_only"
        cursor.fetchall()
    finally:
        cursor.close()
    record.info[_MODE_KEY] = (variable, "mariadb" in version)


def _scalar(conn: Connection, sql: str) -> Any:
    return conn.exec_driver_sql(sql, execution_options=_NO_PARAMETERS).scalar()


def check_session(conn: Connection, shown: str) -> None:
    """Refuse a session whose transactions would accept writes.

    Raises:
        WarehouseError: ``@@session.transaction_read_only`` is not 1.
    """
    try:
        state = _scalar(conn, "SELECT @@session.transaction_read_only")
    except Exception:  # MariaDB before 11.1 names it tx_read_only
        conn.rollback()
        state = _scalar(conn, "SELECT @@session.tx_read_only")
    conn.rollback()
    if str(state) != "1":
        raise WarehouseError(
            f"warehouse {shown}: the session is not read-only (transaction_read_only = {state})",
            fix="connect directly to the server, not through a proxy that drops session "
            "settings, as a least-privilege account (README, Warehouse)",
        )


def begin(conn: Connection, timeout_s: float) -> None:
    """Set the statement timeout and the read-only mode again, then start a read-only transaction.

    Both are session state a statement could have changed (``SET SESSION TRANSACTION
    READ WRITE`` would let a later DDL statement, which commits the read-only
    transaction first, run read-write), so one ``SET`` puts both back every time.
    """
    variable, mariadb = conn.connection.info.get(_MODE_KEY, ("transaction_read_only", False))
    timeout = (
        f"SESSION max_statement_time = {max(timeout_s, 0.001):.3f}"
        if mariadb
        else f"SESSION max_execution_time = {max(1, round(timeout_s * 1000))}"
    )
    conn.exec_driver_sql(f"SET {timeout}, SESSION {variable} = 1", execution_options=_NO_PARAMETERS)
    conn.exec_driver_sql("START TRANSACTION READ ONLY", execution_options=_NO_PARAMETERS)


def is_timeout(orig: BaseException | None) -> bool:
    """Whether a driver error is the server stopping a statement at its timeout."""
    args: tuple[object, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] in _TIMEOUT_CODES


def databases(conn: Connection) -> frozenset[str]:
    """The databases the login can see (``SHOW DATABASES`` lists only those)."""
    rows = conn.exec_driver_sql("SHOW DATABASES", execution_options=_NO_PARAMETERS)
    return frozenset(str(row[0]) for row in rows)


def tables(conn: Connection, names: Collection[str]) -> dict[str, dict[str, str]]:
    """``{database: {lowercased table name: stored name}}`` for the databases ``names``."""
    found: dict[str, dict[str, str]] = {name: {} for name in names}
    if not names:
        return found
    listed = ", ".join(exp.Literal.string(n).sql("mysql") for n in sorted(names))
    rows = conn.exec_driver_sql(
        "SELECT table_schema, table_name FROM information_schema.tables "
        f"WHERE table_schema IN ({listed})",
        execution_options=_NO_PARAMETERS,
    )
    for schema, table in rows:
        found.setdefault(str(schema), {}).setdefault(str(table).lower(), str(table))
    return found


def qualify(sql: str, path: Sequence[str], held: Mapping[str, Mapping[str, str]]) -> str:
    """``sql`` with each unqualified table named by the first database of ``path`` holding it.

    Args:
        sql: one MySQL query.
        path: database names in search order (the lens's, its ``seeds_from`` lenses',
            the default one).
        held: :func:`tables` of those databases.

    Returns:
        The query; unchanged when no table needs a database (a table no database of the
        path holds stays unqualified, so the server names it in its error).
    """
    key = tuple((db, tuple(sorted(held.get(db, {}).items()))) for db in path)
    return _qualified(sql, key)


@functools.lru_cache(maxsize=4096)
def _qualified(sql: str, path: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> str:
    try:
        tree = sqlglot.parse_one(sql, read="mysql")
    except ParseError:
        return sql  # the guard parsed it; the server reports what it cannot run
    lookup = [(db, dict(names)) for db, names in path]
    changed = False
    for scope in traverse_scope(tree):
        for table in scope.tables:
            if table.args.get("db") is not None or table.name in scope.cte_sources:
                continue
            for db, names in lookup:
                stored = names.get(table.name.lower())
                if stored is not None:
                    table.set("this", exp.to_identifier(stored, quoted=True))
                    table.set("db", exp.to_identifier(db, quoted=True))
                    changed = True
                    break
    return tree.sql(dialect="mysql") if changed else sql


def binary_collation(conn: Connection) -> str | None:
    """The first of :data:`BINARY_COLLATIONS` the server has, or ``None``."""
    listed = ", ".join(exp.Literal.string(c).sql("mysql") for c in BINARY_COLLATIONS)
    rows = conn.exec_driver_sql(
        f"SELECT collation_name FROM information_schema.collations "
        f"WHERE collation_name IN ({listed})",
        execution_options=_NO_PARAMETERS,
    )
    have = {str(row[0]) for row in rows}
    return next((c for c in BINARY_COLLATIONS if c in have), None)


def write_privilege(conn: Connection, databases: Iterable[str] | None = None) -> str | None:
    """Why the login of ``conn`` could write, or ``None`` when its grants only read.

    Reads ``SHOW GRANTS`` (the current account's grants, and on MariaDB those of its
    enabled role), follows granted roles one level (``SHOW GRANTS FOR role``), and looks
    for any privilege other than SELECT, USAGE, SHOW VIEW and SHOW DATABASES (INSERT,
    UPDATE, DELETE, CREATE, DROP, FILE, SUPER, ALL PRIVILEGES, GRANT OPTION, PROXY …) on
    ``*.*`` or on a database that matches one of ``databases`` (a database grant's
    ``_`` and ``%`` are wildcards, as in the server).

    Args:
        conn: a connection of the warehouse (read-only is fine: SHOW GRANTS only reads).
        databases: the lens databases and the default one; ``None`` counts every grant.

    Returns:
        One line naming the privilege and where it holds
        (``"INSERT, UPDATE on `analytics`.*"``), or ``None``.
    """
    wanted = None if databases is None else {d.lower() for d in databases}
    grants = [
        str(row[0]) for row in conn.exec_driver_sql("SHOW GRANTS", execution_options=_NO_PARAMETERS)
    ]
    seen: set[str] = set()
    for line in list(grants):
        role = _ROLE.match(line)
        if _GRANT.match(line) is None and role is not None:
            for name in (r.strip() for r in role.group("roles").split(",")):
                if name and name not in seen:
                    seen.add(name)
                    try:
                        rows = conn.exec_driver_sql(
                            f"SHOW GRANTS FOR {name}", execution_options=_NO_PARAMETERS
                        )
                        grants += [str(r[0]) for r in rows]
                    except Exception:  # the role's grants are not readable: assume the worst
                        conn.rollback()
                        return f"it holds role {name}, whose grants it cannot read"
    for line in grants:
        reason = _writes(line, wanted)
        if reason is not None:
            return reason
    return None


def _writes(line: str, wanted: set[str] | None) -> str | None:
    grant = _GRANT.match(line)
    if grant is None:
        return None
    target = grant.group("target").strip()
    if target.upper().startswith("PROXY") or grant.group("privileges").upper() == "PROXY":
        return f"PROXY on {target}"
    database = target.split(".", 1)[0].strip("`")
    if target.upper().startswith(("FUNCTION ", "PROCEDURE ", "PACKAGE ")):
        database = target.split(None, 1)[1].split(".", 1)[0].strip("`")
    if wanted is not None and database != "*" and not any(_like(database, d) for d in wanted):
        return None
    # Column lists (`SELECT (a, b)`) hold commas of their own.
    privileges = [p.strip() for p in re.sub(r"\([^)]*\)", "", grant.group("privileges")).split(",")]
    writing = [p for p in privileges if p.upper() not in _READ_PRIVILEGES]
    if "WITH GRANT OPTION" in line.upper():
        writing.append("GRANT OPTION")
    return f"{', '.join(writing)} on {target}" if writing else None


def _like(pattern: str, database: str) -> bool:
    """Whether a grant's database ``pattern`` (``_``/``%`` wildcards, ``\\`` escapes) matches."""
    regex = ""
    chars = iter(pattern.lower())
    for char in chars:
        if char == "\\":
            regex += re.escape(next(chars, ""))
        elif char == "%":
            regex += ".*"
        elif char == "_":
            regex += "."
        else:
            regex += re.escape(char)
    return re.fullmatch(regex, database) is not None
