"""Verbs that name a date in the ``fast`` tier: "booked in 2025" (pure).

A verb of :data:`~reconciler.assembly.text.DATE_VERBS` ("booked", "placed",
"recorded" …) sharing its root with a word of a time dimension's name or synonym is
a phrase of that time dimension (:func:`reconciler.assembly.lexicon.lexicon`): with a
period or grain it says which date they apply to ("appointments booked in 2025"
filters ``booked_date``, not the model's default time dimension; a verb naming two
dates declines as ambiguous). Without one it says nothing the count does not
("how many appointments were booked?") and is read as the plain verb it was before.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import DATE_VERBS


def dated_verbs(found: Retrieval, dims: list[Mention], bucketed: bool) -> list[Mention]:
    """``dims`` without its date-naming verbs when the question has no period or grain
    (``bucketed`` false); unchanged otherwise."""
    if bucketed:
        return dims
    return [d for d in dims if not _verb(found, d)]


def _verb(found: Retrieval, m: Mention) -> bool:
    return (
        m.kind == "time_dimension" and m.end - m.start == 1 and found.tokens[m.start] in DATE_VERBS
    )
