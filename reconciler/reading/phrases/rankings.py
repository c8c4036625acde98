"""The ranking a question asks for: top/bottom n, or the one row at an extreme (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.words import Reading, check_row_count, plural


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
        check_row_count(reading, found)
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


def check_which_have(found: Retrieval, breakdowns: list[Mention], ranked: object) -> None:
    """Decline ``which <X> have|has|had … <measure>`` with no ranking word ("Which
    patient IDs have had a cancelled treatment?", "Which regions have orders?"): it asks
    for the X that have some, a list, not the measure broken down by X (a figure per X,
    and a group for X missing) — another reading that ``<measure> by <X>`` states.

    Raises:
        Declined: naming the breakdown reading to ask for instead.
    """
    if ranked or found.tokens[:1] != ("which",):
        return
    opening = [
        m for m in breakdowns if m.start in (1, 2) and found.tokens[1 : m.start] in ((), ("the",))
    ]
    if opening and found.tokens[opening[0].end : opening[0].end + 1] in (
        ("have",),
        ("has",),
        ("had",),
    ):
        words = " ".join(found.words[opening[0].start : opening[0].end])
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'which {words} have …' asks for the {words} that have some, not a figure per "
            f"{words}: ask '… by {words}' for the breakdown",
        )


def check_value_ranked(
    found: Retrieval,
    rank_at: int | None,
    key: Mention | None,
    shown: Sequence[Mention | int],
    noun: tuple[int, int] | None,
) -> None:
    """Decline a listing of "What is the highest hourly rate of any instrument?": the
    ranked fact ``key`` right after its ranking word (at ``rank_at``), every column
    ``shown`` (mentions, or indices of a name word) after it, asks for the value as much
    as for the rows holding it, unless the rows' ``noun`` names them.

    Raises:
        Declined: ``AMBIGUOUS_READING``, naming the ranked phrase.
    """
    if key is None or rank_at is None or key.start != rank_at + 1 or noun is not None:
        return
    if shown and all((a if isinstance(a, int) else a.start) > key.start for a in shown):
        fact = " ".join(found.words[rank_at : key.end])
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'the {fact} of …': the value itself, or the rows that hold it? Ask for "
            f"the maximum or minimum, or 'which … has the {fact}'",
        )
