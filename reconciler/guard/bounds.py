"""The guard's input bounds: length and bracket depth, checked before anything parses (pure).

Validation is bounded by bounding its input: sqlglot's time grows with a statement's
length and its recursion with its nesting (a 32 KiB query validates well under a
second), so a text past either limit is refused unparsed.
"""

from __future__ import annotations

from reconciler.errors import UnsafeSqlError

MAX_SQL_CHARS = 32_768
"""The longest statement text the guard validates, in characters."""
MAX_NESTING = 32
"""The deepest bracket nesting the guard validates."""

SIZE_FIX = "write the query shorter and flatter (CTEs instead of deep nesting)"


def check_bounds(sql: str) -> None:
    """Refuse text over :data:`MAX_SQL_CHARS` or nesting over :data:`MAX_NESTING`, unparsed.

    Raises:
        UnsafeSqlError: the message names the limit.
    """
    if len(sql) > MAX_SQL_CHARS:
        raise UnsafeSqlError(
            f"SQL is {len(sql)} characters long; the guard validates at most {MAX_SQL_CHARS}",
            fix=SIZE_FIX,
        )
    depth = deepest = 0
    quote: str | None = None
    for char in sql:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]":
            depth -= 1
    if deepest > MAX_NESTING:
        raise UnsafeSqlError(
            f"SQL nests brackets {deepest} deep; the guard validates at most {MAX_NESTING}",
            fix=SIZE_FIX,
        )
