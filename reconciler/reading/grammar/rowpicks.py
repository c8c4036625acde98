"""Rows picked by a superlative adjective: "the hometown of the youngest teacher" (pure).

An adjective in the superlative before a noun naming a model picks that model's rows
at the extreme of one quantity the adjective names, and the question asks for facts or
attributes of those rows, no aggregate:

==========================  ====================================================
``youngest`` / ``oldest``   the fact named ``age``, lowest / highest first
``tallest``                 the fact named ``height``, highest first
``heaviest`` / ``lightest`` the fact named ``weight``, highest / lowest first
``earliest``                the model's one time dimension, earliest first
``latest`` / ``newest`` /   the model's one time dimension, latest first
``most recent``
==========================  ====================================================

The quantity is looked up through the lens's own phrases ("age" as a phrase of the
lens), on the noun's model or on a model its rows reach along many-to-one or one-to-one
joins (:mod:`reconciler.reading.phrases.rowjoins`: "the money rank of the tallest poker
player" ranks poker players by their person's height). The question is
``[opener] [the] <columns> of|for the <adjective> <noun> [<stopwords and values of the
noun's model>]``: the columns are phrases of the noun's model or of a model it reaches
so, or ``name``/``title`` (the model's label) and ``id`` (its one-column key); with no
column ("who is the oldest singer?") the label is shown.

Every row tied at the extreme is kept and a NULL quantity never wins:

    SELECT <columns> FROM (SELECT <columns>, RANK() OVER (ORDER BY <quantity> DESC) AS
        dst_rank FROM <table> [LEFT JOIN …] WHERE <quantity> IS NOT NULL [AND <value
        filters>]) AS picked WHERE dst_rank <= 1

Any other word, a second superlative, an adjective whose quantity the lens does not
name, or no noun after the adjective leaves the question to the other shapes
(``None``). The shape declines when the quantity names several columns the rows reach
(which one?), when the noun's model has several time dimensions (which date?), or when
an asked phrase or a value is not one of the rows' columns.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import Path
from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.assembly.text import STOPWORDS
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import KEY_WORDS, LABEL_WORDS
from reconciler.reading.phrases.labels import row_label
from reconciler.reading.phrases.rowjoins import listed_column, reach, with_joins
from reconciler.reading.phrases.words import phrase_of

# adjective -> (the quantity it names, highest first); ``None``: the one time dimension
_ADJECTIVES: dict[tuple[str, ...], tuple[str | None, bool]] = {
    ("youngest",): ("age", False),
    ("oldest",): ("age", True),
    ("tallest",): ("height", True),
    ("heaviest",): ("weight", True),
    ("lightest",): ("weight", False),
    ("earliest",): (None, False),
    ("latest",): (None, True),
    ("newest",): (None, True),
    ("most", "recent"): (None, True),
}
_OPENERS = frozenset(
    {"what", "who", "which", "find", "show", "give", "list", "return", "tell", "display"}
)
# The only words between the asked columns ("what are the name and the age of …"): a
# preposition there ("the names for all the songs of …") says the columns are of other rows.
_BETWEEN = frozenset({"the", "and", "is", "are", "was", "were", "me", "us", "a", "an", "both"})
_RANK = "dst_rank"
_MENTIONED = ("dimension", "time_dimension", "fact")


def picked_rows(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a row pick by a superlative adjective (module docstring), or ``None``
    when the question is not of that shape.

    Raises:
        Declined: the shape, but a quantity naming several columns, several time
            dimensions, or an asked phrase or value that is not a column of the rows.
    """
    found = retrieve(lens, question, values)
    spot = _adjective(found)
    if spot is None:
        return None
    at, end, (quantity, descending) = spot
    noun = _noun(lens, found, end)
    if noun is None or found.tokens[at - 1 : at] != ("the",):
        return None
    model = lens.models[noun[1]]
    asked = _asked(found, at - 1)
    filters = _filters(found, noun[0])
    if asked is None or filters is None:
        return None
    paths: list[Path] = []
    ranked = _quantity(lens, model, quantity, values, paths)
    if ranked is None:
        return None
    words = (found.tokens[end : noun[0]], " ".join(found.words[end : noun[0]]))
    columns = [_column(lens, model, found, item, paths, words) for item in asked]
    if not columns:
        label = row_label(model, *words)
        columns = [(label.name, label.sql)]
    return _render(
        lens, model, columns, (ranked, descending), _conditions(model, found, filters), paths
    )


def _adjective(found: Retrieval) -> tuple[int, int, tuple[str | None, bool]] | None:
    """``(start, end, meaning)`` of the one superlative adjective outside lens phrases."""
    covered = found.covered()
    spots = [
        (i, i + len(words), meaning)
        for i in range(len(found.tokens))
        for words, meaning in _ADJECTIVES.items()
        if found.tokens[i : i + len(words)] == words and i not in covered
    ]
    return spots[0] if len(spots) == 1 else None


def _noun(lens: Lens, found: Retrieval, at: int) -> tuple[int, str] | None:
    """``(end, model)`` of the widest model noun starting at ``at``."""
    nouns = model_nouns(lens)
    for width in range(len(found.tokens) - at, 0, -1):
        name = nouns.get(found.tokens[at : at + width])
        if name is not None:
            return at + width, name
    return None


