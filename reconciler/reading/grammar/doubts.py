"""Readings of a question the ``fast`` tier must not guess or drop (pure).

* a breakdown by a model's own rows — ``average gpa by student``, ``for each
  business`` — groups on the model's key, the one column that tells its rows apart
  (:func:`entity_breakdowns`); a model without a one-column key declared as a
  dimension declines rather than dropping the breakdown. ``by`` before a plural
  noun with more words after it is the agent of a verb ("cited by publications in
  each year"), not a breakdown; ``per`` before a model noun declines ("revenue per
  customer": one row per customer, or the ratio?);
* an average on one model said to be *of* another model's rows — ``average rating
  of businesses`` when ratings are rows of ``reviews`` — is either the mean over the
  reviews or the mean of each business's own mean; the two differ, so it declines.
"""

from __future__ import annotations

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure
from reconciler.reading.phrases.words import Reading

_INTRODUCERS = frozenset({"by", "per", "each", "every"})
_SKIPPED = frozenset({"the", "all", "a"})


def check_doubts(
    lens: Lens, found: Retrieval, reading: Reading, measures: tuple[Measure, ...]
) -> None:
    """Decline an average of another model's rows (module docstring).

    Raises:
        Declined: an average on model A followed by ``of [the] <noun of model B>``.
    """
    toks = found.tokens
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
                DeclineKind.AMBIGUOUS_READING,
                f"an average of {found.words[k]!r}: the mean over every row of "
                f"{mention.targets[0].model!r}, or the mean of each {other} row's own mean?",
            )


def entity_breakdowns(lens: Lens, found: Retrieval, reading: Reading) -> list[tuple[str, str]]:
    """``(model, key dimension)`` for each model noun the question breaks down by
    ("for each author", "by student"), in question order.

    Raises:
        Declined: the model has no one-column primary key declared as a dimension, or
            the noun follows ``per``.
    """
    toks = found.tokens
    out: list[tuple[str, str]] = []
    for at, model in sorted(reading.noun_at.items()):
        k = at - 1
        while k >= 0 and toks[k] in _SKIPPED:
            k -= 1
        if k < 0 or toks[k] not in _INTRODUCERS:
            continue
        end = at + max(
            len(n)
            for n, m in model_nouns(lens).items()
            if m == model and toks[at : at + len(n)] == n
        )
        if toks[k] == "by" and found.words[end - 1] != toks[end - 1] and end < len(toks):
            continue  # "cited by publications in each year": the agent, not a breakdown
        if toks[k] == "per":
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"'per {found.words[at]}': one row per {model} row, or an average over "
                f"{model} (a ratio)? Say 'for each {found.words[at]}' or 'divided by'",
            )
        key = lens.models[model].primary_key
        dims = {c.name for c in lens.models[model].dimensions}
        if len(key) != 1 or key[0] not in dims:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"a breakdown by {found.words[at]!r} names no column of model {model!r}: "
                f"say which (its id, its name …)",
            )
        if (model, key[0]) not in out:
            out.append((model, key[0]))
    return out


def _averages(measure: Measure) -> bool:
    """Whether ``measure`` is a mean (a fact's ``avg`` or a metric spelled with AVG)."""
    if measure.function is not None:
        return measure.function == "avg"
    return "avg(" in measure.expression.lower().replace(" ", "")
