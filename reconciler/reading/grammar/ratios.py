"""Ratios and differences of two measures in the ``fast`` tier (pure).

Spellings read (A and B each a measure :mod:`reconciler.reading.grammar.measures` reads:
a metric, or an aggregation word and a fact):

==================================  ==================================================
``ratio of A to B``                 ``CAST(A AS DOUBLE) / NULLIF(B, 0)``, ``<a>_per_<b>``
``A per B``, ``A divided by B``     the same (``per`` only when a measure follows it:
                                    ``net revenue per region`` stays a breakdown)
``A as a share of B``               the same, ``<a>_share_of_<b>`` (``fraction``,
                                    ``proportion`` alike); ``percentage`` / ``percent``
                                    times 100, ``<a>_percentage_of_<b>``
``difference between A and B``,     ``A - B``, ``<a>_minus_<b>``
``A minus B``
==================================  ==================================================

The spelling's words are taken out and the rest is read as the two-measure list
``A and B …`` by :func:`reconciler.generators.fast.parse`, so everything that holds
for two measures side by side holds here: every other word must be accounted for,
a period, breakdown, filter or comparison applies to both, both measures on one
model or each aggregated on its own model and joined on the keys (no fan-out; the
join-grain gate applies), an ambiguous measure declines. The plan must hold exactly
the two measures; rankings, shares of total and changes between periods are not
combined with a ratio (they decline). The result keeps the keys and one column.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import DIFFERENCE, Declined, DeclineKind, Plan, TwoMeasures
from reconciler.reading.phrases.months import unordered


def render_two_measures(lens: Lens, plan: Plan, spelling: TwoMeasures) -> str:
    """The SQL of the ratio or difference of ``plan``'s two measures.

    Args:
        lens: the lens (its dialect).
        plan: the plan :func:`reconciler.generators.fast.parse` made of
            ``spelling.listed``: exactly two measures, side by side or joined.
        spelling: what :func:`~reconciler.reading.phrases.twomeasures.find_two_measures` found.

    Returns:
        ``SELECT <keys>, <a> <op> <b> AS <a>_<word>_<b> FROM (<the two measures>)``,
        ordered like a plain breakdown: by time bucket, else by the value
        descending then the keys (an ordering phrase's key first).

    Raises:
        Declined: the plan holds not exactly two distinct measures, or a ranking,
            share or change the ratio cannot carry.
    """
    measures = [plan.measure, *plan.extra, *(m for p in plan.joined for m in (p.measure, *p.extra))]
    if len(measures) != 2 or measures[0].name == measures[1].name:
        names = ", ".join(m.name for m in measures)
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a {spelling.kind} needs exactly two different measures (read: {names})",
        )
    if plan.rank or plan.share or plan.change:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a {spelling.kind} of two measures is not read with a ranking, share or change",
        )
    a, b = (m.name for m in measures)
    inner = sqlglot.parse_one(render(lens, plan), read=lens.config.dialect)
    assert isinstance(inner, exp.Select)
    inner.set("order", None)
    keys = [s.alias_or_name for s in inner.selects if s.alias_or_name not in (a, b)]
    value: exp.Expr
    if spelling.kind == DIFFERENCE:
        value = exp.Sub(this=exp.column(a), expression=exp.column(b))
    else:
        value = exp.Div(
            this=exp.cast(exp.column(a), "double"),
            expression=exp.Nullif(this=exp.column(b), expression=exp.Literal.number(0)),
        )
        if spelling.percent:
            value = exp.Mul(this=exp.Literal.number(100), expression=value)
    name = f"{a}_{spelling.word}_{b}"
    query = exp.select(*(exp.column(k) for k in keys), exp.alias_(value, name)).from_(
        inner.subquery("measures")
    )
    order: list[exp.Ordered] = []
    ordered_keys = list(keys)
    if plan.order is not None:
        unordered(plan, f"a {spelling.kind}")
        if plan.order[0] not in keys:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"ordered by {plan.order[0]!r}, which the {spelling.kind} does not show",
            )
        order.append(exp.Ordered(this=exp.column(plan.order[0]), desc=plan.order[1]))
        ordered_keys.remove(plan.order[0])
    elif plan.grain is None and keys:
        order.append(exp.Ordered(this=exp.column(name), desc=True, nulls_first=False))
    order.extend(exp.Ordered(this=exp.column(k), desc=False) for k in ordered_keys)
    if order:
        query = query.order_by(*order)
    return query.sql(dialect=lens.config.dialect, pretty=True)
