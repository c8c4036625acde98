"""Values of two columns joined by "or": "the pets that are Dog or Labrador" (pure).

"or" is no lens phrase, so a reader that does not look for it reads two values of two
columns as two filters, both kept: ``species = 'Dog' AND breed = 'Labrador'``, the rows
that are both, where the question asks for the rows that are either. Two values of one
column joined by "or" are a listing's ``IN`` (:mod:`~reconciler.reading.phrases.rowvalues`)
and another reader's decline ("several values of …"); two of different columns decline
here, before any reader is asked (:func:`check_or`).
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import STOPWORDS
from reconciler.reading.ir import Declined, DeclineKind

_BETWEEN = STOPWORDS - {"not", "no", "or", "and"}


def check_or(found: Retrieval) -> None:
    """Decline "<value> or <value>" when the two values are of no one column (past any
    stopwords between them and "or": "in Norway or in Dublin").

    Raises:
        Declined: ``UNSUPPORTED_CONSTRUCT``, naming both values and their columns.
    """
    toks = found.tokens
    covered = found.covered()
    for i, t in enumerate(toks):
        if t != "or" or i in covered:
            continue
        before, after = _value_near(found, i, -1), _value_near(found, i, 1)
        if before is None or after is None:
            continue
        first = {(x.model, x.name) for x in before.targets}
        second = {(x.model, x.name) for x in after.targets}
        if first & second:
            continue
        said = " or ".join(" ".join(found.words[m.start : m.end]) for m in (before, after))
        columns = ", ".join(sorted(f"{m}.{c}" for m, c in first | second))
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{said!r} names values of different columns ({columns}): rows with either "
            "are not read; ask for each value apart",
        )


def _value_near(found: Retrieval, at: int, step: int) -> Mention | None:
    """The value mention next to token ``at`` in direction ``step`` (-1 before, 1 after),
    past stopwords, else ``None``."""
    k = at + step
    while 0 <= k < len(found.tokens) and found.tokens[k] in _BETWEEN:
        k += step
    for m in found.mentions:
        if (m.end - 1 if step < 0 else m.start) == k:
            return m if m.kind == "value" else None
    return None
