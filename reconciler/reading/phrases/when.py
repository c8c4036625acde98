"""When a fast-tier question is about: its time grain, its period, the periods it
compares and the change it asks for (pure functions over a :class:`Reading`).

Rules: one grain at most; a change ("month over month change") needs one step of
month, quarter or year and is read alone; two or more periods of one unit with a
comparison word become one bucket each, in the question's order; a bounded span
("since 2023") may be broken down by any grain; a period counted from today is never
compared or changed. Each rule that cannot be met raises
:class:`~reconciler.reading.compile.Declined` with the reason.
"""

from __future__ import annotations

from datetime import date

from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.periods import RANGE
from reconciler.reading.phrases.words import Reading
from reconciler.reading.today import Day

__all__ = ["change_of", "periods_of", "when"]

GRAIN_ORDER = ("day", "week", "month", "quarter", "year")


def when(
    reading: Reading, measures: int
) -> tuple[
    str | None,
    tuple[Day, Day] | None,
    tuple[tuple[date, date], ...],
    tuple[str, str] | None,
]:
    """``(grain, period, compared periods, change)`` of a question with ``measures`` measures."""
    if len(reading.grains) > 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"several time grains ({', '.join(sorted(reading.grains))})",
        )
    change = change_of(reading, next(iter(reading.grains), None))
    grain, period, compared = periods_of(
        reading, change[0] if change else next(iter(reading.grains), None)
    )
    if change and period and period[0] == date.min:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a change between periods needs a first period, not 'before …'",
        )
    if change and period and not isinstance(period[0], date):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a change between periods counted from today is not read",
        )
    if change and (compared or reading.share or measures > 1 or reading.directions):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a change between periods is read alone (not with a comparison, share, "
            "ranking or several metrics)",
        )
    return grain, period, compared, change


def change_of(reading: Reading, grain: str | None) -> tuple[str, str] | None:
    """``(grain, "change" | "percent")`` of "month over month change", "yoy percent
    change" …, else ``None``; only month, quarter and year steps (a week has no one
    calendar)."""
    if not reading.change_grains:
        if reading.change:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a change needs its step: month over month, year over year …",
            )
        return None
    steps = sorted(reading.change_grains)
    if len(steps) > 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"several change steps ({', '.join(steps)})"
        )
    step = steps[0]
    if step not in ("month", "quarter", "year"):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a {step}-over-{step} change is not read (only month, quarter, year)",
        )
    if grain not in (None, step):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"a {step}-over-{step} change shown by {grain}"
        )
    kinds = sorted(set(reading.change))
    if len(kinds) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"say what to show {step} over {step}: 'change' (a difference) or 'percent change'",
        )
    return step, kinds[0]


def periods_of(
    reading: Reading, grain: str | None
) -> tuple[str | None, tuple[Day, Day] | None, tuple[tuple[date, date], ...]]:
    """``(grain, period, compared periods)`` from the period phrases.

    One period filters; two or more of one unit with a comparison word ("2024 vs
    2023", "compare … in Q1 2024 and Q1 2023") become one bucket per period (the
    unit, or a finer grain the question names) over just those periods.
    """
    periods = reading.periods
    if periods and reading.all_time:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "the question names both a period and the whole time span",
        )
    if reading.comparison:
        if len(periods) < 2:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a comparison needs two periods to compare (e.g. '2024 vs 2023')",
            )
        units = sorted({p.unit for p in periods})
        if RANGE in units:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a comparison of periods with a bound (since, before …) is not read",
            )
        if len(units) > 1:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"the compared periods are of different units ({', '.join(units)})",
            )
        if grain and GRAIN_ORDER.index(grain) > GRAIN_ORDER.index(units[0]):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"a {grain} breakdown of {units[0]}s is not a question I can read",
            )
        spans = [(p.start, p.stop) for p in periods]
        dated = [(a, b) for a, b in spans if isinstance(a, date) and isinstance(b, date)]
        if len(dated) != len(spans):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a comparison of periods counted from today is not read",
            )
        return grain or units[0], None, tuple(dated)  # in question order
    if len(periods) > 1:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "the question names more than one period")
    period = periods[0] if periods else None
    if period and period.unit == RANGE:
        return grain, period.span, ()  # any grain may break a bounded span down
    if grain and period and GRAIN_ORDER.index(grain) >= GRAIN_ORDER.index(period.unit):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a {grain} breakdown within one {period.unit} is not a question I can read",
        )
    return grain, period.span if period else None, ()
