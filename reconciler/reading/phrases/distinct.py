""" "Different", "distinct", "unique" before a breakdown column (pure).

In a question that groups by a column, "the different hometowns of teachers and the
number of teachers from each hometown" asks for each value once, which grouping
already gives: the word adds nothing. It is read so only right before a dimension
phrase (past ``the``/``all``), and only when the plan breaks down by that dimension;
anywhere else ("how many different …", "for different number of …") it is left to
the readers that know it, and the one-measure grammar keeps it as an unknown word.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import DISTINCT_WORDS


def distinct_columns(found: Retrieval) -> dict[int, Mention]:
    """``{index of a distinct word: the dimension phrase it stands before}``."""
    starts = {m.start: m for m in found.mentions if m.kind == "dimension"}
    covered = found.covered()
    out: dict[int, Mention] = {}
    for i, t in enumerate(found.tokens):
        if t not in DISTINCT_WORDS or i in covered:
            continue
        k = i + 1
        while k < len(found.tokens) and found.tokens[k] in ("the", "all"):
            k += 1
        if k in starts:
            out[i] = starts[k]
    return out


def check_distinct(found: Retrieval, marked: dict[int, Mention], plan: Plan) -> None:
    """Decline when a distinct word stands before a column ``plan`` does not group by.

    Raises:
        Declined: the first such word, by its phrase.
    """
    for at, mention in marked.items():
        if not any((t.model, t.name) in plan.breakdowns for t in mention.targets):
            phrase = " ".join(found.words[at : mention.end])
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase!r}: each value once, but the answer does not group by it",
            )
