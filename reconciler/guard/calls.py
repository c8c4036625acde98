"""Every function a query calls must be on its dialect's allow-list (pure).

A call is judged by the name the warehouse will look up (:mod:`reconciler.guard.names`):
it passes when a lens names it in ``allow_functions:``, or when it is a built-in on the
dialect's list (:mod:`reconciler.guard.allowlist`) called bare or through the dialect's
system schema (PostgreSQL ``pg_catalog``; DuckDB ``main``, ``pg_catalog``, ``system.main``
…). A call qualified with any other schema is a user-defined function and is refused:
a PostgreSQL or MySQL one always, a DuckDB one unless its name is a built-in (DuckDB
reads ``x.lower()`` as a method call on column ``x``). Syntax written like a call
(``CAST(…)``, ``x::int``, ``EXTRACT(…)``) is not looked up in a catalogue and is not
judged here.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlglot import exp

from reconciler.errors import UnsafeSqlError
from reconciler.guard.allowlist import allowed_functions
from reconciler.guard.names import fold, qualifier, written_name

# Qualifiers under which each dialect keeps its built-in functions.
SYSTEM_SCHEMAS: dict[str, frozenset[tuple[str, ...]]] = {
    "postgres": frozenset({("pg_catalog",)}),
    "duckdb": frozenset(
        {("main",), ("pg_catalog",), ("system", "main"), ("system", "pg_catalog"), ("system",)}
    ),
}
_METHOD_CALLS = frozenset({"duckdb"})


def _fix(shown: str) -> str:
    return (
        f"if {shown} is pure or reads only the warehouse's tables, name it in "
        "`allow_functions:` in lens.yaml; otherwise query the warehouse's tables"
    )


def check_call(
    node: exp.Func, sql: str, dialect: str, *, allowed: Collection[str], what: str
) -> None:
    """Refuse a call the dialect's allow-list (and the lens's) does not name.

    Args:
        node: a function call in the tree parsed from ``sql``.
        sql: the text ``node`` was parsed from (its name is read from there).
        dialect: the sqlglot dialect the text is written in.
        allowed: lowercase names the lens allows (``allow_functions:``).
        what: how the refusal names the SQL (``query``, ``expression 'sum(x)'``).

    Raises:
        UnsafeSqlError: the call is qualified with a schema that holds no built-ins,
            is a quoted name that keeps its case (PostgreSQL ``"Lower"``), or is not
            on the dialect's list; the message names the function and the fix.
    """
    written = written_name(node, sql)
    if written is None:
        return
    name = fold(written, dialect)
    if name in allowed:
        return
    listed = allowed_functions(dialect)
    if listed is None:
        return
    schema = qualifier(node, dialect)
    shown = ".".join((*schema, name))
    if schema and schema not in SYSTEM_SCHEMAS.get(dialect, ()) and dialect not in _METHOD_CALLS:
        raise UnsafeSqlError(
            f"{what} calls {shown}(), a function in schema {'.'.join(schema)!r}, "
            "which is not one of the warehouse's built-in functions",
            fix=_fix(name),
        )
    if name != name.lower():
        raise UnsafeSqlError(
            f'{what} calls "{name}"(): a quoted name keeps its case on {dialect}, so this is '
            f"not the built-in {name.lower()}()",
            fix=f"write {name.lower()} unquoted",
        )
    if name not in listed:
        raise UnsafeSqlError(
            f"{what} calls {shown}(), which is not on the {dialect} allow-list of pure "
            "functions (reconciler/guard/allowed/" + f"{dialect}.txt)",
            fix=_fix(name),
        )
