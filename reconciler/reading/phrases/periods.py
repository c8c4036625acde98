"""Period phrases of the ``fast`` tier: calendar periods, relative periods, whole span (pure).

A period is a half-open date range ``[start, stop)`` with the calendar unit it
spans (``month``, ``quarter``, ``year``), so that a time grain can be checked
against it ("monthly … in 2024" is fine, "yearly … in 2024" is not).

Absolute periods: a year (``2024``, ``year 2024``), a quarter (``Q3 2024``,
``2024 Q3``, ``third quarter of 2024``), a month (``March 2024``, ``month of
March 2024``, ``2023 Dec``) or a day (``2024-03-15``, ``March 15, 2024``).

Relative periods are resolved against the lens's pinned ``as_of`` date (DESIGN §4:
a question whose meaning depends on the day is evaluated at ``as_of``), or, with
``as_of: today``, kept as bounds counted from the current date
(:class:`~reconciler.reading.today.Today`, rendered on ``CURRENT_DATE``); without
``as_of`` they decline. With ``as_of`` = D (or today):

* ``last`` / ``previous`` / ``prior`` ``month|quarter|year``: the whole calendar
  unit before the one holding D (``the previous year`` too, but not ``the last
  year``, which may as well mean the past twelve months);
* ``this`` / ``current`` ``month|quarter|year``: the whole calendar unit holding D
  (what ``DATE_TRUNC(unit, CURRENT_DATE)`` up to one unit later selects, evaluated
  at ``as_of``);
* ``month|quarter|year to date`` (``mtd``, ``qtd``, ``ytd``, ``so far this year``,
  ``this year so far``): from the start of the unit holding D through D itself.
  Every spelling is read as its abbreviation before anything else
  (:func:`spell_to_date`), so a lens phrase that happens to hold one of its words
  (a time dimension called ``date``) cannot take part of it.

Bounds around a period P (absolute or relative), with unit ``range`` (any grain
may break one down; it is never one of compared periods):

* ``since P``: from P's first day on; ``after P``: from the day after P ends
  (``after 2023`` = from 2024-01-01); ``before P``: up to P's first day; with a
  pinned ``as_of`` each ends by as_of (inclusive), and one starting after it declines;
* ``between P1 and P2``: from P1's first day through P2's last
  (``between March and May 2024``: a bare month takes P2's year); P1 after P2
  declines.

An open end is :data:`OPEN_START` / :data:`OPEN_STOP` (``date.min`` / ``date.max``),
which the compiler leaves out of the WHERE.

Rolling windows (``past 30 days``, ``last 6 calendar months``) and ISO weeks are
read by :mod:`reconciler.reading.phrases.windows`. A bare week (Sunday or Monday
start?) and a bound around anything but a period are not read: the question keeps
an unknown word and declines. A period counted from today is not compared, changed
over or put in a ``between``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from reconciler.assembly.retrieval import Retrieval
from reconciler.assembly.text import MONTHS, QUARTER_RE, YEAR_RE
from reconciler.lensfiles import TODAY
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import CURRENT_WORDS, PREVIOUS_WORDS
from reconciler.reading.phrases.windows import TOMORROW, Window, iso_week_at, window_at
from reconciler.reading.today import Day, Today

UNITS = ("month", "quarter", "year")
RANGE = "range"  # the unit of a bounded span ("since 2023", "between March and May 2024")
OPEN_START = date.min
OPEN_STOP = date.max

_ORDINAL_QUARTERS = {
    w: i
    for i, ws in enumerate(("", "first 1st", "second 2nd", "third 3rd", "fourth 4th"))
    for w in ws.split()
}
_TO_DATE = {"ytd": "year", "qtd": "quarter", "mtd": "month"}
_ABBREVIATION = {unit: short for short, unit in _TO_DATE.items()}
# "year to date", "year-to-date", "so far this year", "this year so far" (any case).
_SPELLED_TO_DATE = re.compile(
    r"\b(?:(?P<a>year|quarter|month)[\s-]+to[\s-]+date"
    r"|so\s+far\s+this\s+(?P<b>year|quarter|month)"
    r"|this\s+(?P<c>year|quarter|month)\s+so\s+far)\b",
    re.IGNORECASE,
)
# "(over|throughout) (the) entire|whole|full|complete (available) <span>"; "all (available) time".
_WHOLE = frozenset({"entire", "whole", "full", "complete"})
_SPANS = frozenset(["time period", "time range", "date range", "time frame", "period", "history"])


@dataclass(frozen=True)
class Period:
    """A half-open date range ``[start, stop)`` spanning one calendar ``unit``.

    Attributes:
        start: first day in the period.
        stop: first day after it.
        unit: ``day``, ``month``, ``quarter`` or ``year`` (a to-date period keeps
            its unit), or :data:`RANGE` for a bounded span.
        phrase: the words that named it (for messages).
    """

    start: Day
    stop: Day
    unit: str
    phrase: str = ""

    @property
    def span(self) -> tuple[Day, Day]:
        """``(start, stop)``."""
        return self.start, self.stop


def spell_to_date(question: str) -> str:
    """``question`` with every spelled-out to-date period replaced by its abbreviation
    (``year to date``, ``so far this year``, ``this year so far`` → ``ytd``; the same
    for quarter and month), so that all spellings mean one filter. Anything else is
    kept as written: ``so far`` alone, or ``to date`` without a unit, stays unread
    and the question declines."""

    def short(match: re.Match[str]) -> str:
        unit = next(g for g in match.group("a", "b", "c") if g)
        return _ABBREVIATION[unit.lower()]

    return _SPELLED_TO_DATE.sub(short, question)


def shift(start: date, unit: str, n: int) -> date:
    """``start`` (a unit start) moved by ``n`` whole units (negative = earlier)."""
    months = {"month": 1, "quarter": 3, "year": 12}[unit] * n
    index = start.year * 12 + start.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def relative(word: str, unit: str, as_of: date) -> Period:
    """The period ``<word> <unit>`` means on day ``as_of``; ``word`` is ``last``,
    ``previous``, ``prior``, ``this``, ``current`` or ``to date``."""
    period = _relative_today(word, unit)
    return Period(_at(period.start, as_of), _at(period.stop, as_of), unit, period.phrase)


def _relative_today(word: str, unit: str) -> Period:
    """:func:`relative` with bounds counted from the current date (:class:`Today`)."""
    here = Today(unit)
    if word in PREVIOUS_WORDS:
        return Period(Today(unit, -1, unit), here, unit, f"{word} {unit}")
    if word in CURRENT_WORDS:
        return Period(here, Today(unit, 1, unit), unit, f"{word} {unit}")
    return Period(here, TOMORROW, unit, f"{unit} {word}")


def _period_of(window: Window | None) -> tuple[int, Period] | None:
    if window is None:
        return None
    end, start, stop, unit, phrase = window
    return end, Period(start, stop, unit, phrase)


def _at(day: Day, as_of: date) -> date:
    return day.at(as_of) if isinstance(day, Today) else day


def earlier(span: tuple[Day, Day], unit: str) -> tuple[Day, Day]:
    """``span`` starting one ``unit`` earlier (a change's first bucket; dated only)."""
    first = first_day(span)
    assert first is not None
    return shift(first, unit, -1), span[1]


def first_day(span: tuple[Day, Day] | None) -> date | None:
    """``span``'s first day; ``None`` without one. A change between periods is only read
    on calendar dates, so a bound counted from today is refused before this."""
    if span is None:
        return None
    assert isinstance(span[0], date)
    return span[0]


def resolved(period: Period, as_of: str | None) -> Period:
    """``period`` (bounds counted from the current date) read at the lens's ``as_of``:
    unchanged for ``today``, at the pinned day for a date.

    Raises:
        Declined: the lens has no ``as_of``.
    """
    if as_of is None:
        raise Declined(
            DeclineKind.OUT_OF_PERIOD,
            f"{period.phrase!r} depends on the day; the lens pins no as_of date",
        )
    if as_of == TODAY:
        return period
    day = date.fromisoformat(as_of)
    return Period(_at(period.start, day), _at(period.stop, day), period.unit, period.phrase)


def period_at(
    toks: tuple[str, ...], i: int, free: set[int], as_of: str | None
) -> tuple[int, Period] | None:
    """A period phrase starting at token ``i``: ``(index after it, period)``, else ``None``.

    Args:
        toks: normalized tokens of the question.
        i: where to look.
        free: positions outside lens phrases (a period never overlaps one).
        as_of: the lens's pinned ``YYYY-MM-DD`` date, for relative periods.

    Raises:
        Declined: a relative period when the lens pins no ``as_of``; any period that
            starts after a pinned ``as_of`` ("in March 2025" with ``as_of:
            2024-12-31``): the lens's world ends that day, so no row can be in it, and
            0 would be a confident answer to a question about the future.
    """
    words = _FreeTokens(toks, free)
    found = _bounded_at(words, i, as_of) or _single_at(words, i, as_of)
    start = found[1].start if found is not None else None
    if found is not None and as_of not in (None, TODAY) and isinstance(start, date):
        after = start > date.fromisoformat(str(as_of))
        phrase = found[1].phrase or " ".join(toks[i : found[0]])
        if after:
            raise Declined(
                DeclineKind.OUT_OF_PERIOD, f"{phrase!r} starts after the lens's as_of date {as_of}"
            )
    return found


def _single_at(words: _FreeTokens, i: int, as_of: str | None) -> tuple[int, Period] | None:
    """One period (no bound) starting at ``i``."""
    k = i + 1 if words[i] == "the" else i
    w = i + 1 if words[i] == "within" else i  # "within the last 6 months": the window
    window = _period_of(window_at(words.__getitem__, w + 1 if words[w] == "the" else w))
    if window is not None:
        return window[0], resolved(window[1], as_of)
    if words[k] == "last" and words[k + 1] in UNITS and k > 0 and words.toks[k - 1] == "the":
        return None  # "in the last year": the previous calendar year, or the past 12 months?
    return (
        _relative_at(words, i, k, as_of)
        or _quarter_at(words, i)
        or _day_at(words, i)
        or _month_at(words, i)
        or _year_at(words, i)
    )


def _day_at(words: _FreeTokens, i: int) -> tuple[int, Period] | None:
    """``2024-03-15`` (ISO, split into its three numbers) or ``March 15 2024``
    (``March 15, 2024``): one day, unit ``day``."""
    y, month, day = words.year(i), words[i + 1], words[i + 2]
    if y is not None and len(month) == 2 and len(day) == 2 and (month + day).isdigit():
        end, m, d = i + 3, int(month), int(day)
    elif words[i] in MONTHS and words[i + 1].isdigit() and len(words[i + 1]) <= 2:
        y = words.year(i + 2)
        if y is None:
            return None
        end, m, d = i + 3, MONTHS[words[i]], int(words[i + 1])
    else:
        return None
    try:
        start = date(y, m, d)
    except ValueError:
        raise Declined(DeclineKind.OUT_OF_PERIOD, f"{y}-{m:02}-{d:02} is not a date") from None
    return end, Period(start, start + timedelta(days=1), "day", start.isoformat())


def _bounded_at(words: _FreeTokens, i: int, as_of: str | None) -> tuple[int, Period] | None:
    """``since P``, ``after P``, ``before P``, ``between P1 and P2`` at ``i``."""
    word = words[i]
    if word in ("since", "after", "before"):
        inner = _single_at(words, i + 1, as_of)
        if inner is None:
            return None
        end, p = inner
        start, stop = {
            "since": (p.start, OPEN_STOP),
            "after": (p.stop, OPEN_STOP),
            "before": (OPEN_START, p.start),
        }[word]
        return end, _until_as_of(Period(start, stop, RANGE, f"{word} {p.phrase}"), as_of)
    if word != "between":
        return None
    first = _single_at(words, i + 1, as_of)
    bare_month = first is None and words[i + 1] in MONTHS
    j = i + 2 if bare_month else (first[0] if first else -1)
    if j < 0 or words[j] != "and":
        return None
    second = _single_at(words, j + 1, as_of)
    if second is None:
        return None
    end, last = second
    if bare_month:
        if last.unit != "month" or not isinstance(last.start, date):
            return None
        first = (j, Period(date(last.start.year, MONTHS[words[i + 1]], 1), last.start, "month"))
    assert first is not None
    low, high = first[1].start, last.stop
    if not isinstance(low, date) or not isinstance(high, date):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"between {first[1].phrase} and {last.phrase}: a period counted from today "
            "is not read in a 'between'",
        )
    if low >= high:
        raise Declined(
            DeclineKind.OUT_OF_PERIOD,
            f"between {first[1].phrase or words[i + 1]} and {last.phrase}: "
            "the first period starts after the second ends",
        )
    return end, Period(first[1].start, last.stop, RANGE, f"between … and {last.phrase}")


