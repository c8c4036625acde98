"""Values of a column held by n rows or more: "hometowns shared by at least two teachers" (pure).

A question that asks which values of one dimension at least (more than, exactly …)
n rows of its model hold:

    Show the hometowns shared by at least two teachers.
    What are the nationalities that are shared by more than 3 people?
    Which positions have at least 2 players?

is the dimension's values, each once, grouped over the rows of the model the noun
names and kept by the count of those rows (``COUNT(DISTINCT <key>)``, or ``COUNT(*)``
of a composite key's rows); a NULL value is no value, so it is never listed:

    SELECT <model>.<dimension> FROM <table> AS <model>
    WHERE <model>.<dimension> IS NOT NULL
    GROUP BY <model>.<dimension> HAVING COUNT(DISTINCT <model>.<key>) >= n

Its frame is an opener (``show``, ``list``, ``give``, ``find``, ``return``, ``what
are``, ``which are``; ``which`` alone before ``have``), ``the``, ``different`` or
``distinct`` optional, the dimension, then ``[that|which] [are] shared by`` or
``have``, a comparison (``at least``, ``more than``, ``over``, ``exactly``, ``at
most``, ``fewer than``, ``less than``), a whole number (or ``one`` … ``ten``) and the
noun of the dimension's own model. A value with no row is no value of the column, so
a comparison below n is read the same way. Any other wording — a dimension of another
model (which rows of which relation?) — is another shape (``None``). Inside the frame
it declines a phrase that is not one dimension of that model, a model with no
primary key, or a COUNT metric with filters on it (the lens counts those rows its own
way).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Read
from reconciler.reading.lex import NUMBER_WORDS
from reconciler.reading.phrases.related import qualified

_COMPARE = {
    "at least": exp.GTE,
    "no fewer than": exp.GTE,
    "more than": exp.GT,
    "over": exp.GT,
    "exactly": exp.EQ,
    "at most": exp.LTE,
    "no more than": exp.LTE,
    "fewer than": exp.LT,
    "less than": exp.LT,
}
_SIGN = {exp.GTE: ">=", exp.GT: ">", exp.EQ: "=", exp.LTE: "<=", exp.LT: "<"}
_CMP = "|".join(sorted((re.escape(c) for c in _COMPARE), key=len, reverse=True))
_NUMBER = r"\d+|" + "|".join(NUMBER_WORDS)
_OPEN = (
    r"(?:(?:please\s+)?(?:show|list|give|find|return)(?:\s+me)?(?:\s+all)?"
    r"|(?:what|which)\s+are(?:\s+all)?)"
)
_TAIL = rf"\s+(?P<cmp>{_CMP})\s+(?P<n>{_NUMBER})\s+(?P<noun>[^?.!]+?)\s*[?.!]*\s*$"
_FORMS = (
    re.compile(
        rf"^\s*{_OPEN}\s+(?:the\s+)?(?:(?:different|distinct)\s+)?(?P<dim>.+?)\s+"
        rf"(?:(?:that|which)\s+are\s+)?shared\s+by{_TAIL}",
        re.I,
    ),
    re.compile(
        rf"^\s*(?:which|what)\s+(?:(?:different|distinct)\s+)?(?P<dim>.+?)\s+(?:have|has){_TAIL}",
        re.I,
    ),
)


def shared_values(lens: Lens, question: str, values: DimensionValues) -> Read | None:
    """``(SQL, reads_as)`` of the values of a dimension held by n rows or more (module
    docstring), or ``None`` when the question is not of that shape.

    Raises:
        Declined: the shape, with a phrase that is not one dimension of the noun's
            model, a model without a primary key, or a filtered COUNT metric on it.
    """
    match = next((m for f in _FORMS if (m := f.match(question))), None)
    if match is None:
        return None
    model = model_nouns(lens).get(tokenize(match["noun"]))
    if model is None:
        return None
    found = retrieve(lens, match["dim"], values)
    said = tokenize(match["dim"])
    whole = [m for m in found.mentions if m.start == 0 and m.end == len(said)]
    names = sorted(
        {t.name for m in whole for t in m.targets if m.kind == "dimension" and t.model == model}
    )
    if not whole or all(t.model != model for m in whole for t in m.targets):
        return None  # a column of another model: through which relation?
    if len(names) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{match['dim']!r} is not one dimension of {model}"
            + (f" ({', '.join(names)})" if names else ""),
        )
    key = lens.models[model].primary_key
    if not key:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"counting {model}: model {model!r} declares no primary_key to count",
        )
    dialect = lens.config.dialect
    for metric in lens.metrics.values():
        tree = sqlglot.parse_one(metric.expression, read=dialect)
        if metric.model == model and metric.filters and tree.find(exp.Count):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"metric {metric.name!r} counts {model} rows with filters: does the question "
                f"mean it, or every {model} row?",
            )
    column = next(c for c in lens.models[model].dimensions if c.name == names[0])
    value = qualified(column.sql, model, dialect)
    one = (
        exp.Distinct(expressions=[qualified(key[0], model, dialect)])
        if len(key) == 1
        else exp.Star()
    )
    n = match["n"].lower()
    number = NUMBER_WORDS[n] if n in NUMBER_WORDS else int(n)
    compare = _COMPARE[" ".join(match["cmp"].lower().split())]
    query = (
        exp.select(exp.alias_(value.copy(), column.name))
        .from_(exp.alias_(exp.to_table(lens.models[model].table, dialect=dialect), model))
        .where(exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null())))
        .group_by(value.copy())
        .having(compare(this=exp.Count(this=one), expression=exp.Literal.number(number)))
    )
    reads = f"values of {model}.{column.name} held by {_SIGN[compare]} {number} {model} rows"
    return query.sql(dialect=dialect, pretty=True), reads
