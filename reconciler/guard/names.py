"""Function names as the warehouse reads them (pure).

The guard judges the name the warehouse will look up, not sqlglot's class for it:
``"Lower"(x)`` on PostgreSQL calls a function named ``Lower`` (quoted names keep their
case there), which is not ``lower``; ``NVL(a, b)`` on DuckDB calls ``nvl``, whatever
sqlglot turns it into. So a call's name is read from the text it was parsed from
(sqlglot keeps each call's name token position in ``meta``), then quoted and folded the
way the dialect does:

* PostgreSQL folds an unquoted name to lower case and keeps a quoted one exactly
  (``""`` inside is one ``"``); ``U&"…"`` names are decoded with :func:`decode_unicode_escapes`;
* DuckDB, SQLite and MySQL / MariaDB look function names up case-insensitively,
  quoted or not (MySQL quotes with backticks).

A call written as ``schema.f(…)`` carries its qualifier; :func:`qualifier` returns it.
Source: PostgreSQL "Lexical Structure" §4.1.1 (identifiers, case folding, ``U&``
and ``UESCAPE``); DuckDB "Keywords and Identifiers" (case insensitivity); MySQL
"Function Name Parsing and Resolution".
"""

from __future__ import annotations

import re

from sqlglot import exp

from reconciler.errors import UnsafeSqlError

# Dialects whose quoted identifiers keep their case (the others fold everything).
_CASE_KEEPING = frozenset({"postgres", "redshift"})
_QUOTES = {'"': '"', "`": "`", "[": "]"}
_HEX_ESCAPE = re.compile(r"\+[0-9A-Fa-f]{6}|[0-9A-Fa-f]{4}")


def decode_unicode_escapes(body: str, escape: str = "\\") -> str:
    """Decode the body of a PostgreSQL ``U&"…"`` name or ``U&'…'`` string.

    ``\\XXXX`` is a code point in four hex digits, ``\\+XXXXXX`` one in six, and a
    doubled escape character is the character itself. ``UESCAPE 'c'`` after the
    literal names another escape character (not a hex digit, ``+``, a quote or
    white space).

    Args:
        body: the text between the quotes, quotes inside still doubled.
        escape: the escape character (``\\`` unless ``UESCAPE`` says otherwise).

    Returns:
        The decoded text.

    Raises:
        UnsafeSqlError: an escape that is not followed by hex digits, an escape
            character PostgreSQL does not accept, or a code point that is not one.
    """
    fix = "write the name plainly, without U& Unicode escapes"
    if len(escape) != 1 or escape in "0123456789abcdefABCDEF+'\" \t\r\n":
        raise UnsafeSqlError(f"UESCAPE {escape!r} is not a valid escape character", fix=fix)
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != escape:
            out.append(char)
            i += 1
            continue
        if body[i + 1 : i + 2] == escape:
            out.append(escape)
            i += 2
            continue
        match = _HEX_ESCAPE.match(body, i + 1)
        if match is None:
            raise UnsafeSqlError(f"invalid Unicode escape in U&{body[:40]!r}", fix=fix)
        code = int(match.group().lstrip("+"), 16)
        if code > 0x10FFFF:
            raise UnsafeSqlError(f"invalid Unicode code point in U&{body[:40]!r}", fix=fix)
        out.append(chr(code))
        i = match.end()
    return "".join(out)


def fold(written: str, dialect: str) -> str:
    """The name the warehouse looks up for an identifier as written.

    Args:
        written: the identifier's text, quotes included (``"Lower"``, ```sleep```, ``NOW``).
        dialect: a sqlglot dialect name.

    Returns:
        The name: ``Lower`` for ``"Lower"`` on PostgreSQL, else the lower-cased
        text without its quotes.
    """
    text = written.strip()
    close = _QUOTES.get(text[:1])
    if close and len(text) >= 2 and text.endswith(close):
        name = text[1:-1].replace(close * 2, close)
        return name if dialect in _CASE_KEEPING else name.lower()
    return text.lower()


def written_name(node: exp.Func, sql: str) -> str | None:
    """The call's name exactly as written in ``sql``, quotes included, else ``None``.

    ``None`` when the node was not parsed from a name (``x::int``, ``CAST(…)``,
    ``a ->> 'k'``, ``[1, 2]``): such syntax is not looked up in a catalogue. An
    :class:`~sqlglot.exp.Anonymous` call without a position gives its name.
    """
    start, end = node.meta.get("start"), node.meta.get("end")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < len(sql):
        text = sql[start : end + 1]
        if text[:1] in _QUOTES or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", text):
            return text
        return None
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        this = node.this
        if isinstance(this, exp.Identifier):
            return f'"{this.this}"' if this.quoted else this.this
        return str(this)
    return None


def qualifier(node: exp.Func, dialect: str) -> tuple[str, ...]:
    """The schema (and catalogue) a call is qualified with, folded; ``()`` when bare.

    ``pg_catalog.lower(x)`` → ``("pg_catalog",)``; DuckDB's ``system.main.lower(x)`` →
    ``("system", "main")``. On DuckDB a column's method call (``name.lower()``) has
    the column as its qualifier.
    """
    parent = node.parent
    if not (isinstance(parent, exp.Dot) and parent.expression is node):
        return ()
    parts: list[str] = []
    left: exp.Expr | None = parent.this
    while left is not None:
        if isinstance(left, exp.Dot):
            parts[:0] = [_folded_part(left.expression, dialect)]
            left = left.this
        else:
            parts[:0] = [
                _folded_part(p, dialect)
                for p in (left.parts if isinstance(left, exp.Column) else [left])
            ]
            left = None
    return tuple(parts)


def _folded_part(node: exp.Expr, dialect: str) -> str:
    if isinstance(node, exp.Identifier):
        text = str(node.this)
        return text if node.quoted and dialect in _CASE_KEEPING else text.lower()
    return node.sql(dialect=dialect).lower()
