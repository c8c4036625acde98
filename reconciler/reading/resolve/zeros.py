"""Groups with no rows, in a ranking toward the low end (pure).

A breakdown by a dimension of another model than the measure's (``members by plan``,
``rentals by station``) groups the measure's rows: a plan no member holds, a station
no rental started at, has no row to group, so it is not in the result. For a plain
breakdown that is the reading (the groups that have rows). A ranking toward the low
end — ``bottom 3 stations by rentals``, ``which plan has the fewest members`` — of a
count or a sum is not: such a group's value is 0, so it ranks first.

Such a ranking is answered from the dimension's own model (:func:`render_from_groups`):
every group it holds (its distinct values; for a breakdown that also groups by the
model's key, each key) LEFT JOIN the grouped measure, a count or a sum read as 0
where the group has no rows:

    SELECT g.<dim>, COALESCE(m.<measure>, 0) AS <measure>
    FROM (SELECT DISTINCT <dim>, <key> FROM <dimension table>) AS g
    LEFT JOIN (<the grouped query>) AS m ON g.<dim> IS NOT DISTINCT FROM m.<dim> …
    ORDER BY <measure> ASC, <dim> … LIMIT n

A shape this does not cover — a filter, flag, comparison or period on the dimension's
own model (which of its rows are groups?), two breakdowns, a time bucket, a share, a
change, several models' measures, an ordering phrase that sorts otherwise — declines
(:func:`check_empty_groups`). An average, a minimum or a maximum over no rows has no
value, so it does not rank first, and is left as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan

Grouped = Callable[[Plan], tuple[exp.Select, list[tuple[exp.Expr, str]], exp.Expr]]
Tied = Callable[[Plan, exp.Select, exp.Expr, list[str]], str]


def empty_groups(lens: Lens, plan: Plan) -> tuple[str, str] | None:
    """``(model, dimension)`` of the breakdown whose groups with no rows would rank
    first in ``plan`` (a ranking from the lowest count or sum by another model's
    dimension), else ``None``."""
    if plan.rank is None or plan.rank[0]:
        return None
    others = [(m, d) for m, d in plan.breakdowns if m != plan.base]
    zero = [m for m in (plan.measure, *plan.extra) if _zero_when_empty(lens, m)]
    return others[0] if others and zero else None


def check_empty_groups(plan: Plan, lens: Lens) -> None:
    """Decline a ranking from the lowest whose groups with no rows the query cannot
    show (module docstring). Its ``joined`` parts are checked too.

    Raises:
        Declined: naming the breakdown model, the measure and what stops the answer.
    """
    for part in (plan, *plan.joined):
        place = empty_groups(lens, part)
        if place is None:
            continue
        why = "several models' measures" if plan.joined else _unsupported(lens, part, place[0])
        if why:
            model, dim = place
            raise Declined(
                DeclineKind.UNSAFE_RESULT,
                f"a ranking from the lowest {part.measure.name} by {model}.{dim}: a {model} "
                f"row with no {part.base} rows would rank first (0), and with {why} the "
                f"query cannot show it",
            )


def _unsupported(lens: Lens, plan: Plan, model: str) -> str:
    """What in ``plan`` :func:`render_from_groups` does not cover, or ``""``."""
    on_model = [
        *(f"{m}.{d}" for m, d, _ in (*plan.filters, *plan.excluded) if m == model),
        *(f"{m}.{d}" for m, d in plan.flags if m == model),
        *(f"{m}.{f}" for m, f, _, _ in plan.bounds if m == model),
        *(f"{m}.{t}" for m, t in ((plan.time,) if plan.time else ()) if m == model),
    ]
    if on_model:
        return f"a condition on {on_model[0]}"
    if len(plan.breakdowns) > 1:
        return "two breakdowns"
    if plan.grain or plan.compared or plan.change:
        return "a time bucket"
    if plan.share:
        return f"a {plan.share}"
    if any(m != model for m, _ in plan.hidden_keys):
        return "a key of another model"
    if plan.order is not None and plan.order != (plan.measure.name, False):
        return "an ordering phrase"
    dim = next(c for c in lens.models[model].columns() if c.name == plan.breakdowns[0][1])
    if any(
        c.table for c in sqlglot.parse_one(dim.sql, read=lens.config.dialect).find_all(exp.Column)
    ):
        return f"{model}.{dim.name} reading another table"
    return ""


def render_from_groups(lens: Lens, plan: Plan, grouped: Grouped, tied: Tied) -> str:
    """The SQL of ``plan`` (a ranking :func:`empty_groups` names, which
    :func:`check_empty_groups` let through) from every group of the dimension's model.

    Args:
        lens: the lens.
        plan: the plan (its hidden keys, on the dimension's model, are groups too).
        grouped: the compiler's grouped SELECT of a plan (no ORDER BY), its keys and
            first measure.
        tied: the compiler's cut to the rows ranked within the first n (``with ties``).

    Raises:
        Declined: a shape :func:`check_empty_groups` declines.
    """
    place = empty_groups(lens, plan)
    assert place is not None
    check_empty_groups(plan, lens)
    model = lens.models[place[0]]
    dialect = lens.config.dialect
    keys = [place[1], *(c for _, c in plan.hidden_keys)]
    inner_plan = dataclasses.replace(
        plan,
        breakdowns=tuple((model.name, k) for k in keys),
        hidden_keys=(),
        rank=None,
        order=None,
        ties=False,
    )
    inner, _, _ = grouped(inner_plan)
    columns = {c.name: c.sql for c in model.columns()}  # a key no dimension reads: by name
    universe = (
        exp.select(
            *(exp.alias_(sqlglot.parse_one(columns.get(k, k), read=dialect), k) for k in keys)
        )
        .distinct()
        .from_(exp.to_table(model.table, dialect=dialect))
    )
    on = exp.and_(
        *(exp.NullSafeEQ(this=exp.column(k, "g"), expression=exp.column(k, "m")) for k in keys)
    )
    measures = []
    for m in (plan.measure, *plan.extra):
        value: exp.Expr = exp.column(m.name, "m")
        if _zero_when_empty(lens, m):
            value = exp.Coalesce(this=value, expressions=[exp.Literal.number(0)])
        measures.append(exp.alias_(value, m.name))
    query = (
        exp.select(exp.alias_(exp.column(keys[0], "g"), keys[0]), *measures)
        .from_(universe.subquery("g"))
        .join(inner.subquery("m"), on=on, join_type="left")
    )
    first = measures[0].this
    assert plan.rank is not None
    if plan.ties:
        return tied(plan, query, first, [keys[0]])
    query = query.order_by(
        exp.Ordered(this=first.copy(), desc=False),
        *(exp.Ordered(this=exp.column(k, "g"), desc=False) for k in keys),
    ).limit(plan.rank[1])
    return query.sql(dialect=dialect, pretty=True)


def _zero_when_empty(lens: Lens, measure: Measure) -> bool:
    """Whether ``measure`` is a count or a sum (0 over no rows, once NULL is read as 0)."""
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    while isinstance(tree, exp.Neg | exp.Paren):
        tree = tree.this
    return isinstance(tree, exp.Count | exp.Sum)
