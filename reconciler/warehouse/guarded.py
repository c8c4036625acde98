"""What every read-only warehouse does the same way: the guard before a query runs.

:class:`GuardedWarehouse` is the shared half of the SQLAlchemy-backed
:class:`~reconciler.warehouse.connection.Warehouse` and the direct
:class:`~reconciler.warehouse.duck.DuckWarehouse`: :meth:`GuardedWarehouse.execute`
checks each statement with the guard (:func:`reconciler.guard.checked_query`, its
verdict kept by text, dialect and allow-list), pins the clock when asked, and hands
the statement to the backend's ``_execute_raw``; :meth:`GuardedWarehouse.distinct_values`
builds the value-profile query and runs it through that same guarded path.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.resultset import ResultSet


def distinct_values_sql(table: str, column_sql: str, dialect: str, limit: int) -> str:
    """``SELECT DISTINCT expr AS value FROM table WHERE expr IS NOT NULL ORDER BY 1 LIMIT n+1``.

    Built with sqlglot, identifiers normalized per dialect and quoted.

    Raises:
        UnsafeSqlError: ``table`` or ``column_sql`` does not parse or is unsafe.
    """
    column = guard.parse_expression(column_sql, dialect)
    try:
        source = exp.to_table(table, dialect=dialect)
    except (ParseError, ValueError):
        raise UnsafeSqlError(
            f"table {table!r} is not a table name",
            fix="write the model's table as [schema.]name",
        ) from None
    query = (
        exp.select(exp.alias_(column, "value"))
        .distinct()
        .from_(source)
        .where(exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null())))
        .order_by(exp.Literal.number(1))
        .limit(limit + 1)
    )
    query = normalize_identifiers(query, dialect=dialect)
    return query.sql(dialect=dialect, identify=True)


class GuardedWarehouse:
    """The guarded query path; a backend supplies ``dialect`` and ``_execute_raw``."""

    dialect: str

    def _execute_raw(
        self, sql: str, *, row_cap: int, timeout_s: float, search_path: Sequence[str] = ()
    ) -> ResultSet:
        """Run ``sql`` read-only without the guard (the backend's own; tests call it)."""
        raise NotImplementedError

    def execute(
        self,
        sql: str,
        *,
        row_cap: int,
        timeout_s: float,
        as_of: str | None = None,
        allow_functions: Collection[str] = (),
        search_path: Sequence[str] = (),
    ) -> ResultSet:
        """Run one guarded read-only query.

        Args:
            sql: exactly one query in :attr:`dialect`; never rewritten except to
                pin the clock.
            row_cap: rows to keep (the lens's ``row_cap``); ``row_cap + 1`` are
                fetched so an over-cap result is marked ``truncated``.
            timeout_s: wall-clock limit in seconds (the lens's ``statement_timeout_s``).
            as_of: ``YYYY-MM-DD``; when given, every clock read (CURRENT_DATE,
                NOW() …) is replaced by that day (:func:`guard.pin_current_date`).
            allow_functions: otherwise denied functions the lens allow-lists
                (``allow_functions`` in ``lens.yaml``); the connection-level
                defence still applies to them.
            search_path: schemas searched first for unqualified tables, in order,
                for this statement only; ``()`` leaves the warehouse's own.

        Returns:
            At most ``row_cap`` rows of the driver's values, the column names it
            reports, ``truncated`` and ``elapsed_s`` (seconds).

        Raises:
            UnsafeSqlError: the guard refuses the SQL.
            UsageError: ``as_of`` is not a calendar date.
            WarehouseError: execution failed (the driver's first line) or took
                longer than ``timeout_s`` ("timed out after N s").
        """
        guard.checked_query(sql, self.dialect, allow_functions=allow_functions)  # or it raises
        if as_of is not None:
            sql = _pinned(sql, as_of, self.dialect)
        return self._execute_raw(sql, row_cap=row_cap, timeout_s=timeout_s, search_path=search_path)

    def distinct_values(
        self,
        table: str,
        column_sql: str,
        *,
        limit: int = 200,
        timeout_s: float,
        search_path: Sequence[str] = (),
    ) -> tuple[str, ...]:
        """Distinct non-null values of an expression over a table, as strings.

        Feeds the generator's value index (``region = 'EMEA'``); the query is
        :func:`distinct_values_sql`'s and runs through :meth:`execute`.

        Args:
            table: the model's ``table`` (``orders`` or ``analytics.orders``).
            column_sql: a column name or SQL expression over that table.
            limit: the most values worth indexing.
            timeout_s: wall-clock limit in seconds.
            search_path: as for :meth:`execute`.

        Returns:
            The values, sorted by the warehouse; ``()`` when there are more than
            ``limit`` (a high-cardinality column is not worth indexing).

        Raises:
            UnsafeSqlError: ``table`` or ``column_sql`` does not parse or is unsafe.
            WarehouseError: execution failed or timed out.
        """
        sql = distinct_values_sql(table, column_sql, self.dialect, limit)
        result = self.execute(sql, row_cap=limit, timeout_s=timeout_s, search_path=search_path)
        if result.truncated:
            return ()
        return tuple(str(row[0]) for row in result.rows)


@functools.lru_cache(maxsize=4096)
def _pinned(sql: str, as_of: str, dialect: str) -> str:
    """:func:`guard.pin_current_date` of ``sql``, once per text, day and dialect.

    A suite runs the same statements again and again (each oracle, each
    regeneration, run after run in ``dst watch``), and the pinned text depends on
    nothing else; on a miss the text's tree comes from the guard's memo. A bad
    ``as_of`` raises every time (an exception is not kept).
    """
    return guard.pin_current_date(sql, as_of, dialect)
