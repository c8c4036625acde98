"""A lens's search path on a pooled connection.

Seeds are per lens (DESIGN §2): lens L's tables live in schema ``L``, and a query of
L runs with L's schema first on the search path, then the lenses it names in
``seeds_from``, then the default schema. :class:`~reconciler.warehouse.connection.Warehouse`
sets it per statement with these helpers:

* PostgreSQL: ``set_config('search_path', …, true)`` in the query that opens every
  read-only transaction, so it ends with the transaction (always rolled back) and a
  pooled connection never carries one lens's path into another lens's query;
* DuckDB: ``SET search_path`` (session state; a read-only database with a locked
  configuration still allows it), remembered on the pooled connection so only a
  different path costs a statement.

Every name is quoted, so a lens called ``my-lens`` or ``2024`` stays one schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection
from sqlglot import exp

_NO_PARAMETERS = {"no_parameters": True}
_SEARCH_PATH = "dst_search_path"  # key in a pooled DBAPI connection's info: the path it has


def quoted_names(search_path: Sequence[str], separator: str = ", ") -> str:
    """``"a", "b"``: each schema quoted, so a lens name such as ``my-lens`` stays one name."""
    quoted = (exp.to_identifier(name, quoted=True).sql("postgres") for name in search_path)
    return separator.join(quoted)


def postgres_search_path(search_path: Sequence[str]) -> str:
    """A ``set_config`` call putting ``search_path`` before the session's own, this transaction.

    The session's path (``"$user", public`` unless the role sets another) stays after
    the lens schemas, so a configured search path keeps working for what they lack.
    """
    names = exp.Literal.string(quoted_names(search_path) + ", ").sql("postgres")
    return f"set_config('search_path', {names} || current_setting('search_path'), true)"


def set_duckdb_search_path(conn: Connection, search_path: Sequence[str]) -> None:
    """Give a pooled DuckDB connection ``search_path`` (then ``main``), or its default back.

    ``SET search_path`` is session state, so the connection remembers the path it
    was given and only a different one costs a statement.
    """
    # DuckDB reads a space after the comma as part of the next name.
    wanted = f"{quoted_names(search_path, ',')},main" if search_path else ""
    info = conn.connection.info
    if info.get(_SEARCH_PATH, "") == wanted:
        return
    if wanted:
        literal = exp.Literal.string(wanted).sql("duckdb")
        conn.exec_driver_sql(f"SET search_path = {literal}", execution_options=_NO_PARAMETERS)
    else:
        conn.exec_driver_sql("RESET search_path", execution_options=_NO_PARAMETERS)
    info[_SEARCH_PATH] = wanted
