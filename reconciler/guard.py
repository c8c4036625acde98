"""The read-only guard: SQL is exactly one query and nothing else (pure, sqlglot).

This is the statement-level half of the read-only defence; the connection-level
half (read-only DuckDB, external access disabled) lives in ``warehouse``. The
whole tree is walked, so a write hidden in a CTE or subquery is refused too.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from reconciler.errors import UnsafeSqlError

_QUERY_ROOTS = (exp.Select, exp.SetOperation, exp.Subquery)
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
    exp.Command, exp.Copy, exp.Attach, exp.Detach, exp.Pragma, exp.Set, exp.Transaction,
    exp.Commit, exp.Rollback, exp.Use, exp.Into, exp.Lock, exp.TruncateTable, exp.LoadData,
    exp.Grant, exp.Describe,
)
_FIX = "certified and exemplar SQL must be a single SELECT (WITH … SELECT, UNION …) and nothing else"


def parse_query(sql: str, dialect: str) -> exp.Expression:
    """Parse SQL that must be exactly one statement.

    Raises:
        UnsafeSqlError: it does not parse, or holds zero or several statements.
    """
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as exc:
        first = exc.errors[0]["description"] if exc.errors else str(exc)
        raise UnsafeSqlError(f"SQL does not parse as {dialect}: {first}", fix=_FIX) from None
    if len(statements) != 1:
        raise UnsafeSqlError(
            f"expected exactly one statement, found {len(statements)}", fix=_FIX
        )
    return statements[0]


def check_read_only(sql: str, dialect: str) -> exp.Expression:
    """Accept exactly one read-only query.

    Args:
        sql: the statement text.
        dialect: a sqlglot dialect name (``duckdb``, ``postgres``, ``sqlite`` …).

    Returns:
        The parsed query.

    Raises:
        UnsafeSqlError: several statements, a root that is not a query, or any
            node anywhere in the tree that writes, loads, attaches or configures.
    """
    tree = parse_query(sql, dialect)
    if not isinstance(tree, _QUERY_ROOTS):
        raise UnsafeSqlError(
            f"statement is a {tree.key.upper()}, not a query", fix=_FIX
        )
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise UnsafeSqlError(
                f"query contains a {node.key.upper()} clause, which is not read-only", fix=_FIX
            )
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise UnsafeSqlError("query takes row locks (FOR UPDATE/SHARE)", fix=_FIX)
    return tree


def parse_expression(sql: str, dialect: str) -> exp.Expression:
    """Parse a SQL expression (a metric, a filter, a column ``expr``).

    Raises:
        UnsafeSqlError: it does not parse, or holds a subquery or a write.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect, into=exp.Condition)
    except ParseError as exc:
        first = exc.errors[0]["description"] if exc.errors else str(exc)
        raise UnsafeSqlError(f"expression {sql!r} does not parse: {first}",
                             fix="write a SQL expression over the model's columns") from None
    for node in tree.walk():
        if isinstance(node, (*_FORBIDDEN_NODES, exp.Select)):
            raise UnsafeSqlError(f"expression {sql!r} may not contain a {node.key.upper()}",
                                 fix="write a SQL expression over the model's columns")
    return tree


def tables_read(sql: str, dialect: str) -> frozenset[str]:
    """Physical tables a query reads (lowercase, unqualified), CTE names excluded."""
    tree = parse_query(sql, dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return frozenset(
        t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes
    )


def reads_current_date(sql: str, dialect: str) -> bool:
    """Whether a query reads the clock (CURRENT_DATE, CURRENT_TIMESTAMP, NOW() …)."""
    tree = parse_query(sql, dialect)
    clock = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.CurrentDatetime)
    return any(isinstance(n, clock) for n in tree.walk())
