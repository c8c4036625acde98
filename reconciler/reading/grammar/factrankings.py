"""Rankings of one model's rows by a raw fact: "top 3 products by price" (pure).

A question of the shape ``top|bottom [n] <model noun> by <fact>`` — the ranking
word, an optional count, a noun naming a model, ``by`` and one fact *of that same
model*, nothing else — lists the model's rows, not an aggregate:

    SELECT <label>, <fact> FROM <table> ORDER BY <fact> DESC NULLS LAST, <label> LIMIT n

The label is the model's one dimension that names its rows: named like the noun
(``product`` for ``products``), ``<noun>_name``, ``name``, ``<noun>_title`` or
``title``, or carrying the noun
as a synonym; a model with none or several declines ("which column names a
product?"). A plural noun needs its count ("top products by price" declines, as
any ranking does). Any other word — a metric, an aggregation word, a period, a
filter — leaves the shape to the main grammar (:mod:`reconciler.generators.fast`),
which declines a fact without an aggregation word.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import ASCENDING, DESCENDING, NUMBER_WORDS
from reconciler.reading.phrases.labels import row_label
from reconciler.reading.phrases.words import Reading, check_row_count, plural


def ranked_rows(lens: Lens, found: Retrieval, reading: Reading) -> str | None:
    """The SQL of a row ranking (module docstring), or ``None`` when the question
    is not of that shape.

    Raises:
        Declined: the shape, but no single label dimension, a plural noun with no
            count, or a count below one.
    """
    shape = _shape(lens, found, reading)
    if shape is None:
        return None
    descending, count, (noun_at, noun_end), model, column = shape
    noun = " ".join(found.words[noun_at:noun_end])
    label = row_label(model, tuple(found.tokens[noun_at:noun_end]), noun)
    if count is None and plural(found, noun_end - 1):
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a top/bottom ranking without a count")
    if count is not None:
        check_row_count(reading, found)
    n = 1 if count is None else count
    if n < 1:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a ranking of zero rows")
    dialect = lens.config.dialect
    value = sqlglot.parse_one(column.sql, read=dialect)
    name = sqlglot.parse_one(label.sql, read=dialect)
    query = (
        exp.select(exp.alias_(name, label.name), exp.alias_(value, column.name))
        .from_(exp.to_table(model.table, dialect=dialect))
        .order_by(
            exp.Ordered(this=value.copy(), desc=descending, nulls_first=False),
            exp.Ordered(this=name.copy(), desc=False),
        )
        .limit(n)
    )
    return query.sql(dialect=dialect, pretty=True)


def _shape(
    lens: Lens, found: Retrieval, reading: Reading
) -> tuple[bool, int | None, tuple[int, int], Model, Column] | None:
    """``(descending, count, noun span, model, fact)`` of ``top [n] <noun> by <fact>``,
    else ``None``."""
    extras = (
        reading.unknown,
        reading.periods,
        reading.all_time,
        reading.comparison,
        reading.share,
        reading.change_grains,
        reading.change,
        reading.ties,
        reading.grains,
        reading.aggregates,
        reading.who,
    )
    if any(extras) or len(reading.directions) != 1 or len(reading.numbers) > 1:
        return None
    toks = found.tokens
    fact = found.mentions[-1] if found.mentions else None
    if fact is None or fact.kind != "fact" or fact.end != len(toks) or fact.start < 3:
        return None
    by = fact.start - 1
    opener = [i for i in range(by) if toks[i] != "the"][: 2 if reading.numbers else 1]
    if toks[by] != "by" or not opener or toks[opener[0]] not in DESCENDING | ASCENDING:
        return None
    if len(opener) == 2 and not (toks[opener[1]].isdigit() or toks[opener[1]] in NUMBER_WORDS):
        return None
    noun_at = opener[-1] + 1
    model_name = model_nouns(lens).get(toks[noun_at:by])
    others = found.mentions[:-1]
    noun_only = all((m.start, m.end) == (noun_at, by) and m.kind == "dimension" for m in others)
    if model_name is None or len(others) > 1 or not noun_only:
        return None
    model = lens.models[model_name]
    column = next(
        (
            c
            for c in model.facts
            for t in fact.targets
            if t.model == model_name and t.name == c.name
        ),
        None,
    )
    if column is None:
        return None
    return (
        next(iter(reading.directions)),
        reading.numbers[0] if reading.numbers else None,
        (noun_at, by),
        model,
        column,
    )