def _until_as_of(period: Period, as_of: str | None) -> Period:
    """``period`` ending by the lens's pinned ``as_of`` day (inclusive): an open or later
    end is read at as_of, so rows the warehouse gains after it never count. Unchanged
    without a pinned date (``as_of: today`` keeps an open end: nothing past today exists).

    Raises:
        Declined: the period starts after the pinned day.
    """
    if as_of is None or as_of == TODAY:
        return period
    day = date.fromisoformat(as_of)
    stop = day + timedelta(days=1)
    if isinstance(period.start, date) and period.start >= stop:
        raise Declined(
            DeclineKind.OUT_OF_PERIOD,
            f"{period.phrase!r} starts after the lens's as_of date {as_of}",
        )
    if isinstance(period.stop, date) and period.stop > stop:
        return Period(period.start, stop, period.unit, period.phrase)
    return period


class _FreeTokens:
    """The question's tokens as a period sees them: ``""`` inside a lens phrase or past the end."""

    def __init__(self, toks: tuple[str, ...], free: set[int]) -> None:
        self.toks = toks
        self.free = free

    def __getitem__(self, k: int) -> str:
        return self.toks[k] if k < len(self.toks) and k in self.free else ""

    def year(self, k: int) -> int | None:
        """The year at ``k`` (``2024``), else ``None``."""
        return int(self[k]) if YEAR_RE.match(self[k]) else None

    def skip_of(self, k: int) -> int:
        """``k``, or the index after an ``of`` / ``in`` at ``k``."""
        return k + 1 if self[k] in ("of", "in") else k


