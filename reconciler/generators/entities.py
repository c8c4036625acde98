"""What a count of entities ("how many customers") may be read with (pure).

:func:`reconciler.generators.measures.entity_count` reads "how many <model noun>" as
COUNT(DISTINCT <primary key>); :func:`check_entity_count` holds it to the breakdowns,
periods and grains that have one reading.
"""

from __future__ import annotations

from datetime import date

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.generators.grammar import phrase_of
from reconciler.generators.plans import Declined, Measure
from reconciler.lens import Lens

_INTRODUCERS = frozenset({"by", "per", "each", "every", "across"})


def check_entity_count(
    lens: Lens,
    found: Retrieval,
    measure: Measure,
    breakdowns: list[Mention],
    grain: str | None,
    period: tuple[date, date] | None,
    rank: tuple[bool, int] | None,
) -> None:
    """Decline a count of entities that has no one reading.

    * A period or time grain needs to know which date of the entity counts: the
      counted model must declare ``default_time_dimension`` (the lens says "reviews
      are counted by the month they were posted"); a model with time dimensions but
      no default declines, saying so.
    * A breakdown comes only after "by", "per", "each" … (or in a ranking): "how many
      customers have an email" is not a count *by* email.

    Raises:
        Declined: naming what is missing.
    """
    model = measure.model
    if (grain or period) and lens.models[model].default_time_dimension is None:
        dated = ", ".join(c.name for c in lens.models[model].time_dimensions)
        fix = f" Model {model!r} declares no default_time_dimension ({dated})" if dated else ""
        raise Declined(
            f"a count of {model} in a period: which date of {model} (created, active …)?{fix}"
        )
    if rank is not None:
        return
    introduced: set[int] = set()
    for d in sorted(breakdowns, key=lambda m: m.start):
        k = d.start - 1
        while k >= 0 and found.tokens[k] == "the":
            k -= 1
        before = found.tokens[k] if k >= 0 else ""
        if before in _INTRODUCERS or (before == "and" and k in introduced):
            introduced.add(d.end)
            continue
        raise Declined(
            f"{phrase_of(found, d)!r} is not introduced by 'by', 'per' or 'each': "
            f"a count of {model} broken down by it, or filtered by it?"
        )
