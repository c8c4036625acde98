"""Tables of the server, not of the warehouse (pure).

MySQL and MariaDB keep accounts, password hashes, grants and plugin lists in the
``mysql`` database, live sessions and statement texts in ``performance_schema``, and
helpers over both in ``sys``. A certified or generated query reads the warehouse's
tables, so a table qualified with one of these databases is refused, whatever the
connection's grants (``information_schema`` describes the caller's own tables and
stays readable). Source: MySQL 8.0 manual "The mysql System Schema",
"MySQL Performance Schema", "MySQL sys Schema"; MariaDB "System Tables".
"""

from __future__ import annotations

from sqlglot import exp

from reconciler.errors import UnsafeSqlError

SYSTEM_DATABASES = {"mysql": frozenset({"mysql", "performance_schema", "sys"})}


def check_table(node: exp.Table, dialect: str, *, what: str) -> None:
    """Refuse a table in one of ``dialect``'s :data:`SYSTEM_DATABASES`.

    Raises:
        UnsafeSqlError: naming the table and its database.
    """
    system = SYSTEM_DATABASES.get(dialect)
    database = node.db.lower()  # MySQL database names: case-insensitive on the common setups
    if system and database in system:
        raise UnsafeSqlError(
            f"{what} reads {database}.{node.name}, a table of the server's own {database!r} "
            "database, not of the warehouse",
            fix="query the warehouse's tables",
        )
