"""Counts of entities over compared periods: "how many opportunities were created this
quarter compared to the previous quarter" (pure).

A count of a model's rows (:mod:`reconciler.reading.grammar.counts`) over two or more
periods of one unit joined by a comparison word (``vs``, ``versus``, ``compared
to``, ``against``) is answered with one row per period, **in the order the question
names them**, each holding the count of the rows dated in that period — zero when
none are, so a period is never left out the way an empty group is. Its dates are
the ones :mod:`reconciler.reading.grammar.counts` accepts for a count in a period: the
time dimension of the counted model the question names ("created"), or the model's
one time dimension when it is the declared ``default_time_dimension``.

The result's one column is the count, as for a count in one period: the periods are
the question's own words, and its rows follow them. It is read only alone:

* no breakdown and no ranking (a count per stage in each of two quarters is a
  different table, not read yet);
* no time grain the question names besides the periods' own unit ("monthly … Q1
  2024 vs Q1 2023" asks for months, not quarters);
* no share, change or ordering phrase.

Anything else declines with its reason.
"""

from __future__ import annotations

import dataclasses

import sqlglot
from sqlglot import exp

from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.phrases.words import Reading

_ORDER = "period_order"


def check_compared_count(
    model: str, reading: Reading, broken_down: bool, rank: tuple[bool, int] | None
) -> None:
    """Hold a count of ``model`` over compared periods to the module docstring's rules.

    Args:
        model: the counted model.
        reading: the question's grammar words (its named grains, share, change).
        broken_down: whether the question asks for a breakdown.
        rank: the question's ranking, if any.

    Raises:
        Declined: a breakdown, ranking, named grain, share or change with the
            compared periods.
    """
    what = f"a count of {model} over compared periods"
    if broken_down or rank is not None or reading.who:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{what} is read alone, not broken down or ranked; ask for one period",
        )
    if reading.grains:
        grain = next(iter(reading.grains))
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{what} by {grain}: one count per period, or per {grain}?",
        )
    if reading.share or reading.change or reading.change_grains:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"{what} is not read with a share or a change"
        )


def render_period_counts(lens: Lens, plan: Plan) -> str:
    """The SQL of a count over compared periods: one row per period, in question order.

    Args:
        lens: the lens (its dialect).
        plan: a count plan (:attr:`Plan.measure` a ``count_distinct``) whose
            :attr:`Plan.compared` holds the periods in the order the question names them.

    Returns:
        ``SELECT <count> FROM (SELECT 1 AS period_order, <count in period 1> UNION ALL
        SELECT 2, <count in period 2> …) ORDER BY period_order``: each part is the
        count in that one period, so an empty period counts 0.

    Raises:
        Declined: an ordering phrase, or measures on several models.
    """
    if plan.order or plan.joined or plan.extra:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a count over compared periods is read alone (no ordering, no other measure)",
        )
    dialect = lens.config.dialect
    parts: list[exp.Select] = []
    for i, span in enumerate(plan.compared, start=1):
        one = dataclasses.replace(plan, compared=(), grain=None, period=span)
        part = sqlglot.parse_one(render(lens, one), read=dialect)
        assert isinstance(part, exp.Select)
        part.set("expressions", [exp.alias_(exp.Literal.number(i), _ORDER), *part.selects])
        parts.append(part)
    stacked: exp.Query = parts[0]
    for part in parts[1:]:
        stacked = exp.union(stacked, part, distinct=False)
    query = (
        exp.select(exp.column(plan.measure.name))
        .from_(stacked.subquery("periods"))
        .order_by(exp.column(_ORDER))
    )
    return query.sql(dialect=dialect, pretty=True)
