"""A period on listed rows' own date: "the loans in March 2024" (pure).

A listing (:mod:`reconciler.reading.grammar.listing`) bounded by one period reads it on
the rows' own date: the model's default time dimension, or, for rows dated by a year
number alone, that year. Rows that other dated rows join to may be dated by those
events instead ("customers in March 2024": signed up then, or ordered then?), so they
decline, as does a model with two dates and no default.
"""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, comparison
from reconciler.reading.phrases.periods import Period
from reconciler.reading.phrases.years import year_of
from reconciler.reading.today import day_sql


def own_period(lens: Lens, model: Model, periods: list[Period]) -> list[exp.Expr]:
    """The conditions of the question's one period on the listed rows' own date ("the
    orders in March 2024"): a half-open range on the model's time dimension, or, on
    rows dated by a year number alone, that year
    (:func:`~reconciler.reading.phrases.years.year_of`). Rows that other dated rows
    join to ("customers", which orders join to) may be dated by those: that declines.

    Raises:
        Declined: dated rows join to the model, several time dimensions and no default
            (which date?), or no date at all.
    """
    dialect = lens.config.dialect
    if not periods:
        return []
    span = periods[0].span
    dated = sorted(
        name
        for name, other in lens.models.items()
        if other.time_dimensions and any(j.to == model.name for j in other.joins)
    )
    if dated:  # "customers in March 2024": signed up then, or ordered then?
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{model.name} in a period: by their own date, or by their {', '.join(dated)}? "
            f"Ask by what the rows did (e.g. '{model.name} with {dated[0]} in …')",
        )
    time = model.time_dimension()
    if len(model.time_dimensions) > 1 and model.default_time_dimension is None:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"which date of {model.name!r} does the period bound?"
        )
    if time is not None:
        column = sqlglot.parse_one(time.sql, read=dialect)
        bounds = ((span[0], exp.GTE), (span[1], exp.LT))
        return [
            op(this=column.copy(), expression=day_sql(day))
            for day, op in bounds
            if day not in (date.min, date.max)
        ]
    year = year_of(model, span)
    if year is None:
        raise Declined(
            DeclineKind.MISSING_IN_LENS, f"{model.name!r} has no date for the period to bound"
        )
    name, ops = year
    sql = next(c.sql for c in model.dimensions if c.name == name)
    return [comparison(sqlglot.parse_one(sql, read=dialect), op, number) for op, number in ops]
