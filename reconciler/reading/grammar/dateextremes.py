"""The first or last date of some rows: "What is the latest order date?" (pure).

A question asking for the earliest or latest value of one time dimension reads as
``MIN`` or ``MAX`` of it, over the rows of its model, kept by that model's own
values:

    What is the latest order date?
    What is the earliest signup date of customers in Europe?
    When was the last order placed?            (the model's default time dimension)
    When was the first transcript released?  (its one date, whatever the verb)
    What is the last transcript release date?

It is one number-like answer (one date), never a row: "When is the first transcript
released? List the date and details." asks for the row, and names a column this
shape does not hold, so it is another shape's. The extreme word must stand right
before the date ("the latest order date") or the rows' noun after "when"
("When was the last order …"); a noun of another model, a breakdown, a period, a
number, a metric or any other word outside the lens's vocabulary means another shape
(``None``). Rows with several dates and no default decline when the date is not named
(which one?).

"When did the episode 'A Love of a Lifetime' air?" (no extreme word) asks for the date
of the rows its values name: the date whose name shares its root with the closing verb
("air": ``air_date``), else the rows' one date; rows with several dates and a verb that
names none of them decline.

Words: ``earliest``, ``first``, ``oldest``, ``minimum``, ``min`` read ``MIN``;
``latest``, ``last``, ``newest``, ``most recent``, ``maximum``, ``max`` read ``MAX``.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.assembly.text import DATE_VERBS, STOPWORDS, tokenize, verb_root
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.negation import Negations
from reconciler.reading.phrases.related import conditions
from reconciler.reading.phrases.rowvalues import value_filters

_EARLIEST = frozenset({"earliest", "first", "oldest", "minimum", "min"})
_LATEST = frozenset({"latest", "last", "newest", "maximum", "max"})
_OPENERS = frozenset({"what", "when", "give", "show", "find", "tell", "return", "list"})
_FILLERS = frozenset({"is", "was", "were", "are", "did", "does", "the", "a", "an", "of", "for"})


def date_extreme(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of an earliest/latest-date question (module docstring), or ``None``:

        SELECT MIN(<date>) AS earliest_<date> FROM <table> AS <model> [WHERE <values>]

    Raises:
        Declined: the rows' noun names a model with several dates and no default, a
            value of another model, or two values of one column.
    """
    found = retrieve(lens, question, values)
    toks = found.tokens
    if not toks or toks[0] not in _OPENERS:
        return None
    at, function = _extreme(toks)
    if at is None:
        return _row_date(lens, found)
    after = at + 2 if toks[at : at + 2] == ("most", "recent") else at + 1
    starts = {m.start: m for m in found.mentions}
    dated = starts.get(after)
    noun = _noun_at(lens, toks, after)
    if dated is not None and dated.kind == "time_dimension":
        column, model = _one_date(lens, found, dated)
        end = dated.end
    elif noun is not None and (toks[0] == "when" or _dated_noun(lens, toks, noun)):
        model = lens.models[noun[1]]
        column = _default_date(model)
        end = noun[0]
        if len(model.time_dimensions) == 1:  # its one date: "… transcript released?"
            end = _verb_of_one_date(toks, end)
    else:
        return None
    if not _only_fillers(lens, found, model, (at, end), noun):
        return None
    equalities = _values(found, model)
    dialect = lens.config.dialect
    alias = f"{'earliest' if function == 'MIN' else 'latest'}_{column.name}"
    bare = sqlglot.parse_one(column.sql, read=dialect)
    for col in bare.find_all(exp.Column):
        col.set("table", exp.to_identifier(model.name))
    aggregate = exp.Min(this=bare) if function == "MIN" else exp.Max(this=bare)
    table = exp.alias_(exp.to_table(model.table, dialect=dialect), model.name)
    query = exp.select(exp.alias_(aggregate, alias)).from_(table)
    where = conditions(lens, model.name, equalities)
    if where:
        query = query.where(exp.and_(*where))
    return query.sql(dialect=dialect, pretty=True)


_AUXILIARIES = frozenset({"did", "does", "was", "is", "were"})


def _row_date(lens: Lens, found: Retrieval) -> str | None:
    """``SELECT <date> FROM <table> AS <model> WHERE <values>`` of "When did the episode
    'A Love of a Lifetime' air?": the date of the rows the values name — the date whose
    word shares its root with the closing verb ("air": ``air_date``), else the rows' one
    date — or ``None`` when the question is not of that shape.

    Raises:
        Declined: a verb that names no date of rows with several, or two values of one
            column.
    """
    toks = found.tokens
    if toks[:1] != ("when",) or toks[1:2] == () or toks[1] not in _AUXILIARIES:
        return None
    values = [m for m in found.mentions if m.kind == "value"]
    models = {t.model for v in values for t in v.targets}
    if len(models) != 1:
        return None
    model = lens.models[models.pop()]
    covered = {i for m in found.mentions for i in range(m.start, m.end)}
    if any(m.kind not in ("value", "dimension") for m in found.mentions):
        return None
    nouns = model_nouns(lens)
    loose = [
        i
        for i, t in enumerate(toks[2:], start=2)
        if i not in covered and t not in _FILLERS | STOPWORDS and nouns.get((t,)) != model.name
    ]
    if len(loose) > 1 or (loose and loose[0] != len(toks) - 1):
        return None  # more than one closing verb
    column = _dated_by(model, toks[loose[0]] if loose else None)
    table = exp.alias_(exp.to_table(model.table, dialect=lens.config.dialect), model.name)
    bare = sqlglot.parse_one(column.sql, read=lens.config.dialect)
    for col in bare.find_all(exp.Column):
        col.set("table", exp.to_identifier(model.name))
    where = conditions(lens, model.name, _values(found, model))
    query = exp.select(exp.alias_(bare, column.name)).from_(table).where(exp.and_(*where))
    return query.sql(dialect=lens.config.dialect, pretty=True)


