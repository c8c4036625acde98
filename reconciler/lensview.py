"""A warehouse seen through one lens: its allow-listed functions, dialect and search path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reconciler.resultset import Executor, ResultSet


class LensExecutor:
    """A warehouse seen through one lens: ``allow_functions``, ``dialect:``, search path.

    Every statement still passes the guard and the read-only connection, in the
    warehouse's dialect; only the functions the lens allow-lists (e.g. DuckDB's
    ``query_table``) stop being refused. When the lens's SQL is written in another
    dialect than the warehouse's, every statement and column expression is
    transpiled with sqlglot first (DESIGN §2 "Dialect"), and :attr:`transpiled`
    says so (``"duckdb→postgres"``) for the run record. Every statement runs with
    the lens's search path (DESIGN §2 "Seeds are per lens"), so its unqualified
    ``products`` is its own seed table. Everything else is the shared warehouse's.

    Attributes:
        dialect: the dialect statements are written in (the lens's); builders
            such as the profile count query generate in it.
        transpiled: ``"<from>→<to>"`` when statements are transpiled, else ``None``.
        search_path: the schemas searched before the warehouse's own path, in order.
    """

    def __init__(
        self,
        warehouse: Executor,
        allow_functions: tuple[str, ...],
        dialect: str,
        search_path: tuple[str, ...] = (),
    ) -> None:
        self._warehouse = warehouse
        self.allow_functions = allow_functions
        self._target = str(getattr(warehouse, "dialect", dialect))
        self.dialect = dialect
        self.transpiled = None if self._target == dialect else f"{dialect}→{self._target}"
        self.search_path = search_path

    def execute(
        self, sql: str, *, row_cap: int, timeout_s: float, as_of: str | None = None
    ) -> ResultSet:
        """:meth:`reconciler.warehouse.connection.Warehouse.execute`, through the lens.

        Raises:
            UnsafeSqlError: sqlglot cannot transpile ``sql`` to the warehouse's
                dialect, or the guard refuses it there.
            WarehouseError: as the warehouse's ``execute``.
        """
        # lazy: sqlglot's transpiler, only when a statement runs
        from reconciler.guard import transpile

        run: Callable[..., ResultSet] = self._warehouse.execute
        # Only a lens with a schema of its own passes a path: other executors need not take one.
        path = {"search_path": self.search_path} if self.search_path else {}
        result = run(
            transpile(sql, self.dialect, self._target),
            row_cap=row_cap,
            timeout_s=timeout_s,
            as_of=as_of,
            allow_functions=self.allow_functions,
            **path,
        )
        return result

    def distinct_values(
        self, table: str, column_sql: str, *, limit: int = 200, timeout_s: float
    ) -> tuple[str, ...]:
        """The warehouse's ``distinct_values`` with ``column_sql`` transpiled."""
        # lazy: sqlglot's transpiler, only when a statement runs
        from reconciler.guard import transpile

        column = transpile(column_sql, self.dialect, self._target, expression=True)
        values: Callable[..., tuple[str, ...]] = self._warehouse.distinct_values
        path = {"search_path": self.search_path} if self.search_path else {}
        return values(table, column, limit=limit, timeout_s=timeout_s, **path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._warehouse, name)
