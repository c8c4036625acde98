"""Lists of aggregation words over one fact, spelled out: "the average and maximum age" (pure).

"The average, minimum and maximum age of singers" names one column per word, each
over the same fact: it means "the average age and minimum age and maximum age of
singers". :func:`spelled_lists` writes a question so, for two readers that must
agree: assembly, which selects the metrics a question names by their phrases
(a spelled-out "average age" may be a metric the list hides), and the ``fast``
tier's shape :mod:`reconciler.reading.grammar.aggregatelists`.

The words are ``total``, ``sum``, ``average``, ``avg``, ``mean``, ``minimum``,
``min``, ``maximum``, ``max``, joined by commas or ``and`` (``the`` may stand before
each), and the phrase after the last word is a fact, or a metric backed by a fact
(its phrase may begin with the last word: "maximum age"). ``number`` and ``count``
are not among them ("the number and average price" counts rows, not prices).
"""

from __future__ import annotations

import re

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import Mention, retrieve
from reconciler.lens import Lens

LIST_WORDS = frozenset(
    {"total", "sum", "average", "avg", "mean", "minimum", "min", "maximum", "max"}
)
_JOINS = frozenset({"and", "the"})
# Between two words of the list as written: a comma, "and", or both.
_JOINED = r"\s*(?:,\s*(?:and\s+)?|and\s+)(?:the\s+)?"


def spelled_lists(
    lens: Lens, question: str, values: DimensionValues | None = None
) -> tuple[str, tuple[str, ...], str] | None:
    """The first list of aggregation words over one fact in ``question``, spelled out.

    Returns:
        ``(question as its words with the list spelled out, the words listed, the
        phrase they share)``, or ``None`` when the question holds no such list. The
        words may repeat; the caller decides what a repeated word means.
    """
    found = retrieve(lens, question, values)
    words = found.words
    for m in found.mentions:
        led = m.kind == "metric" and words[m.start] in LIST_WORDS and m.end - m.start > 1
        if not (m.kind == "fact" or (m.kind == "metric" and m.facts) or led):
            continue
        listed = _listed_before(words, m)
        if listed is None:
            continue
        said = tuple(words[k] for k in listed)
        if not _written_as_list(question, said):
            continue
        phrase = words[listed[-1] + 1 : m.end]
        spelled = [w for word in said for w in ("and", word, *phrase)][1:]
        restated = " ".join([*words[: listed[0]], *spelled, *words[m.end :]])
        return restated, said, " ".join(phrase)
    return None


def _listed_before(words: tuple[str, ...], m: Mention) -> list[int] | None:
    """Positions of the aggregation words listed before mention ``m`` (at least two),
    the last either the first word of ``m`` ("maximum age") or right before it (``of
    the`` may stand between: "the minimum and maximum of the price"), else ``None``."""
    if words[m.start] in LIST_WORDS and m.end - m.start > 1:
        k = m.start
    else:
        k = m.start - 1
        if words[max(k - 1, 0) : k + 1] == ("of", "the"):
            k -= 2
        elif k >= 0 and words[k] == "of":
            k -= 1
        if k < 0 or words[k] not in LIST_WORDS:
            return None
    listed = [k]
    j = k - 1
    while j >= 0:
        while j >= 0 and words[j] in _JOINS:
            j -= 1
        if j < 0 or words[j] not in LIST_WORDS:
            break
        listed.insert(0, j)
        j -= 1
    return listed if len(listed) > 1 else None


def _written_as_list(question: str, said: tuple[str, ...]) -> bool:
    """Whether the words stand in ``question`` as a list: commas or ``and`` between
    them, not "the average maximum age" (an average of maxima?)."""
    pattern = _JOINED.join(re.escape(w) for w in said)
    return re.search(rf"\b{pattern}\b", question, re.I) is not None
