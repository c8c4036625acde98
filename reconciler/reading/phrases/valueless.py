"""A dimension said where a value of it belongs, with no value (pure).

"Number of harvests with grade", "revenue in region", "orders having status": the
dimension's name stands after a word that opens a filter (``with``, ``having``,
``in``, ``for``, ``where``, ``whose``; past ``the``), but no value of it follows it.
Read as a breakdown it would answer "per grade", a question nobody asked; read as a
filter it lacks its value, perhaps one the question spelled as an ordinary word (a
lowercase "grade a", where the value ``A`` is read only written as stored or quoted:
:mod:`reconciler.assembly.retrieval`). Either reading is a guess, so it declines
(:func:`check_valueless`). A breakdown word before the name (``by``, ``per``,
``each`` …) asks for the breakdown, and stays one.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.words import phrase_of, uninvited

_FILTER_OPENERS = frozenset({"with", "having", "in", "for", "where", "whose"})
_SKIPPED = frozenset({"the"})


def check_valueless(found: Retrieval, breakdowns: list[Mention]) -> None:
    """Decline a breakdown mention that a filter word introduces (module docstring).

    Args:
        found: the question's retrieval.
        breakdowns: the dimension mentions read as breakdowns (no value beside them).

    Raises:
        Declined: ``AMBIGUOUS_READING``, naming the phrase and both readings.
    """
    for mention in uninvited(found, breakdowns):
        k = mention.start - 1
        while k >= 0 and found.tokens[k] in _SKIPPED:
            k -= 1
        if k < 0 or found.tokens[k] not in _FILTER_OPENERS:
            continue
        phrase = phrase_of(found, mention)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'{found.words[k]} {phrase}' names no value of {phrase!r}: rows with which "
            f"{phrase} (write the value as stored, or quote it), or one row per {phrase} "
            f"(say 'by {phrase}')?",
        )
