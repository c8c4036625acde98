"""Counts of the distinct values of a dimension: "How many different cities are there?" (pure).

A question that asks how many values one dimension takes, not how many rows hold
them, is ``COUNT(DISTINCT <dimension>)`` on the dimension's model (NULL is no value,
so it is not counted):

    How many different positions are there?
    How many distinct nationalities are there among the players?
    What is the number of unique cities in 'Avon'?     (a value of another column)
    Count the number of different venues.

Its frame is an opener — ``how many``, or ``[what is] [the] [total] number of`` /
``count [the] [number of]`` — then ``different``, ``distinct`` or ``unique`` (after
``how many`` a plural dimension followed by ``are there`` says it too), the
dimension, and a tail of fillers (``are there``, ``listed``, ``in``, ``for``,
``among``, ``the`` …), the model's noun, and values of the same model, each an
equality in the ``WHERE``:

    SELECT COUNT(DISTINCT <model>.<dimension>) AS <dimension>_count
    FROM <table> AS <model> [WHERE <model>.<column> = '<value>' AND …]

Any other word means another shape (``None``). A dimension named like its own
model's rows (``how many makers`` when the model is ``car_makers``: the makers, or
their names?) is left to the count of entities. Inside the frame it declines: a
dimension several models hold and no noun picks one, a value of another model
(through which join?), or two values of one column (all, or any?).
"""

from __future__ import annotations

from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.related import conditions, qualified
from reconciler.reading.phrases.words import plural

_DISTINCT = frozenset({"different", "distinct", "unique"})
_OPENERS: tuple[tuple[str, ...], ...] = (
    ("how", "many"),
    ("what", "is", "the", "total", "number", "of"),
    ("what", "is", "the", "number", "of"),
    ("what", "is", "the", "count", "of"),
    ("count", "the", "number", "of"),
    ("find", "the", "number", "of"),
    ("give", "the", "number", "of"),
    ("show", "the", "number", "of"),
    ("return", "the", "number", "of"),
    ("the", "total", "number", "of"),
    ("the", "number", "of"),
    ("total", "number", "of"),
    ("number", "of"),
    ("count", "the"),
    ("count",),
)
_TAIL = frozenset(
    {"are", "is", "there", "exist", "listed", "in", "for", "of", "among", "across", "the", "all"}
)
_ARE_THERE = ("are", "there")


def distinct_count(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a count of a dimension's distinct values (module docstring), or
    ``None`` when the question is not of that shape.

    Raises:
        Declined: the shape, with a dimension of no one model, a value of another
            model, or two values of one column.
    """
    found = retrieve(lens, question, values)
    toks = found.tokens
    opener = next((o for o in _OPENERS if toks[: len(o)] == o), None)
    if opener is None:
        return None
    i = len(opener)
    said = i < len(toks) and toks[i] in _DISTINCT
    i += said
    dim = next((m for m in found.mentions if m.start == i), None)
    if dim is None or dim.kind != "dimension":
        return None
    after = toks[dim.end : dim.end + 2]
    if not said and not (opener == ("how", "many") and plural(found, dim.end - 1)):
        return None
    if not said and after != _ARE_THERE:
        return None  # "how many orders were shipped": rows, not values
    tail = _tail(lens, found, dim.end)
    if tail is None:
        return None
    nouns, filters = tail
    model = _model(lens, found, dim, nouns)
    if _names_rows(lens, found.tokens[dim.start : dim.end]):
        return None  # the model's rows named by its dimension: the count of entities
    equalities = _equalities(found, filters, model)
    dialect = lens.config.dialect
    column = next(c for c in lens.models[model].dimensions if c.name in _names(dim, model))
    count = exp.Count(this=exp.Distinct(expressions=[qualified(column.sql, model, dialect)]))
    query = exp.select(exp.alias_(count, f"{column.name}_count")).from_(
        exp.alias_(exp.to_table(lens.models[model].table, dialect=dialect), model)
    )
    where = conditions(lens, model, equalities)
    if where:
        query = query.where(exp.and_(*where))
    return query.sql(dialect=dialect, pretty=True)


def _tail(lens: Lens, found: Retrieval, start: int) -> tuple[list[str], list[Mention]] | None:
    """``(models the tail's nouns name, its value mentions)``, or ``None`` at a word
    the tail does not account for."""
    toks = found.tokens
    starts = {m.start: m for m in found.mentions}
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    named: list[str] = []
    filters: list[Mention] = []
    k = start
    while k < len(toks):
        mention = starts.get(k)
        width = next(
            (n for n in range(min(longest, len(toks) - k), 0, -1) if toks[k : k + n] in nouns),
            0,
        )
        if width and (mention is None or mention.end <= k + width):
            named.append(nouns[toks[k : k + width]])
            k += width
        elif mention is not None and mention.kind == "value":
            filters.append(mention)
            k = mention.end
        elif mention is None and toks[k] in _TAIL:
            k += 1
        else:
            return None
    return named, filters


def _model(lens: Lens, found: Retrieval, dim: Mention, nouns: list[str]) -> str:
    """The one model whose dimension ``dim`` is: its only one, or the one the tail's
    noun names."""
    models = {t.model for t in dim.targets if t.kind == "dimension"}
    phrase = " ".join(found.words[dim.start : dim.end])
    if nouns and (len(set(nouns)) != 1 or nouns[0] not in models):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} is not a column of {nouns[0]!r}: its values through which join?",
        )
    picked = set(nouns) or models
    if len(picked) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} is a column of {', '.join(sorted(picked))}: the values of which?",
        )
    return picked.pop()


def _names(dim: Mention, model: str) -> set[str]:
    return {t.name for t in dim.targets if t.model == model and t.kind == "dimension"}


def _names_rows(lens: Lens, said: tuple[str, ...]) -> bool:
    """Whether a model noun ends with the dimension's words ("makers" of
    ``car_makers``): the phrase may count that model's rows."""
    return any(noun[-len(said) :] == said for noun in model_nouns(lens))


def _equalities(found: Retrieval, filters: list[Mention], model: str) -> list[tuple[str, str]]:
    """``(dimension, value)`` of each value of ``model`` the tail names."""
    out: list[tuple[str, str]] = []
    for v in filters:
        phrase = " ".join(found.words[v.start : v.end])
        places = {(t.name, t.value) for t in v.targets if t.model == model and t.value}
        if len(places) != 1:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{phrase!r} is not one value of a column of model {model!r}",
            )
        ((name, value),) = places
        if any(n == name for n, _ in out):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"several values of {model}.{name} are named: all, or any?",
            )
        out.append((name, value))
    return out
