"""Ordering a column of month names in calendar order (pure).

A dimension may store months as names ("January", "Feb"): ordered as text they run
April, August, December …. When most stored values of the ordered column are month
names, :func:`reconciler.reading.phrases.ordering.order_plan` records them on the plan
(``Plan.months``) and :func:`render` puts the ordering phrase's key in calendar order:

    ORDER BY CASE LOWER(TRIM(<column>)) WHEN 'january' THEN 1 … END [DESC] NULLS LAST,
      <column>, <other keys>

Every full month name is matched, and any other spelling the column stores; a value
that names no month ("Unknown") has none, and comes after every month, ordered by its
text.
The renderers of running totals, compared periods and two-measure shapes read no
such ordering: :func:`unordered` declines there.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.text import MONTHS
from reconciler.lens import Lens
from reconciler.reading import compile as compiler
from reconciler.reading.ir import Declined, DeclineKind, Plan

# The longest name of each month: its full name ("may" has no other).
_FULL_NAMES = {
    number: max((name for name, n in MONTHS.items() if n == number), key=len)
    for number in sorted(set(MONTHS.values()))
}


def render(lens: Lens, plan: Plan) -> str:
    """The SQL of ``plan`` (:func:`reconciler.reading.compile.render`), its first
    ORDER BY key in calendar order when ``plan.months`` holds the column's month names.

    Raises:
        Declined: as :func:`reconciler.reading.compile.render` does.
    """
    sql = compiler.render(lens, plan)
    if not plan.months:
        return sql
    dialect = lens.config.dialect
    query = sqlglot.parse_one(sql, read=dialect)
    order = query.args.get("order")
    if not isinstance(query, exp.Select) or order is None or not order.expressions:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a month-name ordering the query cannot hold (it has no ORDER BY)",
        )
    first = order.expressions[0]
    column = first.this
    first.set("this", calendar_position(column, plan.months))
    first.set("nulls_first", False)
    order.expressions.insert(1, exp.Ordered(this=column.copy(), desc=False))
    return query.sql(dialect=dialect, pretty=True)


def calendar_position(column: exp.Expr, months: tuple[tuple[str, int], ...]) -> exp.Expr:
    """``CASE LOWER(TRIM(column)) WHEN '<name>' THEN <month number> … END`` over the
    twelve full month names and the other spellings ``months`` holds (``(stored value,
    month number)``: "Sept", "jan"), each lower-cased name once."""
    names = {name: number for number, name in _FULL_NAMES.items()}
    names |= {name.strip().lower(): number for name, number in months}
    case = exp.Case(this=exp.Lower(this=exp.Trim(this=column.copy())))
    for name, number in sorted(names.items(), key=lambda item: (item[1], item[0])):
        case = case.when(exp.Literal.string(name), exp.Literal.number(number))
    return case


def unordered(plan: Plan, what: str) -> None:
    """Decline a plan ordered by month names for a renderer that cannot order it.

    Raises:
        Declined: ``plan.months`` is set.
    """
    if plan.months:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"an ordering by month names with {what} is not read"
        )
