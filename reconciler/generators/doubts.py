"""Readings of a question the ``fast`` tier refuses to guess between (pure).

Two shapes read as one query would silently pick one of two answers:

* a breakdown by a model's own rows — ``average gpa by student``, ``for each
  business`` — names no column to group on (the key? the name?), so it declines
  instead of dropping the breakdown;
* an average on one model said to be *of* another model's rows — ``average rating
  of businesses`` when ratings are rows of ``reviews`` — is either the mean over the
  reviews or the mean of each business's own mean; the two differ, so it declines.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Retrieval
from reconciler.generators.compiler import Declined, Measure
from reconciler.generators.grammar import Reading
from reconciler.lens import Lens

_INTRODUCERS = frozenset({"by", "per", "each", "every"})
_SKIPPED = frozenset({"the", "all", "a"})


def check_doubts(
    lens: Lens, found: Retrieval, reading: Reading, measures: tuple[Measure, ...]
) -> None:
    """Decline the two doubtful shapes of the module docstring.

    Raises:
        Declined: a model noun right after ``by``/``per``/``each``/``every``, or an
            average on model A followed by ``of [the] <noun of model B>``.
    """
    toks = found.tokens
    for at, model in sorted(reading.noun_at.items()):
        k = at - 1
        while k >= 0 and toks[k] in _SKIPPED:
            k -= 1
        if k >= 0 and toks[k] in _INTRODUCERS:
            raise Declined(
                f"a breakdown by {found.words[at]!r} names no column of model {model!r}: "
                f"say which (its id, its name …)"
            )
    averaged = {m.model for m in measures if _averages(m)}
    if not averaged:
        return
    for mention in found.mentions:
        if not any(t.model in averaged for t in mention.targets):
            continue
        k = mention.end
        if toks[k : k + 1] != ("of",):
            continue
        k += 1
        while k < len(toks) and toks[k] in _SKIPPED:
            k += 1
        other = reading.noun_at.get(k)
        if other is not None and other not in averaged:
            raise Declined(
                f"an average of {found.words[k]!r}: the mean over every row of "
                f"{mention.targets[0].model!r}, or the mean of each {other} row's own mean?"
            )


def _averages(measure: Measure) -> bool:
    """Whether ``measure`` is a mean (a fact's ``avg`` or a metric spelled with AVG)."""
    if measure.function is not None:
        return measure.function == "avg"
    return "avg(" in measure.expression.lower().replace(" ", "")
