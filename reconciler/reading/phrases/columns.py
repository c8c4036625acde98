"""Where the ``fast`` tier's time bucket stands among a result's key columns (pure).

A result's key columns follow the question: "monthly revenue by region" shows the
month, then the region; "revenue closed by each sales rep by month" shows the rep,
then the month. The bucket stands where its grain word stands among the breakdown
phrases (a grain with no word of its own — a change step, compared periods — comes
first).
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention
from reconciler.reading.phrases.words import Reading


def bucket_at(reading: Reading, grain: str | None, asked: list[Mention], places: int) -> int:
    """The number of breakdown columns before the time bucket.

    Args:
        reading: the question's grammar words (where each grain word stands).
        grain: the plan's grain, if any.
        asked: the breakdown dimension mentions, in question order.
        places: how many distinct breakdown columns those mentions name.

    Returns:
        ``0`` without a grain word; else how many of ``asked`` start before it
        (at most ``places``).
    """
    if grain is None or grain not in reading.grains:
        return 0
    word = reading.grains[grain]
    return min(places, sum(1 for m in asked if m.start < word))
