"""Running totals of the ``fast`` tier: "daily cumulative expenses in 2023 Dec" (pure).

The word ``cumulative`` before a measure asks, for each time bucket, the measure
summed over that bucket and every earlier one the question keeps (the period's
filter applies first, so a running total "in 2023 Dec" starts on Dec 1). It is read
only for:

* one measure that adds up (a ``SUM`` or a row ``COUNT``): a running average or
  minimum is not a total;
* a time grain ("daily", "by month"), with no breakdown: a running total per region
  is a different question (one running total each), not read yet;
* no ranking, share, change, comparison of periods or ordering phrase.

The result is ``<bucket>, cumulative_<measure>`` ordered by the bucket (latest first
under ``series_order: newest_first``). Anything else with ``cumulative`` declines.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import Declined, DeclineKind, Plan

_CUMULATIVE = re.compile(r"\bcumulative\b", re.IGNORECASE)


def split_cumulative(question: str, found: Retrieval) -> tuple[str, bool]:
    """``(question without the word "cumulative", whether it was there)``.

    A ``cumulative`` inside a lens phrase (a metric called "cumulative revenue") is
    the lens's own and stays: the question is then read as written.
    """
    if any("cumulative" in found.words[m.start : m.end] for m in found.mentions):
        return question, False
    rest, n = _CUMULATIVE.subn(" ", question)
    if n > 1:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "'cumulative' is said more than once")
    return (" ".join(rest.split()), True) if n else (question, False)


def render_cumulative(lens: Lens, plan: Plan) -> str:
    """The SQL of the running total of ``plan``'s measure over its time buckets.

    Args:
        lens: the lens (its dialect, its ``series_order``).
        plan: the plan :func:`reconciler.generators.fast.parse` made of the
            question without ``cumulative``.

    Returns:
        ``SELECT <bucket>, SUM(<measure>) OVER (ORDER BY <bucket> ROWS BETWEEN
        UNBOUNDED PRECEDING AND CURRENT ROW) AS cumulative_<measure> FROM (<series>)``.

    Raises:
        Declined: the plan is not one summed or counted measure over a time grain
            alone (module docstring).
    """
    if plan.grain is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a cumulative total needs a time grain to run over (daily, by month …)",
        )
    if plan.breakdowns or plan.extra or plan.joined:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a cumulative total per breakdown, or of several measures, is not read",
        )
    if plan.rank or plan.share or plan.change or plan.compared or plan.order:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a cumulative total is not read with a ranking, share, change, comparison or ordering",
        )
    tree = sqlglot.parse_one(plan.measure.expression, read=lens.config.dialect)
    adds = isinstance(tree, exp.Sum) or (
        isinstance(tree, exp.Count) and not isinstance(tree.this, exp.Distinct)
    )
    if not adds:
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"a cumulative {plan.measure.name} ({tree.sql()}): only a sum or a count adds up "
            "to a running total",
        )
    inner = sqlglot.parse_one(render(lens, plan), read=lens.config.dialect)
    assert isinstance(inner, exp.Select)
    inner.set("order", None)
    bucket, value = plan.grain, plan.measure.name
    window = exp.Window(
        this=exp.Sum(this=exp.column(value)),
        order=exp.Order(expressions=[exp.Ordered(this=exp.column(bucket))]),
        spec=exp.WindowSpec(
            kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW"
        ),
    )
    newest = lens.config.series_order == "newest_first"
    query = (
        exp.select(exp.column(bucket), exp.alias_(window, f"cumulative_{value}"))
        .from_(inner.subquery("series"))
        .order_by(exp.Ordered(this=exp.column(bucket), desc=newest))
    )
    return query.sql(dialect=lens.config.dialect, pretty=True)
