"""Two measures spelled as a ratio or a difference: "ratio of A to B", "A per B" (pure).

:func:`find_two_measures` finds the spelling (the table in
:mod:`reconciler.reading.grammar.ratios`) and :func:`measure_follows_per` tells a
dividing ``per`` from a breakdown; the shapes that read two measures (ratios, counts
compared, raw facts of a row) share them.
"""

from __future__ import annotations

import re

from reconciler.assembly.retrieval import Retrieval
from reconciler.reading.ir import DIFFERENCE, RATIO, TwoMeasures

# (pattern, kind, column word); the measures are the named groups a and b.
_SPELLINGS: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), kind, word)
    for p, kind, word in (
        (r"\b(?:the\s+)?ratio\s+of\s+(?P<a>.+?)\s+to\s+(?P<b>.+)$", RATIO, "per"),
        (r"\b(?:the\s+)?difference\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+)$", DIFFERENCE, "minus"),
        (r"^(?P<a>.+?)\s+minus\s+(?P<b>.+)$", DIFFERENCE, "minus"),
        (r"^(?P<a>.+?)\s+divided\s+by\s+(?P<b>.+)$", RATIO, "per"),
        (
            r"^(?P<a>.+?)\s+as\s+an?\s+(?P<w>share|fraction|proportion|percentage|percent)"
            r"\s+of\s+(?P<b>.+)$",
            RATIO,
            "share_of",
        ),
        (r"^(?P<a>.+?)\s+per\s+(?P<b>.+)$", RATIO, "per"),
    )
)
_PERCENT = frozenset({"percentage", "percent"})
_SKIPPED = frozenset({"the", "a", "an", "each"})


def find_two_measures(question: str) -> TwoMeasures | None:
    """The first ratio or difference spelling in ``question`` (module docstring), if any.

    A question holding several spellings (``ratio of A to B per C``) or the same
    connector twice is returned as found; :func:`render_two_measures` then declines
    unless the rest reads as exactly two measures.
    """
    text = question.strip().rstrip("?.! ")
    for pattern, kind, word in _SPELLINGS:
        match = pattern.search(text)
        if match is None:
            continue
        shown = (match.groupdict().get("w") or "").lower()
        percent = shown in _PERCENT
        listed = f"{text[: match.start()]}{match['a']} and {match['b']}"
        return TwoMeasures(
            kind,
            "percentage_of" if percent else word,
            percent,
            listed.strip(),
            per=pattern is _SPELLINGS[-1][0],
            sides=(text[: match.start()], match["a"], match["b"]),
        )
    return None


def measure_follows_per(found: Retrieval) -> bool:
    """Whether a metric or fact phrase follows a ``per`` of the question ("revenue per
    order count"), so that ``per`` divides rather than breaks down ("revenue per region")."""
    starts = {m.start for m in found.mentions if m.kind in ("metric", "fact")}
    for i, token in enumerate(found.tokens):
        if token != "per":
            continue
        k = i + 1
        while k < len(found.tokens) and found.tokens[k] in _SKIPPED:
            k += 1
        if k in starts:
            return True
    return False
