"""Closing notes that restate a metric's definition, in the ``fast`` tier (pure).

An instruction question may end in a note on what one of its words means: "… Note
that revenue refers to the sum of sale_price in the sales table." Such a note adds
no column, filter or grouping; it says what the metric is. It is read only as a
check: the term must name one metric the answer measures, and that metric must be
exactly the aggregate of that column (``SUM(sale_price)``, no filters of its own) on a
model whose table the note names. Anything else declines naming the note, since the
question then defines its own measure and the lens's may not be it.

Spelling: ``Note that <term> refers to|means|is the sum|total|average|count|number|
minimum|maximum of <column> [in|from|of the <table> table].`` — one or more, after the
question's other sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure

_NOTE = re.compile(
    r"(?<=[?.!])\s+note\s+that\s+(?P<term>[\w\s]+?)\s+(?:refers\s+to|means|is)\s+the\s+"
    r"(?P<agg>sum|total|average|count|number|minimum|maximum)\s+of\s+(?P<column>\w+)"
    r"(?:\s+(?:in|from|of)\s+the\s+(?P<table>\w+)\s+table)?\s*[.!]?\s*$",
    re.IGNORECASE,
)
_AGGREGATES: dict[str, type[exp.Expr]] = {
    "sum": exp.Sum,
    "total": exp.Sum,
    "average": exp.Avg,
    "count": exp.Count,
    "number": exp.Count,
    "minimum": exp.Min,
    "maximum": exp.Max,
}


@dataclass(frozen=True)
class Note:
    """One closing note: ``term`` is the ``aggregate`` of ``column`` (in ``table``)."""

    term: str
    aggregate: str
    column: str
    table: str | None
    text: str


def split_notes(question: str) -> tuple[str, tuple[Note, ...]]:
    """``(question without its closing notes, the notes in question order)``."""
    notes: list[Note] = []
    text = question.rstrip()
    while (match := _NOTE.search(text)) is not None:
        note = Note(
            match["term"].strip(),
            match["agg"].lower(),
            match["column"],
            match["table"],
            match.group(0).strip(),
        )
        notes.insert(0, note)
        text = text[: match.start()].rstrip()
    return text, tuple(notes)


def check_notes(
    lens: Lens, notes: Iterable[Note], measures: Iterable[Measure], values: DimensionValues
) -> None:
    """Every note restates a metric of ``measures`` (module docstring).

    Raises:
        Declined: naming the note and what the metric is instead.
    """
    by_metric = {m.metric: m for m in measures if m.metric}
    for note in notes:
        found = retrieve(lens, note.term, values)
        loose = [t for i, t in enumerate(found.tokens) if i not in found.covered()]
        metrics = {t.name for m in found.mentions if m.kind == "metric" for t in m.targets}
        if loose or len(found.mentions) != 1 or len(metrics) != 1:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{note.text!r}: {note.term!r} names no one metric of the lens",
            )
        name = next(iter(metrics))
        measure = by_metric.get(name)
        if measure is None:
            raise Declined(
                DeclineKind.UNKNOWN_TERM, f"{note.text!r}: the question does not measure {name}"
            )
        if not _restates(lens, measure, note):
            metric = lens.metrics[name]
            filters = f" where {' and '.join(metric.filters)}" if metric.filters else ""
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{note.text!r} does not restate metric {name} "
                f"({metric.expression} on model {metric.model!r}{filters})",
            )


def _restates(lens: Lens, measure: Measure, note: Note) -> bool:
    metric = lens.metrics[measure.metric or ""]
    if metric.filters or measure.filters:
        return False
    table = lens.models[metric.model].table.rsplit(".", 1)[-1]
    if note.table is not None and note.table.lower() != table.lower():
        return False
    tree = sqlglot.parse_one(metric.expression, read=lens.config.dialect)
    if not isinstance(tree, _AGGREGATES[note.aggregate]) or isinstance(tree.this, exp.Distinct):
        return False
    return isinstance(tree.this, exp.Column) and tree.this.name.lower() == note.column.lower()
