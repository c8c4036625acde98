"""Verbs that name a date in the ``fast`` tier: "booked in 2025" (pure).

A verb of :data:`~reconciler.assembly.text.DATE_VERBS` ("booked", "placed",
"recorded" …) sharing its root with a word of a time dimension's name or synonym is
a phrase of that time dimension (:func:`reconciler.assembly.lexicon.lexicon`): with a
period or grain it says which date they apply to ("appointments booked in 2025"
filters ``booked_date``, not the model's default time dimension; a verb naming two
dates declines as ambiguous, and so does one naming only a date of another model
than the measured one). Without one it says nothing the count does not
("how many appointments were booked?") and is read as the plain verb it was before.

A verb of that list naming no date ("How many bookings were made in 2024?") leaves
the period on the model's default date, unless another of its dates says that verb in
its description ("booked_at: when the booking was made"; one verb of a row coming to
be stands for the others, "placed" for "made"), or a word of the question shares its
root with that date's name ("How many holds were fulfilled in 2024?", 'fulfilled' a
status and ``fulfilled_at`` a date): the lens then says the word means that date, and
the question declines naming both.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import DATE_VERBS, verb_root, words
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import CREATION_VERBS
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
        return [d for d in dims if not is_date_verb(found, d)]
    _check_dateless_verb(lens, found, dims, base)
    kept: list[Mention] = []
    for d in dims:
        reached = paths.reachable(lens, base, d.targets) if is_date_verb(found, d) else d.targets
        if not reached:
            continue  # it names no date of the rows measured: the plain verb
        if is_date_verb(found, d) and all(t.model != base for t in reached):
            dates = ", ".join(sorted(f"{t.model}.{t.name}" for t in reached))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{found.words[d.start]!r} names {dates}, a date of another model than "
                f"{base!r} (whose rows the question measures): say which date the period "
                "is on, by its name or a synonym",
            )
        kept.append(d)
    return kept


# Words of a date's name that say only that it is a date ("fulfilled_at", "ship date").
_DATE_WORDS = frozenset({"date", "dat", "at", "on", "time", "tim", "day", "timestamp"})


def _check_dateless_verb(lens: Lens, found: Retrieval, dims: list[Mention], base: str) -> None:
    """Decline a period or grain, no date named, when a date of ``base`` other than its
    default says a date verb of the question in its description ("made"), or is named
    by a word of the question read otherwise ("fulfilled", a status value, beside
    ``fulfilled_at``) (module docstring)."""
    model = lens.models[base]
    default = model.time_dimension()
    if default is None or any(d.kind == "time_dimension" for d in dims):
        return
    covered = found.covered()
    verbs = {
        w
        for i, (w, t) in enumerate(zip(found.words, found.tokens, strict=True))
        if t in DATE_VERBS and i not in covered
    }
    if verbs & CREATION_VERBS:
        verbs |= CREATION_VERBS  # "placed" as much as "made": the row came to be
    roots = {verb_root(w): w for w in found.words}  # "fulfilled", read as a status value
    for col in model.time_dimensions:
        said = verbs & set(words(col.description))
        named = {verb_root(w) for text in (col.name, *col.synonyms) for w in words(text)}
        echoed = sorted(roots[r] for r in (named - _DATE_WORDS) & roots.keys())
        if col is not default and (said or echoed):
            how = "is how {} is described" if said else "names {}"
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{(sorted(said) or echoed)[0]!r} {how.format(f'{base}.{col.name}')}, but the "
                f"period would be on the default date {default.name}: say which date "
                "the period is on, by its name or a synonym",
            )


def is_date_verb(found: Retrieval, m: Mention) -> bool:
    """Whether ``m`` is one verb naming a date ("booked", "sold"): it says which date a
    period is on, never a column to show."""
    return (
        m.kind == "time_dimension" and m.end - m.start == 1 and found.tokens[m.start] in DATE_VERBS
    )
