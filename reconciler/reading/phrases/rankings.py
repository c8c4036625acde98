"""The ranking a question asks for: top/bottom n, or the one row at an extreme (pure)."""

from __future__ import annotations

from reconciler.assembly.retrieval import Retrieval
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.words import Reading, plural


def ranking(
    reading: Reading, found: Retrieval, grain: str | None, has_dims: bool, plural_breakdown: bool
) -> tuple[bool, int] | None:
    """The question's ranking, ``(descending, n)``, from its ranking words and number:
    ``top 5`` is n 5; a singular breakdown with a ranking word and no number is the one
    row at the extreme (``which region has the most …``); ``None`` with no ranking word,
    or when a plural breakdown's closing ordering restates it (every row, in order).

    Raises:
        Declined: a number with no ranking, both directions, nothing to rank, several
            counts, zero rows, or a plural breakdown ranked without a count.
    """
    if not reading.directions:
        if reading.numbers:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"the number {reading.numbers[0]} has no meaning in this question",
            )
        return None
    if len(reading.directions) > 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "the question asks for both the highest and the lowest",
        )
    if not has_dims and grain is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a top/bottom ranking needs something to rank (a dimension or grain)",
        )
    if len(reading.numbers) > 1:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "the question names several counts")
    descending = next(iter(reading.directions))
    if reading.numbers:
        n = reading.numbers[0]
        if n < 1:
            raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a ranking of zero rows")
        return descending, n
    grain_plural = grain is not None and plural(found, reading.grains[grain])
    if plural_breakdown or (not has_dims and grain_plural):
        if reading.ordered is descending:
            return None  # restated by the closing ordering: every row, in that order
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a top/bottom ranking without a count")
    return descending, 1
