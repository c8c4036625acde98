"""A question's filter on a column a metric's own filters constrain (pure).

A metric may carry filters (``net_revenue``: ``SUM(amount)`` where ``payment_status =
'settled'``). A question that filters the same column ("net revenue from failed
payments") reads two ways: the metric's figure over the rows the question names
(which the metric's filter contradicts: ``settled AND failed`` keeps nothing), or a
figure the metric is not (the amount of the failed payments). Neither is safe, so
:func:`filter_clash` names the metric's filter and the question's, and the fast tier
declines.

A question's filter that *is* the metric's own predicate ("net revenue from settled
payments": the same column expression, ``=``, the same value; a yes/no flag the
metric already requires) only restates it and is accepted: ANDing it again changes
nothing. Columns are compared after each side is resolved to its model's table
columns (a dimension's ``expr`` expanded, a qualifier mapped to its model), so a
dimension ``plan`` over ``plan_name`` and a filter on ``plan_name`` meet.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from reconciler.assembly import memo as lensmemo
from reconciler.assembly.lexicon import model_named
from reconciler.lens import Lens
from reconciler.reading.ir import Measure, Plan

__all__ = ["filter_clash"]

_RawColumn = tuple[str, str]  # (model, table column)


def filter_clash(lens: Lens, plan: Plan) -> str | None:
    """Why a filter of ``plan`` meets a filter of one of its metrics, or ``None``.

    Every part of the plan (its ``joined`` plans too) is checked: each value filter,
    yes/no flag and fact comparison of the part against each filter of each of its
    measures. A filter reading none of the columns a measure's filter reads, or one
    that is that filter's own predicate (see the module docstring), is no clash.

    Returns:
        ``"<metric> counts only <filter>; the question's <its filter> contradicts or
        narrows it: …"``, or ``None``.
    """
    for part in (plan, *plan.joined):
        asked = _asked(lens, part)
        for measure in (part.measure, *part.extra):
            for written in measure.filters:
                for condition in _conjuncts(lens, written):
                    clash = _clash(lens, measure, written, condition, asked)
                    if clash is not None:
                        return clash
    return None


@dataclass(frozen=True)
class _Asked:
    """One filter the question put on a plan part."""

    model: str
    column: exp.Expr  # the column's SQL over ``model``'s table, parsed
    said: str  # how the decline names it
    value: str | None = None  # a value filter's value
    flag: bool = False  # a yes/no flag (the column is TRUE)


def _asked(lens: Lens, plan: Plan) -> list[_Asked]:
    """Each value filter, yes/no flag and fact comparison of ``plan``."""
    out: list[_Asked] = []
    for model, dim, value in plan.filters:
        out.append(_Asked(model, _column_tree(lens, model, dim), f"{dim} {value!r}", value))
    for model, dim, value in plan.excluded:  # never the metric's own predicate
        out.append(_Asked(model, _column_tree(lens, model, dim), f"{dim} not {value!r}"))
    for model, dim in plan.flags:
        out.append(_Asked(model, _column_tree(lens, model, dim), f"{dim} (yes)", flag=True))
    for model, fact, op, number in plan.bounds:
        out.append(_Asked(model, _column_tree(lens, model, fact), f"{fact} {op} {number}"))
    return out


def _clash(
    lens: Lens, measure: Measure, written: str, condition: exp.Expr, asked: list[_Asked]
) -> str | None:
    """The decline when one of ``asked`` reads a column ``condition`` (one conjunct of
    the filter ``written`` of ``measure``) constrains and is not ``condition`` itself."""
    constrained = _raw_columns(lens, measure.model, condition, expand=True)
    for one in asked:
        read = _raw_columns(lens, one.model, one.column, expand=False)
        if not read & constrained or _restates(lens, measure.model, condition, one):
            continue
        name = measure.metric or measure.name
        return (
            f"{name} counts only {written}; the question's {one.said} contradicts or narrows "
            f"it: ask without it, or use a metric without that filter"
        )
    return None


def _restates(lens: Lens, home: str, condition: exp.Expr, one: _Asked) -> bool:
    """Whether ``one`` (a value filter or a flag) is ``condition`` (over ``home``) itself:
    the same column expression, ``=``, the same value; a flag, the column alone or
    ``= TRUE``."""
    if one.value is None and not one.flag:
        return False
    wanted = _canonical(lens, one.model, one.column, expand=False)
    if one.flag and _canonical(lens, home, condition, expand=True) == wanted:
        return True  # a flag the metric requires, written bare
    if not isinstance(condition, exp.EQ):
        return False
    left, right = condition.this, condition.expression
    for side, other in ((left, right), (right, left)):
        if _canonical(lens, home, side, expand=True) == wanted and _same_value(
            other, "TRUE" if one.flag else one.value
        ):
            return True
    return False


def _same_value(literal: exp.Expr, value: str | None) -> bool:
    """Whether ``literal`` (a boolean or a literal; anything else is not) is ``value``."""
    if isinstance(literal, exp.Boolean):
        return value == ("TRUE" if literal.this else "FALSE")
    if not isinstance(literal, exp.Literal) or value is None:
        return False
    text = str(literal.this)
    if literal.is_string:
        return text == value
    try:
        return float(text) == float(value)
    except ValueError:
        return False


def _column_tree(lens: Lens, model: str, name: str) -> exp.Expr:
    """The SQL of ``model``'s column ``name`` (its ``expr``, else its name), parsed."""
    col = next(c for c in lens.models[model].columns() if c.name == name)
    return _parsed(lens, col.sql)


def _parsed(lens: Lens, sql: str) -> exp.Expr:
    return lensmemo.memoized(
        lens,
        ("metricfilters.parse", sql),
        lambda: sqlglot.parse_one(sql, read=lens.config.dialect),
    )


def _conjuncts(lens: Lens, written: str) -> list[exp.Expr]:
    tree = _parsed(lens, written)
    while isinstance(tree, exp.Paren):
        tree = tree.this
    return list(tree.flatten()) if isinstance(tree, exp.And) else [tree]


def _canonical(lens: Lens, model: str, tree: exp.Expr, *, expand: bool) -> str:
    """``tree``'s SQL with every column written ``<model>.<table column>``: a bare
    column is ``model``'s (its declared ``expr`` expanded once when ``expand``, as
    the compiler does for a metric's SQL), a qualified one its qualifier's model's."""
    own = {c.name: c for c in lens.models[model].columns()}

    def fix(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return node
        if node.table:
            target = model_named(lens, node.table) or node.table
            return exp.column(node.name, table=target)
        col = own.get(node.name)
        if expand and col is not None and col.expr and col.expr != col.name:
            inner = _canonical(lens, model, _parsed(lens, col.expr), expand=False)
            return exp.Paren(this=sqlglot.parse_one(inner, read=lens.config.dialect))
        return exp.column(node.name, table=model)

    return tree.copy().transform(fix).sql(dialect=lens.config.dialect)


def _raw_columns(lens: Lens, model: str, tree: exp.Expr, *, expand: bool) -> set[_RawColumn]:
    """The ``(model, table column)`` pairs ``tree`` reads (see :func:`_canonical`)."""
    written = _canonical(lens, model, tree, expand=expand)
    canonical = sqlglot.parse_one(written, read=lens.config.dialect)
    return {(c.table.lower(), c.name.lower()) for c in canonical.find_all(exp.Column) if c.table}
