"""Days counted from the current date, for ``as_of: today`` lenses (pure).

A lens that declares ``as_of: today`` reads relative periods ("last quarter", "in
the past 30 days") against the warehouse's own clock: each bound of such a period
is a :class:`Today`, rendered as SQL on ``CURRENT_DATE`` (transpiled by sqlglot
for the lens's dialect), so the answer follows the day it runs. The same bound
resolves to a calendar date at a pinned ``as_of`` (:meth:`Today.at`), so one
spelling means one filter either way.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta

from sqlglot import exp

TRUNCATIONS = ("week", "month", "quarter", "year")
STEPS = ("day", "week", "month", "quarter", "year")
_MONTHS = {"month": 1, "quarter": 3, "year": 12}


@dataclass(frozen=True)
class Today:
    """``CURRENT_DATE`` cut to the first day of its ``unit``, then moved ``n`` ``step``s.

    Attributes:
        unit: ``week`` (Monday, ISO), ``month``, ``quarter``, ``year``, or ``None``
            for the current day itself.
        n: how many steps to move (negative: earlier).
        step: ``day``, ``week``, ``month``, ``quarter`` or ``year``.
    """

    unit: str | None = None
    n: int = 0
    step: str = "day"

    def at(self, day: date) -> date:
        """The same day counted from ``day`` instead of the current date (a month
        step keeps the day of the month, or the month's last day when it has fewer,
        as PostgreSQL's and DuckDB's ``date - INTERVAL 'n months'`` do)."""
        start = _truncated(day, self.unit)
        if self.step in ("day", "week"):
            return start + timedelta(days=self.n * (7 if self.step == "week" else 1))
        index = start.year * 12 + start.month - 1 + _MONTHS[self.step] * self.n
        year, month = index // 12, index % 12 + 1
        return date(year, month, min(start.day, calendar.monthrange(year, month)[1]))

    def sql(self) -> exp.Expr:
        """The day as a SQL ``DATE`` on ``CURRENT_DATE`` (sqlglot tree, any dialect)."""
        tree: exp.Expr = exp.CurrentDate()
        if self.unit is not None:
            unit = exp.Literal.string(self.unit.upper())
            tree = exp.func("DATE_TRUNC", unit, tree, dialect="postgres")
        if self.n:
            step = "month" if self.step == "quarter" else self.step
            amount = exp.Literal.number(abs(self.n) * (3 if self.step == "quarter" else 1))
            move = exp.DateAdd if self.n > 0 else exp.DateSub
            tree = move(this=tree, expression=amount, unit=exp.Var(this=step.upper()))
        return exp.cast(tree, "date")


Day = date | Today
"""A period bound: a calendar date, or a day counted from the current date."""


def day_sql(day: Day) -> exp.Expr:
    """``day`` as a SQL date: ``CAST('2024-03-01' AS DATE)`` or a :class:`Today`'s SQL."""
    if isinstance(day, Today):
        return day.sql()
    return exp.cast(exp.Literal.string(day.isoformat()), "date")


def _truncated(day: date, unit: str | None) -> date:
    if unit is None:
        return day
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "year":
        return date(day.year, 1, 1)
    if unit == "quarter":
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    return date(day.year, day.month, 1)
