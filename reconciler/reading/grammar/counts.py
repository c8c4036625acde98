"""Counts of entities in the ``fast`` tier: "how many accounts …" (pure).

A count of a model's rows (``COUNT(DISTINCT <primary key>)``, see
:func:`reconciler.reading.grammar.measures.entity_count`) is read with:

* a breakdown only after ``by``, ``per``, ``each``, ``every`` or ``across`` (or in a
  ranking): "how many customers have an email" is not a count *by* email;
* a period or a time grain only when the question names the time dimension of the
  counted model that dates them: "how many opportunities were created in Q3 2024"
  (a ``created`` synonym of ``createddate``) counts the rows created then — or when
  the model's one time dimension is its declared ``default_time_dimension`` (the
  lens says "reviews are dated by the day they were posted"; a model with several
  dates still needs the question to name one). Without either the count declines and asks which
  date is meant (created, closed, active …), naming the model's time dimensions,
  because an entity has no one date the way an order does. The word ``new`` right
  before the counted noun ("how many new accounts were created this quarter") then
  restates the creation and adds nothing (:func:`new_is_restated`);
* compared periods ("this quarter compared to the previous quarter") on the same
  dates as one period; their one row each is :mod:`reconciler.reading.grammar.periodcounts`.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval, counted_model
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure
from reconciler.reading.phrases.words import Reading, phrase_of, uninvited


def check_entity_count(
    lens: Lens,
    found: Retrieval,
    measure: Measure,
    breakdowns: list[Mention],
    when: tuple[str | None, tuple[object, object] | None, bool],
    time: tuple[str, str] | None,
    rank: tuple[bool, int] | None,
) -> None:
    """Hold a count of entities to the rules of the module docstring.

    Args:
        lens: the lens (the counted model's ``default_time_dimension``).
        found: the question's retrieval.
        measure: the ``count_distinct`` measure of the counted model.
        breakdowns: the dimension mentions asked as breakdowns.
        when: ``(grain, period, compared)``: the question's time grain, its period,
            and whether it compares periods.
        time: the time dimension the question names, if any (``(model, column)``).
        rank: the question's ranking, if any.

    Raises:
        Declined: a period, grain or comparison without a named time dimension of
            the counted model, or a breakdown not introduced by ``by`` / ``per`` / ``each``.
    """
    model = measure.model
    grain, period = when[:2]  # compared periods come with their unit as the grain
    named = time is not None and time[0] == model
    dates = lens.models[model].time_dimensions
    sole = lens.models[model].default_time_dimension is not None and len(dates) == 1
    if (grain or period) and not named and not sole:
        dated = ", ".join(c.name for c in dates)
        fix = (
            f" Name one in the question ({dated})"
            if len(dates) > 1
            else f" Model {model!r} declares no default_time_dimension ({dated})"
            if dated
            else ""
        )
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"a count of {model} in a period: which date of {model} (created, active …)?{fix}",
        )
    if rank is not None:
        return
    stray = uninvited(found, breakdowns)
    if stray:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase_of(found, stray[0])!r} is not introduced by 'by', 'per' or 'each': "
            f"a count of {model} broken down by it, or filtered by it?",
        )


def new_is_restated(lens: Lens, found: Retrieval, reading: Reading) -> None:
    """Drop an unknown ``new`` that only restates a dated count's creation.

    ``new`` right before the noun of a counted model ("how many new accounts were
    created this quarter") is read as nothing when the question also names a time
    dimension of that model and a period: the rows counted are those dated in the
    period, which is what "new" says. With a period but no such time dimension it
    declines asking for one; anywhere else ``new`` stays unknown, and the question
    declines.

    Raises:
        Declined: "new <noun>" counted in a period without a named time dimension.
    """
    if "new" not in reading.unknown or not reading.periods:
        return
    counted = counted_model(lens, found)
    if counted is None or found.tokens[counted[1] - 1 : counted[1]] != ("new",):
        return
    model = counted[3]
    named = any(
        m.kind == "time_dimension" and all(t.model == model for t in m.targets)
        for m in found.mentions
    )
    if not named:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'new {found.words[counted[1]]}': new by which date of {model}? Name the one "
            f"that says when a row was created (e.g. 'created in …')",
        )
    reading.unknown.remove("new")
