"""Every reading of a question, and the one the ``fast`` tier serves (pure).

:func:`every_shape` asks each question shape registered in
:data:`reconciler.reading.grammar.SHAPES` what it makes of a question, and keeps
every answer (:class:`Claim`): an output clause or a ranking by
several measures (:mod:`reconciler.reading.grammar.outputs`); a ratio or difference of
two measures, entity counts included (:mod:`reconciler.reading.grammar.ratios`,
:mod:`reconciler.reading.grammar.countratios`), or of two facts of each row
(:mod:`reconciler.reading.grammar.rawfacts`); a ranking of rows by a raw column or a
listing (:mod:`reconciler.reading.grammar.listing`), kept by related rows
(:mod:`reconciler.reading.grammar.existence`). The one-measure grammar
(:func:`reconciler.generators.fast.parse`) is asked too, and :func:`one_reading`
serves a question only when its readers agree on one reading: there is no first match.

Each reading carries its compact text form (``reads_as``): a plan's
:meth:`~reconciler.reading.ir.Plan.reads_as`, or, for a shape that writes its SQL
without a plan, the shape's name, the model it reads and the columns it shows
(:func:`~reconciler.reading.ir.sql_form`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.grammar import SHAPES, Question
from reconciler.reading.grammar.cumulative import render_cumulative, split_cumulative
from reconciler.reading.grammar.outputs import Parser
from reconciler.reading.grammar.periodcounts import render_period_counts
from reconciler.reading.ir import Declined, DeclineKind, Read
from reconciler.reading.phrases.disjunction import check_or
from reconciler.reading.phrases.months import render as render_in_months
from reconciler.reading.phrases.periods import spell_to_date
from reconciler.reading.phrases.twomeasures import find_two_measures


@dataclass(frozen=True)
class Claim:
    """What one reader made of a question.

    Attributes:
        reader: the reader's name (``outputs``, ``listing``, ``grammar`` …).
        sql: its SQL, when it read the question.
        declined: why it declined, when the question is of its shape but it cannot
            answer it soundly.
        kind: the class of that decline.
        reading: the reading's compact text form (``reads_as``), with ``sql``.
    """

    reader: str
    sql: str | None = None
    declined: str | None = None
    kind: DeclineKind | None = None
    reading: str | None = None


def claim(reader: str, read: Callable[[], Read | None]) -> Claim | None:
    """``read()`` as a :class:`Claim`; ``None`` when the question is not of its shape."""
    try:
        got = read()
    except Declined as exc:
        return Claim(reader, declined=exc.reason, kind=exc.kind)
    return None if got is None else Claim(reader, sql=got[0], reading=got[1])


def every_shape(
    lens: Lens,
    question: str,
    found: Retrieval,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> list[Claim]:
    """What every shape above makes of ``question``, in the order above (each is asked).

    Args:
        lens: the lens.
        question: the question as asked.
        found: its retrieval (:func:`reconciler.assembly.retrieval.retrieve`).
        values: dimension values and join-key facts.
        allowed: the metrics assembly selected (``None``: any).
        parse: :func:`reconciler.generators.fast.parse`.

    Returns:
        One claim per shape that recognized the question (its SQL, or why it
        declined); empty when none did.
    """
    asked = Question(
        lens, question, found, values, allowed, parse, find_two_measures(spell_to_date(question))
    )
    return [c for name, read in SHAPES if (c := claim(name, partial(read, asked))) is not None]


def grammar_reading(
    lens: Lens,
    question: str,
    found: Retrieval,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> Read:
    """The one-measure grammar's reading (``parse``): a plan, a running total or counts
    compared, compiled."""
    question, running = split_cumulative(question, found)
    plan = parse(lens, question, values, allowed)
    if running:
        return render_cumulative(lens, plan), f"running total of {plan.reads_as()}"
    if plan.compared and plan.measure.function == "count_distinct":
        return render_period_counts(lens, plan), plan.reads_as()
    return render_in_months(lens, plan), plan.reads_as()


def every_claim(
    lens: Lens,
    question: str,
    found: Retrieval,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> tuple[list[Claim], Claim | None]:
    """``(every shape's claim, the grammar's claim)`` on ``question`` (every reader asked)."""
    claims = every_shape(lens, question, found, values, allowed, parse)
    grammar = claim(
        "grammar", lambda: grammar_reading(lens, question, found, values, allowed, parse)
    )
    return claims, grammar


def one_reading(
    lens: Lens,
    question: str,
    found: Retrieval,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> Claim:
    """The one reading of ``question`` among every shape's and the grammar's, else a decline.

    Every reader is asked (:func:`every_claim`); there is no first match. Two readers
    that read the question into different SQL decline, naming both: which one is
    meant is a guess, and a later rule could otherwise silently change an earlier
    reading. A shape that recognizes the question but declines it, ahead of every
    reader that read it, declines it (it saw something the others did not); with no
    reading at all, the first shape's decline, else the grammar's, is the reason. Values
    of two columns joined by "or" decline first
    (:func:`~reconciler.reading.phrases.disjunction.check_or`): no reader says "either".

    Returns:
        The claim served (``sql`` and ``reading`` set) or the decline (``declined``
        and ``kind`` set; reader ``two readings`` when readers differ).
    """
    try:
        check_or(found)
    except Declined as exc:
        return Claim("or", declined=exc.reason, kind=exc.kind)
    claims, grammar = every_claim(lens, question, found, values, allowed, parse)
    read = [c for c in (*claims, grammar) if c is not None and c.sql is not None]
    if len({c.sql for c in read}) > 1:
        names = " and ".join(f"the {c.reader} reading" for c in read)
        return Claim(
            "two readings",
            declined=f"two readings of the question: {names} differ",
            kind=DeclineKind.TWO_READINGS,
        )
    first = claims[0] if claims else None
    if first is not None and first.sql is None:
        return first
    if read:
        return read[0]
    assert grammar is not None and grammar.declined is not None
    return grammar