def _relative_at(
    words: _FreeTokens, i: int, k: int, as_of: str | None
) -> tuple[int, Period] | None:
    """``last quarter``, ``this year``, ``previous ISO week`` (from ``k``, past a leading
    ``the``), ``month to date``, ``ytd`` (from ``i``)."""
    found: tuple[int, Period] | None = None
    if (words[k] in PREVIOUS_WORDS or words[k] in CURRENT_WORDS) and words[k + 1] in UNITS:
        found = k + 2, _relative_today(words[k], words[k + 1])
    elif words[i] in UNITS and (words[i + 1], words[i + 2]) == ("to", "date"):
        found = i + 3, _relative_today("to date", words[i])
    elif words[i] in _TO_DATE:
        found = i + 1, _relative_today("to date", _TO_DATE[words[i]])
    else:
        found = _period_of(iso_week_at(words.__getitem__, k))
    return None if found is None else (found[0], resolved(found[1], as_of))


def _quarter(y: int, q: int, end: int) -> tuple[int, Period]:
    start = date(y, 3 * q - 2, 1)
    return end, Period(start, shift(start, "quarter", 1), "quarter", f"Q{q} {y}")


def _quarter_at(words: _FreeTokens, i: int) -> tuple[int, Period] | None:
    """``Q3 2024``, ``q3 of 2024``, ``third quarter of 2024``."""
    q_match = QUARTER_RE.match(words[i])
    if q_match:
        k = words.skip_of(i + 1)
        y = words.year(k)
        return _quarter(y, int(q_match.group(1)), k + 1) if y else None
    if words[i] in _ORDINAL_QUARTERS and words[i + 1] == "quarter":
        k = words.skip_of(i + 2)
        y = words.year(k)
        return _quarter(y, _ORDINAL_QUARTERS[words[i]], k + 1) if y else None
    return None


