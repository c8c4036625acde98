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

A bare ``per`` before another model's noun ("drivers per depot", "salary per depot",
B being that model's count) reads two ways: one row per depot (a breakdown) or the
drivers divided by the depots (an average over all of them). It declines, naming
both; ``per`` before the measured model's own noun ("net revenue per order") is the
ratio. An average, minimum or maximum "per" a count ("average price per shipment") is
a value per row already: it declines too.

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

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import DIFFERENCE, Declined, DeclineKind, Measure, Plan, TwoMeasures
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
    if spelling.per:
        _check_per(lens, spelling, measures[0], measures[1])
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


_NOT_ADDITIVE = (exp.Avg, exp.Min, exp.Max, exp.Median, exp.Quantile)


def _check_per(lens: Lens, spelling: TwoMeasures, a: Measure, b: Measure) -> None:
    """Decline "A per B" where A is an average, minimum or maximum ("average price per
    shipment": already a value per row; divided by a count it means nothing), and "A
    per <noun of another model>" (a breakdown or a ratio) — module docstring."""
    top = sqlglot.parse_one(a.expression, read=lens.config.dialect)
    if isinstance(top, _NOT_ADDITIVE):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"'{spelling.sides[1]} per {spelling.sides[2]}': {a.name} is "
            f"{type(top).__name__.upper()}(…), a value per row already; it is not divided "
            f"by {b.name} (ask for '{spelling.sides[1]}' alone, or by a breakdown)",
        )
    words = tuple(t for t in tokenize(spelling.sides[2]) if t not in _ARTICLES)
    named = model_nouns(lens).get(words)
    if named is None or named != b.model or named == a.model:
        return
    raise Declined(
        DeclineKind.AMBIGUOUS_READING,
        f"'{spelling.sides[1]} per {spelling.sides[2]}' reads two ways: one row per "
        f"{spelling.sides[2]} (say 'by {spelling.sides[2]}' or 'for each "
        f"{spelling.sides[2]}'), or {spelling.sides[1]} divided by the number of "
        f"{named} (say 'the ratio of {spelling.sides[1]} to {named}')",
    )


_ARTICLES = frozenset({"the", "a", "an", "each", "one", "every"})
