"""Days of the week as a filter in the ``fast`` tier: "on weekends", "on Mondays" (pure).

A phrase ``on|during weekends`` (Saturday and Sunday), ``on|during weekdays``
(Monday to Friday) or ``on|during <day>s`` — plural day names, joined by ``and`` /
``or`` ("on Mondays and Fridays": either day) — keeps the rows whose time falls on
those days of the week:

    WHERE DATE_PART('dow', <time>) IN (0, 6)        -- 0 Sunday … 6 Saturday

:func:`split_weekdays` takes the phrase off the question before it is read; the
time is the one a period or grain of the question uses, else the measure's model's
own single time dimension (or its ``default_time_dimension``): a date reached through
a join is not taken unasked.

A day word that is a lens phrase or a stored value (a ``day`` column holding
'Monday') is left to the main grammar. Declines: a singular day or weekend ("on
Monday", "on the weekend": one date, or every one?), a phrase on measures planned on
several models, a count of entities with no date of theirs named (as for a period,
:mod:`reconciler.reading.grammar.counts`), and no single time dimension to read the day
from (several on the model and no ``default_time_dimension``).
"""

from __future__ import annotations

import dataclasses
import re

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Plan

_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
_GROUPS = {"weekends": (0, 6), "weekdays": (1, 2, 3, 4, 5)}
_NAME = rf"(?:{'|'.join(_DAYS)}|weekend|weekday)s?"
_PHRASE = re.compile(
    rf"\b(?:on|during)\s+(?:the\s+)?(?P<days>{_NAME}(?:\s*(?:,|\band\b|\bor\b)\s*{_NAME})*)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"(?<!\w)'[^']+'(?!\w)|\"[^\"]+\"")
_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b)\s*", re.IGNORECASE)


def split_weekdays(
    lens: Lens, question: str, values: DimensionValues
) -> tuple[str, tuple[int, ...]]:
    """``(question without its day-of-week phrase, the days: 0 Sunday … 6 Saturday)``;
    ``(question, ())`` when it has none (a quoted value is no phrase), or when a
    day word is a lens phrase or a stored value (a ``day`` column holding 'Monday':
    the main grammar reads it).

    Raises:
        Declined: a singular day or weekend, or several such phrases.
    """
    quoted = [q.span() for q in _QUOTED.finditer(question)]
    found = [
        m for m in _PHRASE.finditer(question) if not any(a <= m.start() < b for a, b in quoted)
    ]
    if not found or any(retrieve(lens, m["days"], values).mentions for m in found):
        return question, ()
    if len(found) > 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, "several days-of-the-week phrases: say the days once"
        )
    match = found[0]
    days: set[int] = set()
    for word in (w.lower() for w in _SPLIT.split(match["days"]) if w):
        if not word.endswith("s") or match.group(0).lower().split()[1] == "the":
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{match.group(0)!r}: one date, or every one? Say 'on {word.rstrip('s')}s' "
                "for every such day, or give the date",
            )
        days.update(_GROUPS.get(word) or (_DAYS.index(word[:-1]),))
    rest = f"{question[: match.start()]} {question[match.end() :]}"
    return re.sub(r"\s+", " ", rest).strip(), tuple(sorted(days))


def with_weekdays(lens: Lens, plan: Plan, days: tuple[int, ...]) -> Plan:
    """``plan`` keeping only rows on ``days`` (module docstring); unchanged when none.

    Raises:
        Declined: measures on several models, a count of entities with no date
            named, or no single time dimension of the measure's own model.
    """
    if not days:
        return plan
    if plan.joined:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a days-of-the-week filter on measures of several models is not read",
        )
    time = plan.time
    if time is None and plan.measure.function == "count_distinct":
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"a count of {plan.measure.model} on some days of the week: which date of "
            f"{plan.measure.model} falls on them? Name it with a period (created in 2024 …)",
        )
    if time is None:
        model = lens.models[plan.base]
        column = model.time_dimension()
        if column is None or (
            len(model.time_dimensions) > 1 and model.default_time_dimension is None
        ):
            raise Declined(
                DeclineKind.MISSING_IN_LENS,
                f"on which date's day of the week? Model {plan.base!r} has no single time "
                f"dimension of its own (declare its default_time_dimension)",
            )
        time = (plan.base, column.name)
    return dataclasses.replace(plan, time=time, weekdays=days)