def _month_at(words: _FreeTokens, i: int) -> tuple[int, Period] | None:
    """``March 2024``, ``month of March 2024``, ``mar of 2024``."""
    k = i + 2 if (words[i], words[i + 1]) == ("month", "of") else i
    if words[k] not in MONTHS:
        return None
    j = words.skip_of(k + 1)
    y = words.year(j)
    if y is None:
        return None
    start = date(y, MONTHS[words[k]], 1)
    return j + 1, Period(start, shift(start, "month", 1), "month", f"{words[k]} {y}")


def _year_at(words: _FreeTokens, i: int) -> tuple[int, Period] | None:
    """``2024``, ``year 2024``, ``2024 Q3`` (a quarter) and ``2023 Dec`` (a month)."""
    k = i + 1 if words[i] == "year" else i
    y = words.year(k)
    if y is None:
        return None
    q2 = QUARTER_RE.match(words[k + 1])
    if q2 and k == i:
        return _quarter(y, int(q2.group(1)), k + 2)
    if words[k + 1] in MONTHS and k == i:
        start = date(y, MONTHS[words[k + 1]], 1)
        return k + 2, Period(start, shift(start, "month", 1), "month", f"{words[k + 1]} {y}")
    return k + 1, Period(date(y, 1, 1), date(y + 1, 1, 1), "year", str(y))