def _dated_by(model: Model, verb: str | None) -> Column:
    """The time dimension a closing verb names (its root in the date's name or a synonym:
    "air" for ``air_date``), else the model's one date.

    Raises:
        Declined: no date, or several and the verb names none of them.
    """
    if verb is not None:
        root = verb_root(verb)
        named = [
            c
            for c in model.time_dimensions
            if any(verb_root(t) == root for text in (c.name, *c.synonyms) for t in tokenize(text))
        ]
        if len(named) == 1:
            return named[0]
    if len(model.time_dimensions) == 1:
        return model.time_dimensions[0]
    raise Declined(
        DeclineKind.AMBIGUOUS_READING if model.time_dimensions else DeclineKind.MISSING_IN_LENS,
        f"which date of {model.name!r}? Name it ('the <date> of …')",
    )


def _extreme(toks: tuple[str, ...]) -> tuple[int | None, str]:
    """``(index, MIN|MAX)`` of the one extreme word, or ``(None, "")``."""
    hits = [
        (i, "MIN" if t in _EARLIEST else "MAX")
        for i, t in enumerate(toks)
        if t in _EARLIEST | _LATEST or toks[i : i + 2] == ("most", "recent")
    ]
    return hits[0] if len(hits) == 1 else (None, "")


_DATE_WORDS = frozenset({"date", "day", "time"})


def _dated_noun(lens: Lens, toks: tuple[str, ...], noun: tuple[int, str]) -> bool:
    """Whether "date" follows the rows' noun, past at most one word, on rows with one
    date ("the last transcript release date")."""
    ahead = toks[noun[0] : noun[0] + 2]
    dates = lens.models[noun[1]].time_dimensions
    return len(dates) == 1 and any(t in _DATE_WORDS for t in ahead)


def _verb_of_one_date(toks: tuple[str, ...], end: int) -> int:
    """The index past the word (a verb, "released") and date word after the noun of
    rows with one date: with one date, the verb can name no other."""
    if toks[end : end + 1] and toks[end] in _DATE_WORDS:
        return end + 1
    if toks[end + 1 : end + 2] and toks[end + 1] in _DATE_WORDS:
        return end + 2
    if end + 1 == len(toks) or toks[end + 1 : end + 2] == ("?",):
        return end + 1  # "When was the last transcript released?"
    return end


def _noun_at(lens: Lens, toks: tuple[str, ...], at: int) -> tuple[int, str] | None:
    """``(index after, model)`` of the longest model noun at ``at``."""
    nouns = model_nouns(lens)
    for width in range(max((len(k) for k in nouns), default=0), 0, -1):
        if toks[at : at + width] in nouns:
            return at + width, nouns[toks[at : at + width]]
    return None


def _one_date(lens: Lens, found: Retrieval, dated: Mention) -> tuple[Column, Model]:
    places = sorted({(t.model, t.name) for t in dated.targets})
    if len(places) != 1:
        phrase = " ".join(found.words[dated.start : dated.end])
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{phrase!r} could mean {listed}: name the one meant"
        )
    model = lens.models[places[0][0]]
    return next(c for c in model.time_dimensions if c.name == places[0][1]), model


def _default_date(model: Model) -> Column:
    if len(model.time_dimensions) > 1 and model.default_time_dimension is None:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"which date of {model.name!r}? Name it ('the latest <date> of …')",
        )
    column = model.time_dimension()
    if column is None:
        raise Declined(DeclineKind.MISSING_IN_LENS, f"{model.name!r} has no date")
    return column


def _only_fillers(
    lens: Lens,
    found: Retrieval,
    model: Model,
    read: tuple[int, int],
    noun: tuple[int, str] | None,
) -> bool:
    """Whether every word outside the extreme and its date is a filler, the opener, a
    date verb, the model's own noun or one of its values."""
    toks = found.tokens
    covered: set[int] = set(range(*read))
    for m in found.mentions:
        if m.kind == "value" or (m.kind == "time_dimension" and _verb(found, m)):
            covered |= set(range(m.start, m.end))
        elif not set(range(m.start, m.end)) <= covered:
            return False  # a column, metric or fact: another shape's question
    nouns = model_nouns(lens)
    i = 1
    while i < len(toks):
        if i in covered:
            i += 1
            continue
        width = next((w for w in range(4, 0, -1) if nouns.get(toks[i : i + w]) == model.name), 0)
        if width:
            i += width
            continue
        if toks[i] not in _FILLERS | DATE_VERBS and toks[i] not in STOPWORDS - {"not", "no"}:
            return False
        i += 1
    return noun is None or noun[1] == model.name


def _verb(found: Retrieval, m: Mention) -> bool:
    """Whether ``m`` is one date verb ("placed"), not the date's name."""
    return m.end - m.start == 1 and found.tokens[m.start] in DATE_VERBS


def _values(found: Retrieval, model: Model) -> list[tuple[str, str]]:
    """``(dimension, stored value)`` of each value the question names, on ``model``'s own
    columns (:func:`~reconciler.reading.phrases.rowvalues.value_filters`: by its label
    when the label and another column store it, several joined by "or" refused here).

    Raises:
        Declined: a value of no one column of ``model``, or two values of one column.
    """
    values = [m for m in found.mentions if m.kind == "value"]
    filters, _ = value_filters(found, model, values, Negations())
    if len({col.name for col, _ in filters}) < len(filters):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"several values of one column of {model.name!r} are named: which date?",
        )
    return [(col.name, value) for col, value in filters]
