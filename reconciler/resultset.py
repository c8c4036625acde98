"""The executed result of one statement, as plain values (pure; no driver types)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol


@dataclass(frozen=True)
class ResultSet:
    """Rows a statement returned, capped.

    Attributes:
        columns: column names in select-list order (as the driver reports them).
        rows: at most ``cap`` rows, each a tuple of Python values (int, float,
            Decimal, str, bool, date, datetime, None …).
        truncated: ``True`` when the statement produced more than ``cap`` rows
            (``cap + 1`` were fetched to know); such a result is inconclusive.
        elapsed_s: wall time of execution and fetch, in seconds.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False
    elapsed_s: float = 0.0

    def preview(self, limit: int = 20) -> dict[str, Any]:
        """A JSON-ready excerpt: columns, the first ``limit`` rows, row count.

        Cells keep JSON's own types (numbers — DECIMAL included — booleans, strings,
        null); anything else (dates, timestamps …) is its string form.
        """
        return {
            "columns": list(self.columns),
            "rows": [[_cell(v) for v in row] for row in self.rows[:limit]],
            "row_count": len(self.rows),
            "truncated": self.truncated,
        }


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Decimal) and value.is_finite():
        # NUMERIC/DECIMAL (PostgreSQL's SUM of an integer, ROUND …) is a number in JSON,
        # never a string: scale 0 as an int, the rest as the nearest float.
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    return str(value)


class Executor(Protocol):
    """What the suite, the serving path and profiling need from a warehouse."""

    def execute(
        self, sql: str, *, row_cap: int, timeout_s: float, as_of: str | None = None
    ) -> ResultSet: ...

    def distinct_values(
        self, table: str, column_sql: str, *, limit: int = ..., timeout_s: float
    ) -> tuple[str, ...]: ...
