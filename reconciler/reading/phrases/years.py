"""A whole year on a model dated by a year number alone: "papers published in 2020" (pure).

Some tables carry the year a row belongs to as a number (``paper.year``) and no date
at all. A question's period (:mod:`reconciler.reading.phrases.periods`) is a half-open
range of dates, which needs a time dimension; on such a model
:func:`year_filter` reads the period as an equality filter on its year dimension
instead, when every one of these holds:

* the period is exactly one calendar year ("in 2020", "in the year 2020"), with no
  grain, no compared periods and no change between periods;
* the question names no time dimension, and no model joined to the measure's model,
  in either direction and at any distance, has one: a date there may be the period's
  ("cars sold in 2023" is dated by the sales, not by the cars' model year);
* exactly one *year dimension* is reachable from the measure's model along a safe
  join path on a model the question names (the measure's model, or one its words
  name: "authors who wrote papers in 2020" dates the papers): a dimension of an
  integer type whose name or a synonym is the word ``year`` or ends with it
  (``paper_year``, ``publication year``).

The year dimension's own word right before the year ("the year 2020") only says
which year. Any other period on such a model (a quarter, a month, "since 2020")
declines: the rows are dated by year only. Otherwise the period stays a period (and
the time-dimension rules decide).
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.words import Reading
from reconciler.reading.resolve.paths import one_path, reachable
from reconciler.reading.today import Day

_INTEGER = re.compile(r"^(?:big|small|tiny)?int(?:eger|\d*)?$", re.IGNORECASE)


def _is_year(col: Column) -> bool:
    """Whether ``col`` is an integer dimension named or called ``… year``."""
    if not _INTEGER.match(col.data_type):
        return False
    names = (col.name.replace("_", " "), *col.synonyms)
    return any(tokenize(n)[-1:] == ("year",) for n in names if tokenize(n))


def _dated_nearby(lens: Lens, base: str) -> bool:
    """Whether a model joined to ``base`` in either direction, at any distance, has a
    time dimension ("cars sold in 2023" is dated by the sales that join to the cars,
    not by the cars' model year)."""
    seen, todo = {base}, [base]
    while todo:
        here = todo.pop()
        if lens.models[here].time_dimensions:
            return True
        near = {j.to for j in lens.models[here].joins} | {
            name for name, m in lens.models.items() if any(j.to == here for j in m.joins)
        }
        todo.extend(sorted(near - seen))
        seen |= near
    return False


def _one_year(period: tuple[Day, Day]) -> int | None:
    """The year of ``period`` when it is exactly one calendar year, else ``None`` (also
    for a period counted from today)."""
    start, end = period
    if not (isinstance(start, date) and isinstance(end, date)):
        return None
    whole = start.month == start.day == 1 and end == date(start.year + 1, 1, 1)
    return start.year if whole and start != date.min else None


def year_of(
    model: Model, period: tuple[Day, Day]
) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """``(year dimension, ((operator, year), ...))`` of ``period`` on ``model``'s rows
    when they carry one year dimension and the period is one whole year ("concerts in
    2014": ``=``) or runs from or to a year's start ("museums opened before 2009":
    ``<``, "after 2011": ``>=`` 2012); else ``None``.

    Raises:
        Declined: a period that starts or ends inside a year, on a model dated by its
            year alone.
    """
    years = [c.name for c in model.dimensions if _is_year(c)]
    if len(years) != 1:
        return None
    year = _one_year(period)
    if year is not None:
        return years[0], (("=", str(year)),)
    start, stop = period
    ends = [(d, op) for d, op in ((start, ">="), (stop, "<")) if d not in (date.min, date.max)]
    if ends and all(isinstance(d, date) and d.month == d.day == 1 for d, _ in ends):
        return years[0], tuple((op, str(d.year)) for d, op in ends if isinstance(d, date))
    raise Declined(
        DeclineKind.UNSUPPORTED_CONSTRUCT,
        f"{model.name} are dated by year only ({model.name}.{years[0]}): ask for a whole "
        "year, not a part of one",
    )


def year_filter(
    lens: Lens,
    found: Retrieval,
    reading: Reading,
    base: str,
    when: tuple[str | None, tuple[Day, Day] | None, bool, bool],
) -> tuple[tuple[str, str, str], set[Mention]] | None:
    """The ``(model, year dimension, year)`` filter a period reads as, and the mentions
    of that dimension that only qualify the year ("the year 2020"); else ``None``.

    Args:
        lens: the lens.
        found: the question's retrieval.
        reading: the question's grammar reading (the model nouns it names).
        base: the measure's model.
        when: ``(grain, period, compared, change)``: the question's time grain, its
            period, whether it compares periods and whether it asks for a change.

    Raises:
        Declined: a period shorter than a year on a model dated by year only.
    """
    grain, period, compared, change = when
    if period is None or grain or compared or change:
        return None
    if _dated_nearby(lens, base) or any(m.kind == "time_dimension" for m in found.mentions):
        return None
    named = {base, *reading.model_nouns}
    years = [
        (model, col.name)
        for model in sorted(named)
        for col in lens.models[model].dimensions
        if _is_year(col)
    ]
    places = [p for p in years if reachable(lens, base, [_Place(p[0])])]
    if len(places) != 1:
        return None
    model, dim = places[0]
    year = _one_year(period)
    if year is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{model} are dated by year only ({model}.{dim}): ask for a whole year, "
            "not a part of one",
        )
    one_path(lens, base, model)
    qualifying = {
        m
        for m in found.mentions
        if found.tokens[m.end : m.end + 1] == (str(year),)
        and any((t.model, t.name) == places[0] for t in m.targets)
    }
    return (model, dim, str(year)), qualifying


class _Place(NamedTuple):
    """A model as :func:`reconciler.reading.resolve.paths.reachable` takes it."""

    model: str
