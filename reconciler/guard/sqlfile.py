"""One query in a file a person wrote: where it starts, or why it is refused (pure).

``dst certify --sql FILE`` certifies the query in FILE. The file must hold exactly one
read-only query; a refusal names the file and the line (sqlglot's for a parse error,
the second statement's for two, the query's first line for a guard refusal). The
guard's bounds are checked before the text is parsed, so an oversized or deeply nested
file is refused quickly, never with a parser crash.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlglot
from sqlglot.errors import ParseError, TokenError

from reconciler.errors import LensLoadError, UnsafeSqlError
from reconciler.guard import check_bounds, check_read_only


def check_sql_file(name: str, sql: str, dialect: str, allow_functions: Collection[str]) -> int:
    """The line the file's one read-only query starts on (1-based).

    Args:
        name: the file as the person named it (messages say it, not an answer file).
        sql: the file's text.
        dialect: the lens's dialect, which the query is written in.
        allow_functions: the lens's ``allow_functions:``.

    Raises:
        LensLoadError: naming ``name`` and the line: over the guard's bounds (before
            parsing), nested past sqlglot's recursion, does not parse (sqlglot's line),
            holds no or several statements (the second one's line; a comment after the
            last ``;`` is none) or is refused by the guard (its first line).
    """
    try:
        check_bounds(sql)  # first: parsing time grows with length, recursion with depth
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
        sqlglot.parse(sql, read=dialect)
    except UnsafeSqlError as exc:
        raise LensLoadError(name, exc.message, fix=exc.fix) from None
    except RecursionError:
        fix = "write the query flatter (CTEs instead of deep nesting)"
        raise LensLoadError(name, "SQL is nested too deeply to validate", fix=fix) from None
    except (ParseError, TokenError) as exc:
        first = exc.errors[0] if isinstance(exc, ParseError) and exc.errors else {}
        raise LensLoadError(
            name,
            f"SQL does not parse as {dialect}: {first.get('description', exc)}",
            line=first.get("line"),
            fix=f"correct the query (written in the lens's dialect, {dialect})",
        ) from None
    semi = sqlglot.TokenType.SEMICOLON
    starts = [
        t.line
        for i, t in enumerate(tokens)
        if t.token_type is not semi and (i == 0 or tokens[i - 1].token_type is semi)
    ]
    if len(starts) != 1:
        raise LensLoadError(
            name,
            f"expected exactly one statement, found {len(starts)}",
            line=starts[1] if len(starts) > 1 else None,
            fix="keep one query in the file",
        )
    try:
        check_read_only(sql, dialect, allow_functions=allow_functions)
    except UnsafeSqlError as exc:
        raise LensLoadError(name, exc.message, line=starts[0], fix=exc.fix) from None
    return starts[0]
