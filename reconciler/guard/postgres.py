"""What sqlglot parses but writes wrongly for PostgreSQL, rewritten (sqlglot).

Used by :func:`reconciler.guard.transpile` when a lens's SQL runs on PostgreSQL.
"""

from __future__ import annotations

from sqlglot import exp

# Text PostgreSQL's numeric cast accepts (postgresql.org/docs/current/datatype-numeric.html).
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"


def _try_cast(node: exp.TryCast) -> exp.Expr:
    """``TRY_CAST(x AS <number>)`` for PostgreSQL, which has none: ``CASE WHEN x::text ~
    '<number pattern>' THEN CAST(x AS <number>) END``, NULL rather than an error for
    'null' or 'n/a'; to an integer type through ``NUMERIC``, rounding '3.5' to 4 as DuckDB
    does. Other target types stay a plain ``CAST``, as sqlglot writes them."""
    to = node.to
    if not to.is_type(*exp.DataType.NUMERIC_TYPES):
        return exp.Cast(this=node.this, to=to)
    value: exp.Expr = node.this
    if to.is_type(*exp.DataType.INTEGER_TYPES):
        value = exp.cast(value.copy(), exp.DataType.build("numeric"))
    text = exp.cast(node.this.copy(), exp.DataType.build("text"))
    test = exp.RegexpLike(this=text, expression=exp.Literal.string(_NUMBER_TEXT))
    return exp.Case(ifs=[exp.If(this=test, true=exp.Cast(this=value, to=to))])


def fill_gaps(tree: exp.Expr) -> exp.Expr:
    """Rewrite what sqlglot parses but generates wrongly for PostgreSQL (and Redshift).

    sqlglot (30.x) writes ``DateFromParts`` (DuckDB's ``MAKE_DATE``) as
    ``DATE_FROM_PARTS``, which PostgreSQL lacks; its ``MAKE_DATE`` takes integers,
    while ``EXTRACT`` (what ``YEAR()`` becomes) returns NUMERIC, hence the casts. It
    also writes ``TRY_CAST`` as ``CAST``, which fails on the first value that does not
    convert where ``TRY_CAST`` gives NULL: :func:`_try_cast`.
    """

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.TryCast):
            return _try_cast(node)
        if not isinstance(node, exp.DateFromParts):
            return node
        parts = [node.args.get(k) for k in ("year", "month", "day")]
        if any(p is None for p in parts):
            return node
        ints = [
            p if isinstance(p, exp.Literal) and p.is_int else exp.cast(p, exp.DataType.build("int"))
            for p in parts
            if p is not None
        ]
        return exp.Anonymous(this="MAKE_DATE", expressions=ints)

    return tree.transform(rewrite)
