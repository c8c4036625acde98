"""Compile SQL written against a semantic layer's logical names into physical SQL.

Cortex Analyst verified queries name *logical* tables and columns (Snowflake's
verified-query docs: "Verified SQL queries must use the names of the logical
tables and columns defined in the semantic model"), e.g. ``__opportunity`` and
``salescycleduration`` whose definition is ``datediff('days', createddate,
closedate)`` over the physical ``opportunity`` table. An oracle must not move
when a definition is edited later, so it is compiled once, at import: each
logical table reference becomes a derived table over its physical table that
exposes every logical column under its logical name::

    FROM __opportunity AS o
    →  FROM (SELECT id, DATE_DIFF('DAY', createddate, closedate) AS salescycleduration, …
             FROM opportunity) AS o

The rest of the query is left as written (CTE names included) and transpiled to
the lens dialect. Pure: sqlglot only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler import guard
from reconciler.errors import InputError, UnsafeSqlError


class LogicalSqlError(InputError):
    """SQL over logical names that cannot be compiled to physical SQL."""


@dataclass(frozen=True)
class LogicalTable:
    """A logical table: its name, physical table and columns.

    Attributes:
        name: the logical name (matched case-insensitively, with or without a
            leading ``__``).
        table: the physical table, unqualified.
        columns: ``{logical column name, lowercase: SQL expression over the
            physical table, in the source dialect}``, in declaration order.
    """

    name: str
    table: str
    columns: Mapping[str, str]


def lowercase_identifiers(tree: exp.Expr) -> exp.Expr:
    """Lowercase every unquoted identifier of ``tree`` in place and return it.

    Snowflake folds unquoted identifiers to one case and DuckDB matches them
    case-insensitively, so lowercase is the same name in both; quoted
    identifiers are case-sensitive in Snowflake and are left alone.
    """
    for node in tree.find_all(exp.Identifier):
        if not node.quoted:
            node.set("this", node.name.lower())
    return tree


def parse_column_expression(sql: str, read: str) -> exp.Expr:
    """Parse a logical column's expression, lowercased and without table qualifiers.

    Raises:
        LogicalSqlError: it does not parse or holds a query or a write.
    """
    try:
        tree = guard.parse_expression(sql, read)
    except UnsafeSqlError as exc:
        raise LogicalSqlError(exc.message, fix=exc.fix) from None
    tree = lowercase_identifiers(tree)
    for column in tree.find_all(exp.Column):
        column.set("table", None)  # the derived table has exactly one source
        column.set("db", None)
        column.set("catalog", None)
    return tree


def derived_table(table: LogicalTable, read: str) -> exp.Select:
    """``SELECT <expr> AS <logical column>, … FROM <physical table>`` for one logical table.

    Raises:
        LogicalSqlError: a column expression does not parse.
    """
    projections: list[exp.Expr] = []
    for name, sql in table.columns.items():
        expr = parse_column_expression(sql, read)
        if isinstance(expr, exp.Column) and expr.name == name:
            projections.append(expr)
        else:
            projections.append(exp.alias_(expr, exp.to_identifier(name)))
    return exp.select(*projections).from_(exp.to_table(table.table))


def compile_logical(
    sql: str,
    tables: Sequence[LogicalTable],
    *,
    read: str = "snowflake",
    write: str = "duckdb",
) -> str:
    """Compile one query over logical names into a query over physical tables.

    Args:
        sql: the query, in ``read`` dialect, naming logical tables and columns.
        tables: the model's logical tables.
        read: the source dialect (sqlglot name).
        write: the lens dialect (sqlglot name).

    Returns:
        The physical query in ``write`` dialect, pretty-printed, identifiers
        lowercased.

    Raises:
        LogicalSqlError: the query does not parse, is not a single read-only
            query, reads a table that is neither a CTE nor a logical table, or
            uses a CTE name that would hide a physical table.
    """
    try:
        tree = lowercase_identifiers(guard.check_read_only(sql, read))
    except UnsafeSqlError as exc:
        raise LogicalSqlError(exc.message, fix=exc.fix) from None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    by_name = {t.name.lower(): t for t in tables}
    shadowed = sorted(ctes & {t.table.lower() for t in tables})
    if shadowed:
        raise LogicalSqlError(
            f"CTE {shadowed[0]!r} has the name of a physical table the compiled query reads",
            fix="rename the CTE in the verified query",
        )
    known = ", ".join(sorted(by_name)) or "none"
    for ref in list(tree.find_all(exp.Table)):
        if not isinstance(ref.this, exp.Identifier):
            continue  # table functions and the like are not names
        name = ref.name.lower()
        if name in ctes:
            continue
        logical = by_name.get(name) or by_name.get(name.removeprefix("__"))
        if logical is None:
            raise LogicalSqlError(
                f"query reads {ref.name!r}, which is neither a CTE nor a logical table "
                f"(logical tables: {known})",
                fix="write the verified query against the model's logical tables",
            )
        alias = ref.args.get("alias")
        if not isinstance(alias, exp.TableAlias):
            alias = exp.TableAlias(this=exp.to_identifier(ref.name))
        ref.replace(exp.Subquery(this=derived_table(logical, read), alias=alias.copy()))
    try:
        return tree.sql(dialect=write, pretty=True)
    except SqlglotError as exc:
        raise LogicalSqlError(f"cannot write the compiled query as {write}: {exc}") from None


def parse_sql(sql: str, dialect: str) -> exp.Expr | None:
    """Parse one statement, or ``None`` when it does not parse."""
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
