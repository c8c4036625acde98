"""Is a declared key unique? The bounded queries that count a table's rows and distinct keys.

A model's ``primary_key`` (and the columns on the "one" side of a many-to-one
join) promise one row per key value; when the data holds several, every join
through that key fans out. A key is unique when ``COUNT(*)`` equals the count
of distinct key values, rows with a NULL in any key column not counted as a
value (SQL's ``COUNT(DISTINCT …)`` rule), so a NULL key is a violation too.

The queries are built with sqlglot from the model's column expressions: pure,
no engine. :func:`key_count_sql` is one query per model for a warehouse that
returns values (``dst validate --warehouse``); :func:`distinct_keys_sql` and
:func:`duplicated_sql` serve runners that only count rows (the importers' seed
runs, :data:`~reconciler.interop.importers.OracleRunner`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from reconciler import guard


def _keys(key_sql: Sequence[str], read: str) -> list[exp.Expr]:
    if not key_sql:
        raise ValueError("a key needs at least one column")
    return [guard.parse_expression(sql, read) for sql in key_sql]


def _distinct(table: str, keys: Sequence[exp.Expr], read: str) -> exp.Select:
    """``SELECT DISTINCT k1, … FROM table WHERE k1 IS NOT NULL AND …``."""
    not_null = [exp.Not(this=exp.Is(this=k.copy(), expression=exp.Null())) for k in keys]
    projections = [exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(keys)]
    return (
        exp.select(*projections)
        .distinct()
        .from_(exp.to_table(table, dialect=read))
        .where(exp.and_(*not_null))
    )


def _count_of(query: exp.Select) -> exp.Select:
    return exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=query, alias="d"))


def key_count_sql(table: str, key_sql: Sequence[str], *, read: str, write: str) -> str:
    """One query returning one row ``(row_count, distinct_keys)`` for a key of ``table``.

    Args:
        table: the model's ``table`` (``orders`` or ``analytics.orders``).
        key_sql: the key columns' SQL expressions, in ``read`` dialect.
        read: the dialect the expressions are written in (the lens's).
        write: the warehouse's dialect.

    Raises:
        UnsafeSqlError: an expression does not parse or is not a plain expression.
        ValueError: ``key_sql`` is empty.
    """
    keys = _keys(key_sql, read)
    rows = exp.select(exp.Count(this=exp.Star())).from_(exp.to_table(table, dialect=read))
    query = exp.select(
        exp.alias_(exp.Subquery(this=rows), "row_count"),
        exp.alias_(exp.Subquery(this=_count_of(_distinct(table, keys, read))), "distinct_keys"),
    )
    return query.sql(dialect=write)


def distinct_keys_sql(table: str, key_sql: Sequence[str], *, dialect: str) -> str:
    """A query with one row per distinct non-NULL key value of ``table``.

    Raises:
        UnsafeSqlError: an expression does not parse or is not a plain expression.
        ValueError: ``key_sql`` is empty.
    """
    return _distinct(table, _keys(key_sql, dialect), dialect).sql(dialect=dialect)


def duplicated_sql(table: str, key_sql: Sequence[str], *, dialect: str) -> str:
    """A query with one row when the key is not unique over ``table``, none when it is.

    Raises:
        UnsafeSqlError: an expression does not parse or is not a plain expression.
        ValueError: ``key_sql`` is empty.
    """
    keys = _keys(key_sql, dialect)
    rows = exp.select(exp.Count(this=exp.Star())).from_(exp.to_table(table, dialect=dialect))
    distinct = _count_of(_distinct(table, keys, dialect))
    query = exp.select(exp.alias_(exp.Literal.number(1), "duplicated")).where(
        exp.GT(this=exp.Subquery(this=rows), expression=exp.Subquery(this=distinct))
    )
    return query.sql(dialect=dialect)


def table_probe_sql(table: str, *, read: str, write: str) -> str:
    """A query that reads no rows of ``table`` but fails when the warehouse does not hold it."""
    query = exp.select(exp.alias_(exp.Literal.number(1), "present"))
    query = query.from_(exp.to_table(table, dialect=read)).where(exp.false())
    return query.sql(dialect=write)
