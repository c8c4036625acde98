"""What a warehouse login could write, read once when the connection opens.

Answer SQL (oracles, generated SQL, ``dst ask``) runs only on a connection that
cannot write (DESIGN §7 "security"): the guard and the read-only transaction are
one defence, the login's own privileges the other, and a login that could write
makes the second one void. :func:`write_access` says why a connection could
write, one phrase per reason, when the warehouse opens; :func:`admit`, called once per
opened warehouse by :meth:`reconciler.context.Runtime.warehouse_for` (the one place
answer SQL gets its warehouse), refuses it with exit 2 unless the environment sets
``allow_privileged: true`` in ``dst.yaml``, and then warns. Seeding writes, and opens
its own connection (:mod:`.seed`), so none of this applies to ``dst seed``.

The checks, dispatched by sqlglot dialect in :data:`CHECKS` (the one place a
backend's check is plugged in):

====================  ============================================================
``postgres``          superuser (``rolsuper``); ``CREATEROLE`` (such a role can grant
                      itself the roles below); ``REPLICATION`` (logical slots change
                      server state); membership of ``pg_write_server_files``,
                      ``pg_execute_server_program``, ``pg_read_server_files`` or
                      ``pg_write_all_data``; ``CREATE`` on the database or on any
                      schema outside PostgreSQL's own; ``INSERT``/``UPDATE`` (on any
                      column), ``DELETE`` or ``TRUNCATE`` on any table, view or
                      foreign table outside them. ``CREATEDB`` is accepted: creating a
                      database cannot run inside a transaction block, every statement
                      of dst runs inside one, and it writes no table of the warehouse.
                      ``TEMP`` is accepted: a read-only transaction refuses
                      ``CREATE TEMP TABLE``, and a temporary table ends with the session.
``mysql``             any privilege beyond SELECT, USAGE, SHOW VIEW and SHOW DATABASES
                      in the account's grants or its roles' (:func:`.mysql.write_privilege`)
``duckdb``            a file-backed database attached read-write (``duckdb_databases()``
                      ``readonly = false``). An in-memory database has no file to
                      protect and cannot be opened read-only, so it passes.
anything else         not checked: SQLite opens ``mode=ro`` (:mod:`.readonly`); other
                      backends rely on the account's grants.
====================  ============================================================

Sources: PostgreSQL manual, "Privileges" (``has_*_privilege`` and
``pg_has_role``), "Predefined Roles" and "Role Attributes"; DuckDB manual,
``duckdb_databases()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from reconciler.errors import PrivilegedWarehouse

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

Query = Callable[[str], Sequence[Sequence[object]]]
"""Runs one read-only statement on the connection under test and returns its rows."""

_SHOWN = 3  # objects named per reason; the rest are counted
_READ = 1000  # rows read per catalog query: a login that owns 100,000 tables is one reason

# Schemas PostgreSQL keeps for itself: its catalog, toast and every session's temp schema.
_PG_OWN_SCHEMA = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname !~ '^pg_(toast|temp_|toast_temp_)'"
)
_PG_ROLE_SQL = (
    "SELECT rolsuper, rolcreaterole, rolreplication FROM pg_catalog.pg_roles "
    "WHERE rolname = current_user"
)
_PG_MEMBER_SQL = (
    "SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('pg_write_server_files', "
    "'pg_execute_server_program', 'pg_read_server_files', 'pg_write_all_data') "
    "AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname"
)
_PG_DATABASE_SQL = (
    "SELECT current_database() WHERE has_database_privilege(current_database(), 'CREATE')"
)
_PG_SCHEMA_SQL = (
    "SELECT n.nspname FROM pg_catalog.pg_namespace n "
    f"WHERE {_PG_OWN_SCHEMA} AND has_schema_privilege(n.oid, 'CREATE') ORDER BY 1 LIMIT {_READ}"
)
# INSERT and UPDATE may be granted per column; has_any_column_privilege also sees a
# table-level grant. A view can be written through (an updatable view writes its table).
_PG_TABLE_SQL = (
    "SELECT p.privilege, n.nspname || '.' || c.relname "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "CROSS JOIN (VALUES ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) AS p(privilege) "
    f"WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND {_PG_OWN_SCHEMA} "
    "AND CASE WHEN p.privilege IN ('INSERT', 'UPDATE') "
    "THEN has_any_column_privilege(c.oid, p.privilege) "
    "ELSE has_table_privilege(c.oid, p.privilege) END "
    f"ORDER BY 1, 2 LIMIT {_READ}"
)
_DUCKDB_SQL = (
    "SELECT database_name, path FROM duckdb_databases() "
    "WHERE NOT internal AND NOT readonly AND path IS NOT NULL ORDER BY 1"
)


def write_access(dialect: str, query: Query) -> tuple[str, ...]:
    """Why the connection ``query`` runs on could write; ``()`` when it cannot.

    Args:
        dialect: the warehouse's sqlglot dialect name (``postgres``, ``duckdb`` …).
        query: runs one statement on that connection and returns its rows.

    Returns:
        One phrase per reason, e.g. ``("the login is a superuser (rolsuper)",)``;
        ``()`` for a dialect without a check in :data:`CHECKS`.

    Raises:
        Whatever ``query`` raises (the caller's driver errors).
    """
    check = CHECKS.get(dialect)
    return () if check is None else check(query)


RECIPE = 'README, Security: "A read-only warehouse role"'
"""Where the read-only role recipe is written, for messages."""


class Opened(Protocol):
    """What :func:`admit` reads of an open warehouse (both warehouse kinds have it)."""

    write_access: tuple[str, ...]
    display_url: str
    dialect: str

    def close(self) -> None: ...


def admit(
    opened: Opened, environment: str | None, *, allowed: bool, warn: Callable[[str], None]
) -> None:
    """Refuse answer SQL on a connection that could write, unless the environment allows it.

    Args:
        opened: the warehouse just opened; closed here when it is refused.
        environment: the ``--env`` name, ``None`` for the unnamed default environment.
        allowed: that environment's ``allow_privileged`` in ``dst.yaml``.
        warn: where the warning goes when ``allowed`` (stderr, through the progress sink).

    Raises:
        PrivilegedWarehouse: ``opened.write_access`` is not empty and ``allowed`` is
            false (exit 2), naming the environment, the redacted URL, every reason and
            the fix.
    """
    write_access, display_url = opened.write_access, opened.display_url
    if not write_access:
        return
    where = "the default environment" if environment is None else f"environment {environment}"
    setting = (
        "allow_privileged: true at the top level of dst.yaml"
        if environment is None
        else f"allow_privileged: true under environments: {environment}: in dst.yaml"
    )
    reasons = "; ".join(write_access)
    if allowed:
        warn(
            f"WARNING: {where} runs answer SQL on {display_url}, a connection that can "
            f"write ({reasons}), because dst.yaml sets allow_privileged: true; only the "
            f"read-only guard and transaction stand between generated SQL and the data. "
            f"Connect as a read-only role instead ({RECIPE})"
        )
        return
    opened.close()
    if opened.dialect == "duckdb":
        fix = "open the DuckDB file read-only (read_only=True), or close what holds it read-write"
    else:
        fix = f"connect as a read-only role ({RECIPE})"
    raise PrivilegedWarehouse(
        f"{where}: warehouse {display_url} can write, and answer SQL runs only on a "
        f"connection that cannot: {reasons}",
        fix=f"{fix}; or, knowingly, set {setting}",
    )


def postgres_write_access(query: Query) -> tuple[str, ...]:
    """:func:`write_access` for PostgreSQL (the checks in the module docstring)."""
    role = query(_PG_ROLE_SQL)
    superuser, create_role, replication = (bool(v) for v in role[0]) if role else (False,) * 3
    if superuser:
        return ("the login is a superuser (rolsuper)",)
    reasons = []
    if create_role:
        reasons.append("the login may create roles (CREATEROLE), so it can grant itself more")
    if replication:
        reasons.append("the login is a replication role (REPLICATION)")
    for (member,) in query(_PG_MEMBER_SQL):
        reasons.append(f"the login is a member of {member}")
    for (database,) in query(_PG_DATABASE_SQL):
        reasons.append(f"the login may create schemas in database {database} (CREATE)")
    schemas = [str(row[0]) for row in query(_PG_SCHEMA_SQL)]
    if schemas:
        listed = _listed(schemas, capped=len(schemas) >= _READ)
        reasons.append(f"the login may create objects in schema {listed} (CREATE)")
    tables: dict[str, list[str]] = {}
    rows = query(_PG_TABLE_SQL)
    for privilege, table in rows:
        tables.setdefault(str(privilege), []).append(str(table))
    for privilege in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
        if privilege in tables:
            listed = _listed(tables[privilege], capped=len(rows) >= _READ)
            reasons.append(f"the login may {privilege} {listed}")
    return tuple(reasons)


def duckdb_write_access(query: Query) -> tuple[str, ...]:
    """:func:`write_access` for DuckDB: every file-backed database attached read-write."""
    return tuple(
        f"the DuckDB file {path} (database {name}) is open read-write"
        for name, path in query(_DUCKDB_SQL)
    )


def _listed(names: Sequence[str], *, capped: bool) -> str:
    """``a, b, c and 4 more``; ``… and at least 997 more`` when the query hit its limit."""
    shown = ", ".join(names[:_SHOWN])
    more = len(names) - _SHOWN
    if more <= 0:
        return shown
    return f"{shown} and {'at least ' if capped else ''}{more} more"


class _Statements:
    """A :data:`Query` offered as the two calls :func:`.mysql.write_privilege` makes."""

    def __init__(self, query: Query) -> None:
        self._query = query

    def exec_driver_sql(self, sql: str, execution_options: object = None) -> Sequence[object]:
        return self._query(sql)

    def rollback(self) -> None:
        return None  # MariaDB/MySQL keep the transaction usable after a failed SHOW


def mysql_write_access(query: Query) -> tuple[str, ...]:
    """:func:`write_access` for MariaDB/MySQL: :func:`.mysql.write_privilege` on its grants."""
    # lazy: SQLAlchemy, which the DuckDB path never loads
    from reconciler.warehouse.mysql import write_privilege

    writes = write_privilege(cast("Connection", _Statements(query)))
    return () if writes is None else (f"the account holds {writes}",)


CHECKS: Mapping[str, Callable[[Query], tuple[str, ...]]] = {
    "postgres": postgres_write_access,
    "duckdb": duckdb_write_access,
    "mysql": mysql_write_access,
}
"""The write check of each sqlglot dialect; a backend's check is added here and only here."""
