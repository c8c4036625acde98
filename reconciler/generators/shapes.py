"""The fast tier's shapes read before its one-measure grammar, in order (pure).

:func:`other_shapes` tries, first match wins: an output clause or a ranking by
several measures (:mod:`reconciler.generators.outputs`); a ratio or difference of
two measures, entity counts included (:mod:`reconciler.generators.ratios`,
:mod:`reconciler.generators.countratios`), or of two facts of each row
(:mod:`reconciler.generators.rawfacts`); a ranking of rows by a raw column or a
listing (:mod:`reconciler.generators.listing`), kept by related rows
(:mod:`reconciler.generators.existence`). A question none of them reads goes to
:func:`reconciler.generators.fast.parse`.
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Retrieval
from reconciler.generators.compiler import render
from reconciler.generators.countratios import count_ratio
from reconciler.generators.existence import existence_rows
from reconciler.generators.generation import DimensionValues
from reconciler.generators.grammar import read_grammar
from reconciler.generators.listing import listed_rows, ranked_rows
from reconciler.generators.outputs import Parser, answer_outputs
from reconciler.generators.periods import spell_to_date
from reconciler.generators.ratios import find_two_measures, measure_follows_per, render_two_measures
from reconciler.generators.rawfacts import row_expression
from reconciler.lens import Lens


def other_shapes(
    lens: Lens,
    question: str,
    found: Retrieval,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> str | None:
    """The SQL of ``question`` in one of the shapes above, or ``None`` when it has none.

    Args:
        lens: the lens.
        question: the question as asked.
        found: its retrieval (:func:`reconciler.assembly.retrieval.retrieve`).
        values: dimension values and join-key facts.
        allowed: the metrics assembly selected (``None``: any).
        parse: :func:`reconciler.generators.fast.parse`.

    Raises:
        Declined: a shape matched but cannot be answered soundly (its reason says why).
    """
    shaped = answer_outputs(lens, question, values, allowed, parse)
    if shaped is not None:
        return shaped
    two = find_two_measures(spell_to_date(question))
    rowwise = row_expression(lens, two, values) if two is not None else None
    if rowwise is not None:
        return rowwise
    if two is not None and (not two.per or measure_follows_per(found)):
        plan = count_ratio(lens, two, values, allowed, parse)
        if plan is not None and plan.share:
            return render(lens, plan)  # a count by one dimension over every row
        plan = plan or parse(lens, two.listed, values, allowed)
        return render_two_measures(lens, plan, two)
    return (
        ranked_rows(lens, found, read_grammar(lens, found))
        or existence_rows(lens, question, values)
        or listed_rows(lens, question, values)
    )
