"""The fast tier's shapes beside its one-measure grammar, each asked in turn (pure).

:func:`every_shape` asks each of them what it makes of a question, and keeps every
answer (:class:`Claim`): an output clause or a ranking by
several measures (:mod:`reconciler.reading.grammar.outputs`); a ratio or difference of
two measures, entity counts included (:mod:`reconciler.reading.grammar.ratios`,
:mod:`reconciler.reading.grammar.countratios`), or of two facts of each row
(:mod:`reconciler.reading.grammar.rawfacts`); a ranking of rows by a raw column or a
listing (:mod:`reconciler.reading.grammar.listing`), kept by related rows
(:mod:`reconciler.reading.grammar.existence`). The grammar
(:func:`reconciler.generators.fast.parse`) is asked too, and
:func:`reconciler.generators.fast.compile_request` serves a question only when its
readers agree on one reading: there is no first match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.grammar.countratios import count_ratio
from reconciler.reading.grammar.existence import existence_rows
from reconciler.reading.grammar.listing import listed_rows, ranked_rows
from reconciler.reading.grammar.outputs import Parser, answer_outputs
from reconciler.reading.grammar.ratios import render_two_measures
from reconciler.reading.grammar.rawfacts import row_expression
from reconciler.reading.ir import Declined
from reconciler.reading.phrases.periods import spell_to_date
from reconciler.reading.phrases.twomeasures import find_two_measures, measure_follows_per
from reconciler.reading.phrases.words import read_grammar


@dataclass(frozen=True)
class Claim:
    """What one reader made of a question.

    Attributes:
        reader: the reader's name (``outputs``, ``listing``, ``grammar`` …).
        sql: its SQL, when it read the question.
        declined: why it declined, when the question is of its shape but it cannot
            answer it soundly.
    """

    reader: str
    sql: str | None = None
    declined: str | None = None


def claim(reader: str, read: Callable[[], str | None]) -> Claim | None:
    """``read()`` as a :class:`Claim`; ``None`` when the question is not of its shape."""
    try:
        sql = read()
    except Declined as exc:
        return Claim(reader, declined=exc.reason)
    return None if sql is None else Claim(reader, sql=sql)


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
    two = find_two_measures(spell_to_date(question))

    def two_measures() -> str | None:
        if two is None or (two.per and not measure_follows_per(found)):
            return None
        plan = count_ratio(lens, two, values, allowed, parse)
        if plan is not None and plan.share:
            return render(lens, plan)
        plan = plan or parse(lens, two.listed, values, allowed)
        return render_two_measures(lens, plan, two)

    readers: tuple[tuple[str, Callable[[], str | None]], ...] = (
        ("outputs", lambda: answer_outputs(lens, question, values, allowed, parse)),
        ("row ratio", lambda: row_expression(lens, two, values) if two is not None else None),
        ("two measures", two_measures),
        ("ranked rows", lambda: ranked_rows(lens, found, read_grammar(lens, found))),
        ("existence", lambda: existence_rows(lens, question, values)),
        ("listing", lambda: listed_rows(lens, question, values)),
    )
    return [c for name, read in readers if (c := claim(name, read)) is not None]