def _asked(found: Retrieval, the: int) -> list[Mention | int] | None:
    """The columns asked before ``of|for the <adjective>``: mentions, or the index of a
    ``name``/``id`` word; none for ``who|which is the <adjective> …``; ``None`` when
    another word stands there."""
    toks = found.tokens
    if the == 0:
        return None
    if toks[the - 1] not in ("of", "for"):
        loose = [t for t in toks[1:the] if t not in STOPWORDS]
        return [] if toks[0] in ("who", "which") and not loose else None
    starts = {m.start: m for m in found.mentions}
    out: list[Mention | int] = []
    i = 0
    while i < the - 1:
        mention = starts.get(i)
        if mention is not None:
            if mention.kind not in _MENTIONED or mention.end > the - 1:
                return None
            out.append(mention)
            i = mention.end
            continue
        if toks[i] in LABEL_WORDS | KEY_WORDS:
            out.append(i)
        elif toks[i] not in _BETWEEN and not (i == 0 and toks[i] in _OPENERS):
            return None
        i += 1
    return out if out else None


def _filters(found: Retrieval, end: int) -> list[Mention] | None:
    """The value mentions after the noun (every other word a stopword), else ``None``."""
    starts = {m.start: m for m in found.mentions}
    out: list[Mention] = []
    i = end
    while i < len(found.tokens):
        mention = starts.get(i)
        if mention is not None and mention.kind == "value":
            out.append(mention)
            i = mention.end
            continue
        if mention is not None or found.tokens[i] not in STOPWORDS:
            return None
        i += 1
    return out


def _quantity(
    lens: Lens, model: Model, quantity: str | None, values: DimensionValues, paths: list[Path]
) -> str | None:
    """The SQL of the quantity the adjective names, on ``model`` or a model it reaches
    (its path added to ``paths``); ``None`` when the lens names none there.

    Raises:
        Declined: several such columns, or several time dimensions on ``model``.
    """
    if quantity is None:
        dates = model.time_dimensions
        if len(dates) > 1:
            listed = ", ".join(c.name for c in dates)
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"the earliest or latest {model.name} by which date? ({listed})",
            )
        return dates[0].sql if dates else None
    found = retrieve(lens, quantity, values)
    if [m.kind for m in found.mentions] != ["fact"] or found.covered() != {0}:
        return None
    targets = found.mentions[0].targets
    fits = [t for t in targets if t.model == model.name or _reached(lens, model.name, t.model)]
    if not fits:
        return None
    if len(fits) > 1:
        places = ", ".join(f"{t.model}.{t.name}" for t in fits)
        raise Declined(DeclineKind.AMBIGUOUS_READING, f"{quantity!r} could mean {places}")
    return listed_column(lens, model, tuple(fits), quantity, paths)[1]


def _reached(lens: Lens, base: str, other: str) -> bool:
    try:
        return reach(lens, base, other) is not None
    except Declined:
        return True  # several paths: resolving the column declines, naming them


def _column(
    lens: Lens,
    model: Model,
    found: Retrieval,
    item: Mention | int,
    paths: list[Path],
    noun: tuple[tuple[str, ...], str],
) -> tuple[str, str]:
    """``(alias, SQL)`` of an asked column: a phrase, or a ``name`` word (the label of
    the rows ``noun`` names) or an ``id`` word (the one-column key)."""
    if isinstance(item, Mention):
        return listed_column(lens, model, item.targets, phrase_of(found, item), paths)
    if found.tokens[item] in KEY_WORDS:
        if len(model.primary_key) != 1:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING, f"which column is the id of model {model.name!r}?"
            )
        return model.primary_key[0], model.primary_key[0]
    label = row_label(model, *noun)
    return label.name, label.sql


def _conditions(model: Model, found: Retrieval, filters: list[Mention]) -> list[tuple[Column, str]]:
    """``(dimension, value)`` of each value named after the noun, on the noun's model.

    Raises:
        Declined: a value that is not one value of one of the model's dimensions.
    """
    out: list[tuple[Column, str]] = []
    for mention in filters:
        places = {(t.name, t.value) for t in mention.targets if t.model == model.name}
        if len(places) != 1:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{phrase_of(found, mention)!r} is not one value of a column of model "
                f"{model.name!r}",
            )
        ((name, value),) = places
        assert value is not None
        out.append((next(c for c in model.dimensions if c.name == name), value))
    return out


def _render(
    lens: Lens,
    model: Model,
    columns: list[tuple[str, str]],
    ranked: tuple[str, bool],
    conditions: list[tuple[Column, str]],
    paths: list[Path],
) -> str:
    dialect = lens.config.dialect
    quantity = sqlglot.parse_one(ranked[0], read=dialect)
    window = exp.Window(
        this=exp.Anonymous(this="RANK"),
        order=exp.Order(expressions=[exp.Ordered(this=quantity.copy(), desc=ranked[1])]),
    )
    inner = (
        exp.select(
            *(exp.alias_(sqlglot.parse_one(sql, read=dialect), alias) for alias, sql in columns),
            exp.alias_(window, _RANK),
        )
        .from_(exp.to_table(model.table, dialect=dialect))
        .where(exp.not_(quantity.copy().is_(exp.null())))
    )
    for column, value in conditions:
        inner = inner.where(
            sqlglot.parse_one(column.sql, read=dialect).eq(exp.Literal.string(value))
        )
    inner = with_joins(lens, inner, model.name, paths)
    aliases = [alias for alias, _ in columns]
    outer = (
        exp.select(*(exp.column(a) for a in aliases))
        .from_(inner.subquery("picked"))
        .where(exp.column(_RANK) <= exp.Literal.number(1))
        .order_by(*(exp.Ordered(this=exp.column(a), desc=False) for a in aliases))
    )
    return outer.sql(dialect=dialect, pretty=True)
