"""Verbs that name a date in the ``fast`` tier: "booked in 2025" (pure).

A verb of :data:`~reconciler.assembly.text.DATE_VERBS` ("booked", "placed",
"recorded" …) sharing its root with a word of a time dimension's name or synonym is
a phrase of that time dimension (:func:`reconciler.assembly.lexicon.lexicon`): with a
period or grain it says which date they apply to ("appointments booked in 2025"
filters ``booked_date``, not the model's default time dimension; a verb naming two
dates declines as ambiguous, and so does one naming only a date of another model
than the measured one). Without one it says nothing the count does not
("how many appointments were booked?") and is read as the plain verb it was before.

A verb of that list naming no date ("How many bookings were made in 2024?") says the
period is on the date of an event, but not which: on a model with one date that is the
date, on one with several (``booked_at``, ``used_at``) the default is a guess — the
question declines, naming the dates.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import DATE_VERBS
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.resolve import paths


def dated_verbs(
    lens: Lens, found: Retrieval, dims: list[Mention], base: str, bucketed: bool
) -> list[Mention]:
    """``dims`` without its date-naming verbs when the question has no period or grain
    (``bucketed`` false); otherwise without the verbs naming no date reachable from the
    measured ``base`` (a plain verb there).

    Raises:
        Declined: with a period or grain, a verb names only dates of models other than
            the measured ``base`` ("revenue booked in 2025" on invoices, with a booking
            date on appointments): the date of the joined rows, or the verb a plain
            word ("revenue recorded")? Not one reading.
    """
    if not bucketed:
        return [d for d in dims if not _verb(found, d)]
    _check_dateless_verb(lens, found, dims, base)
    kept: list[Mention] = []
    for d in dims:
        reached = paths.reachable(lens, base, d.targets) if _verb(found, d) else d.targets
        if not reached:
            continue  # it names no date of the rows measured: the plain verb
        if _verb(found, d) and all(t.model != base for t in reached):
            dates = ", ".join(sorted(f"{t.model}.{t.name}" for t in reached))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{found.words[d.start]!r} names {dates}, a date of another model than "
                f"{base!r} (whose rows the question measures): say which date the period "
                "is on, by its name or a synonym",
            )
        kept.append(d)
    return kept


def _check_dateless_verb(lens: Lens, found: Retrieval, dims: list[Mention], base: str) -> None:
    """Decline a period or grain with a date verb naming no date ("made") on a ``base``
    with several dates, when no date is named (module docstring)."""
    model = lens.models[base]
    if len(model.time_dimensions) < 2 or any(d.kind == "time_dimension" for d in dims):
        return
    covered = found.covered()
    verb = next(
        (
            w
            for i, (w, t) in enumerate(zip(found.words, found.tokens, strict=True))
            if t in DATE_VERBS and i not in covered
        ),
        None,
    )
    if verb is None:
        return
    default = model.time_dimension()
    dates = ", ".join(
        f"{c.name} (the default)" if c is default else c.name for c in model.time_dimensions
    )
    raise Declined(
        DeclineKind.AMBIGUOUS_READING,
        f"{verb!r} names no date of {base!r}, which has several ({dates}): say which date "
        "the period is on, by its name or a synonym",
    )


def _verb(found: Retrieval, m: Mention) -> bool:
    return (
        m.kind == "time_dimension" and m.end - m.start == 1 and found.tokens[m.start] in DATE_VERBS
    )