def all_time_at(toks: tuple[str, ...], i: int, free: set[int]) -> int | None:
    """The end of a whole-span phrase starting at ``i`` ("over the entire period"), if any."""

    def tok(k: int) -> str:
        return toks[k] if k < len(toks) and k in free else ""

    k = i + 1 if tok(i) in ("over", "throughout") else i
    k = k + 1 if tok(k) == "the" else k
    if tok(k) == "all":
        k = k + 2 if tok(k + 1) == "available" else k + 1
        return k + 1 if tok(k) == "time" else None
    if tok(k) not in _WHOLE:
        return None
    k = k + 2 if tok(k + 1) == "available" else k + 1
    return next((k + n for n in (2, 1) if " ".join(map(tok, range(k, k + n))) in _SPANS), None)


def check_unit_phrases(found: Retrieval) -> None:
    """Decline a relative period whose unit word is also a lens phrase.

    In "this quarter", "the previous month", "last year", the unit is a grammar word;
    when the lens gives that word to one of its columns (a ``fiscalquarter``
    dimension said "quarter"), the period cannot be read and the relative word is
    left over. Instead of "unrecognised words: 'this'", say which column took the
    unit, so the lens author can rename the synonym ("fiscal quarter").

    Raises:
        Declined: ``this`` / ``current`` / ``last`` / ``previous`` / ``prior`` (outside
            lens phrases) right before a lens phrase that is a unit word.
    """
    covered = found.covered()
    for m in found.mentions:
        words = found.tokens[m.start : m.end]
        k = m.start - 1
        if len(words) != 1 or words[0] not in UNITS or k < 0 or k in covered:
            continue
        if found.tokens[k] in PREVIOUS_WORDS or found.tokens[k] in CURRENT_WORDS:
            places = ", ".join(sorted({f"{t.model}.{t.name}" for t in m.targets}))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{found.words[k]} {found.words[m.start]!r}: the lens says {words[0]!r} for "
                f"{places}, so the period cannot be read; give that column another synonym "
                f"(e.g. 'fiscal {words[0]}')",
            )
