"""Several aggregates of one fact: "the average, minimum and maximum age of singers" (pure).

A list of aggregation words that share the one fact (or fact-backed metric) after
the last of them asks one column per word, each over the same rows:

    What is the average, minimum, and maximum age of all singers from France?
    Show the minimum and maximum price of the products in Toys.
    What are the total and the average amount of orders by region?

reads as the list spelled out (:func:`reconciler.assembly.aggregatelists.spelled_lists`):
"the average age and minimum age and maximum age of all singers from France", and
that question is the one-measure grammar's (:func:`reconciler.generators.fast.parse`),
which holds every measure to its rules: each word must fit the fact (no ``average``
of a text column), a metric the phrase names keeps its own aggregate only where the
word restates it, and the list stays on one model. Any other list means another
shape (``None``); a word said twice declines, and so does whatever the grammar
declines in the spelled-out question, or a reading that is not one column per word.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.assembly.aggregatelists import spelled_lists
from reconciler.assembly.lexicon import DimensionValues
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.phrases.months import render

Parser = Callable[[Lens, str, DimensionValues, tuple[str, ...] | None], Plan]
""":func:`reconciler.generators.fast.parse`, passed in (this module sits below it)."""


def aggregate_list(
    lens: Lens,
    question: str,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> tuple[str, str] | None:
    """``(SQL, reads_as)`` of a list of aggregation words over one fact (module
    docstring), or ``None`` when the question holds no such list.

    Raises:
        Declined: a word listed twice, a reading that is not one column per word,
            or whatever the grammar declines in the spelled-out question.
    """
    spelled = spelled_lists(lens, question, values)
    if spelled is None:
        return None
    restated, said, phrase = spelled
    if len(set(said)) < len(said):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{' and '.join(said)!r} {phrase!r}: one aggregation word is listed twice",
        )
    plan = parse(lens, restated, values, allowed)
    if plan.joined or 1 + len(plan.extra) != len(said):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{' and '.join(said)!r} {phrase!r}: the list does not read as one column per word",
        )
    return render(lens, plan), plan.reads_as()
