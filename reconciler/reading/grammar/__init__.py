"""Question shapes of the ``fast`` tier: one module per construct (pure).

Each module reads one shape of question (a listing, rows kept by related rows, a
ratio of two measures, a count of entities, an output list …) and none imports
another's internals beyond what ``pyproject.toml``'s independence contract allows.

:data:`SHAPES` registers the shapes :func:`reconciler.reading.parse.every_shape`
asks, in the order their declines are weighed; the one-measure grammar
(:func:`reconciler.generators.fast.parse`) is asked beside them. A shape that
writes its SQL without a plan is given the text form
:func:`~reconciler.reading.ir.sql_form` of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.grammar.aggregatelists import aggregate_list
from reconciler.reading.grammar.averagebounds import above_average
from reconciler.reading.grammar.countratios import count_ratio
from reconciler.reading.grammar.dateextremes import date_extreme
from reconciler.reading.grammar.distinctcounts import distinct_count
from reconciler.reading.grammar.entitylabels import entity_labels
from reconciler.reading.grammar.existence import existence_rows
from reconciler.reading.grammar.factrankings import ranked_rows
from reconciler.reading.grammar.having import kept_by_count
from reconciler.reading.grammar.listing import listed_rows
from reconciler.reading.grammar.mode import most_common
from reconciler.reading.grammar.outputs import Parser, answer_outputs
from reconciler.reading.grammar.ratios import render_two_measures
from reconciler.reading.grammar.rawfacts import row_expression
from reconciler.reading.grammar.relatedsets import related_sets
from reconciler.reading.grammar.rowpicks import picked_rows
from reconciler.reading.grammar.sharedvalues import shared_values
from reconciler.reading.ir import Read, TwoMeasures, sql_form
from reconciler.reading.phrases.twomeasures import measure_follows_per
from reconciler.reading.phrases.words import read_grammar


@dataclass(frozen=True)
class Question:
    """A question as every shape is given it.

    Attributes:
        lens: the lens.
        text: the question as asked (pronouns restated).
        found: its retrieval (:func:`reconciler.assembly.retrieval.retrieve`).
        values: dimension values and join-key facts.
        allowed: the metrics assembly selected (``None``: any).
        parse: the one-measure grammar (:func:`reconciler.generators.fast.parse`).
        two: the ratio or difference spelling in it, if any
            (:func:`~reconciler.reading.phrases.twomeasures.find_two_measures`).
    """

    lens: Lens
    text: str
    found: Retrieval
    values: DimensionValues
    allowed: tuple[str, ...] | None
    parse: Parser
    two: TwoMeasures | None


Shape = Callable[[Question], "Read | None"]
"""A shape's reader: ``(SQL, reads_as)``, ``None`` when the question is not of its
shape; raises :class:`~reconciler.reading.ir.Declined` when it is but cannot be read."""


def _written(reader: str, read: Callable[[Question], str | None]) -> Shape:
    def shape(q: Question) -> Read | None:
        sql = read(q)
        return None if sql is None else (sql, sql_form(q.lens, reader, sql))

    return shape


def _two_measures(q: Question) -> Read | None:
    two = q.two
    if two is None or (two.per and not measure_follows_per(q.found)):
        return None
    plan = count_ratio(q.lens, two, q.values, q.allowed, q.parse)
    if plan is not None and plan.share:
        return render(q.lens, plan), plan.reads_as()
    plan = plan or q.parse(q.lens, two.listed, q.values, q.allowed)
    return render_two_measures(q.lens, plan, two), f"{two.kind} of {plan.reads_as()}"


SHAPES: tuple[tuple[str, Shape], ...] = (
    (
        "entity labels",
        _written(
            "entity labels",
            lambda q: entity_labels(q.lens, q.text, q.values, q.allowed, q.parse),
        ),
    ),
    (
        "outputs",
        _written("outputs", lambda q: answer_outputs(q.lens, q.text, q.values, q.allowed, q.parse)),
    ),
    (
        "row ratio",
        _written("row ratio", lambda q: row_expression(q.lens, q.two, q.values) if q.two else None),
    ),
    ("two measures", _two_measures),
    (
        "ranked rows",
        _written(
            "ranked rows", lambda q: ranked_rows(q.lens, q.found, read_grammar(q.lens, q.found))
        ),
    ),
    ("most common", lambda q: most_common(q.lens, q.text, q.values, q.parse)),
    (
        "aggregate list",
        lambda q: aggregate_list(q.lens, q.text, q.values, q.allowed, q.parse),
    ),
    (
        "distinct count",
        _written("distinct count", lambda q: distinct_count(q.lens, q.text, q.values)),
    ),
    (
        "count condition",
        _written("count condition", lambda q: kept_by_count(q.lens, q.text, q.values)),
    ),
    (
        "related sets",
        _written("related sets", lambda q: related_sets(q.lens, q.text, q.values, existence_rows)),
    ),
    ("existence", _written("existence", lambda q: existence_rows(q.lens, q.text, q.values))),
    (
        "average bound",
        _written("average bound", lambda q: above_average(q.lens, q.text, q.values, listed_rows)),
    ),
    ("row pick", _written("row pick", lambda q: picked_rows(q.lens, q.text, q.values))),
    ("date extreme", _written("date extreme", lambda q: date_extreme(q.lens, q.text, q.values))),
    ("listing", _written("listing", lambda q: listed_rows(q.lens, q.text, q.values))),
    ("shared values", lambda q: shared_values(q.lens, q.text, q.values)),
)
"""Every question shape, by name, in the order its decline is weighed."""
