"""Rolling windows and ISO weeks of the ``fast`` tier: periods counted back from today (pure).

Each spelling reads as one range ``[start, stop)`` of :class:`~reconciler.reading.today.Today`
bounds (resolved at a pinned ``as_of`` date, or rendered on ``CURRENT_DATE`` for
``as_of: today``):

* ``(within) (the) past|last N days|weeks|months``: from the day N units before today
  through today (``time >= CURRENT_DATE - INTERVAL 'N days' AND time <
  CURRENT_DATE + 1 day``). A trailing ``inclusive of N days ago`` (the same N and
  unit), ``inclusive of today('s date)``, ``including today`` or ``from today``
  restates that reading and adds nothing;
* ``(the) past|last N calendar months|quarters|years``: the start snapped to the
  first day of its unit (``DATE_TRUNC('month', CURRENT_DATE) - INTERVAL 'N
  months'``) through today; ``… not including the current month`` (``excluding``,
  ``exclusive of``) stops at the current unit's first day instead;
* ``(the whole of) the previous|last|prior ISO week (not including the current
  week)``: Monday to Sunday of the week before this one; ``this|current ISO week``:
  this week's Monday through the Sunday after.

Declines, naming the readings: ``past N years`` (the N×12 months up to today, or
N calendar years?), ``calendar weeks`` (which day starts one?), a qualifier that
does not restate the window (``past 30 days, inclusive of 20 days ago``) and a
window that leaves out its end (``… excluding today``). A bare ``week`` (Sunday or
Monday start?) stays unread.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import CURRENT_WORDS, PREVIOUS_WORDS
from reconciler.reading.today import Today

Word = Callable[[int], str]
"""The question's token at an index, ``""`` inside a lens phrase or past the end."""

Window = tuple[int, Today, Today, str, str]
"""``(index after the phrase, start, stop, unit, phrase)``."""

TOMORROW = Today(None, 1, "day")
_ROLLING = ("day", "week", "month")
_CALENDAR = ("month", "quarter", "year")
_EXCLUDING = (("not", "including"), ("exclusive", "of"))


def window_at(word: Word, k: int) -> Window | None:
    """A rolling window ``past|last N [calendar] <unit>s [qualifier]`` at token ``k``.

    Raises:
        Declined: see the module docstring.
    """
    if word(k) not in ("past", "last") or not word(k + 1).isdigit():
        return None
    n, j = int(word(k + 1)), k + 2
    calendar = word(j) == "calendar"
    unit = word(j + 1 if calendar else j)
    if unit not in (*_ROLLING, *_CALENDAR):
        return None
    j += 2 if calendar else 1
    phrase = " ".join(word(x) for x in range(k, j))
    if n == 0:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, f"{phrase!r}: a window of no {unit}s")
    if calendar and unit not in _CALENDAR:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r}: which day starts a calendar {unit}? say 'past {n} {unit}s'",
        )
    if not calendar and unit not in _ROLLING:
        months = n * (12 if unit == "year" else 3)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r}: the {months} months up to today, or whole calendar {unit}s from "
            f"the one {n} {unit}s back? say 'past {months} months' or 'past {n} calendar "
            f"{unit}s'",
        )
    start = Today(unit if calendar else None, -n, unit)
    end, stop = _qualified(word, j, n, unit, calendar, phrase)
    return end, start, stop, "range", phrase


def _qualified(
    word: Word, j: int, n: int, unit: str, calendar: bool, phrase: str
) -> tuple[int, Today]:
    """``(index after the qualifier, stop)`` of a window ending at ``j``."""
    pair = (word(j), word(j + 1))
    if pair == ("inclusive", "of") and word(j + 2) == "today":
        return (j + 4 if word(j + 3) == "date" else j + 3), TOMORROW
    if pair in (("including", "today"), ("from", "today")):
        return j + 2, TOMORROW
    if pair == ("inclusive", "of") and word(j + 4) == "ago":
        if (word(j + 2), word(j + 3)) != (str(n), unit) or calendar:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase!r}, inclusive of {word(j + 2)} {word(j + 3)} ago: the qualifier does "
                f"not restate the window's first day",
            )
        return j + 5, TOMORROW
    excluding = _excluding(word, j)
    if not excluding:
        return j, TOMORROW
    at = j + excluding
    at += 1 if word(at) == "the" else 0
    if calendar and (word(at), word(at + 1)) == ("current", unit):
        return at + 2, Today(unit)
    raise Declined(
        DeclineKind.UNSUPPORTED_CONSTRUCT,
        f"{phrase!r} leaving out {word(j + excluding)!r}: the window runs through today; "
        f"only 'past N calendar {unit}s not including the current {unit}' ends earlier",
    )


def iso_week_at(word: Word, k: int) -> Window | None:
    """``(the whole of) (the) previous|last|prior|this|current ISO week`` at ``k``."""
    if (word(k), word(k + 1)) == ("whole", "of"):
        k += 3 if word(k + 2) == "the" else 2
    which, j = word(k), k + 3
    if which not in PREVIOUS_WORDS | CURRENT_WORDS or (word(k + 1), word(k + 2)) != ("iso", "week"):
        return None
    phrase = f"{which} ISO week"
    excluding = _excluding(word, j)
    if excluding:
        at = j + excluding
        at += 1 if word(at) == "the" else 0
        if which in CURRENT_WORDS or (word(at), word(at + 1)) != ("current", "week"):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase!r}: the words after it do not restate which week",
            )
        j = at + 2
    if which in CURRENT_WORDS:
        return j, Today("week"), Today("week", 1, "week"), "week", phrase
    return j, Today("week", -1, "week"), Today("week"), "week", phrase


def _excluding(word: Word, j: int) -> int:
    """How many tokens at ``j`` say "not including" (``excluding``, ``exclusive of``)."""
    return 2 if (word(j), word(j + 1)) in _EXCLUDING else 1 if word(j) == "excluding" else 0
