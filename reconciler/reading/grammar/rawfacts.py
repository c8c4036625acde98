"""Raw facts of one model's rows, read without an aggregate (pure).

A fact phrase with no aggregation word is a value of each row, not a measure. Three
places read it so:

* a listing keeps the rows a comparison on one of *its own* facts passes, keeps every
  row tied at the extreme, or declines a ranking of a column's values
  (:mod:`reconciler.reading.phrases.rowfacts`, shared with
  :mod:`reconciler.reading.grammar.listing`);
* a ratio or difference of two facts of each row, :func:`row_expression`, below.

A ratio or difference spelling (:func:`reconciler.reading.phrases.twomeasures.find_two_measures`)
whose two sides are each one *fact* phrase with no aggregation word, and whose
closing words name the rows one by one, is not an aggregate but an expression
computed on every row of the facts' model:

==========================================  ===============================================
``ratio of A to B for each <key>``          ``CAST(a AS DOUBLE) / NULLIF(b, 0)``, ``a_per_b``
``A as a percentage of B for each <key>``   ``100 * CAST(a AS DOUBLE) / NULLIF(b, 0)``
``difference between A and B for each …``   ``a - b``, ``a_minus_b``
==========================================  ===============================================

The rows are named by ``each``, ``every`` or ``per`` (``for each``, ``of every``,
``by each`` …) followed by the model's *key*: the dimension over its single-column
``primary_key`` ("for each course ID"), or a noun naming the model itself ("for each
aircraft", shown by that key column), optionally kept by comparisons on the model's
facts ("… for each aircraft code with a payload of over 10000"). The result is the
key and the value, one row per row of the model, in key order (the rows are listed,
not ranked):

    SELECT <key>, <a> <op> <b> AS <a>_<word>_<b> FROM <table> ORDER BY <key>

A side with an aggregation word or a metric, a bare ``per`` spelling, or any word
this shape does not read leaves the question to the other shapes (``None``). The
shape declines when:

* the two facts are not on one model (a per-row expression needs both on one row);
* a side's phrase names several facts of the model (which one?);
* the rows are named by a dimension that is not the model's key ("for each
  manufacturer": several rows each, so the values need an aggregate — "the ratio
  of total capacity to total range for each manufacturer");
* no rows are named at all (a value per row, or one overall? Say "for each …");
* the model has no single-column primary key.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.assembly.text import STOPWORDS
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import DIFFERENCE, RATIO, Declined, DeclineKind, TwoMeasures
from reconciler.reading.lex import AGGREGATE_WORDS
from reconciler.reading.phrases.bounds import split_bounds
from reconciler.reading.phrases.naming import is_key
from reconciler.reading.phrases.rowfacts import is_column, row_bounds

# Words that may open the question before the spelling ("calculate the ratio of …").
_OPENERS = frozenset(
    {"calculate", "compute", "find", "show", "give", "list", "return", "provide", "display", "get"}
)
_ROW_WORDS = frozenset({"for", "per", "of", "by", "across", "each", "every", "the", "all"})
_INTRODUCERS = frozenset({"each", "every", "per"})


def row_expression(lens: Lens, two: TwoMeasures, values: DimensionValues) -> str | None:
    """The SQL of a per-row ratio or difference of two facts (module docstring), or
    ``None`` when the question is not of that shape.

    Args:
        lens: the lens.
        two: the spelling :func:`~reconciler.reading.phrases.twomeasures.find_two_measures` found.
        values: dimension values (for retrieval).

    Raises:
        Declined: the shape, but facts of two models, an ambiguous fact phrase, rows
            named by a dimension that is not the key, or no rows named.
    """
    if two.kind not in (RATIO, DIFFERENCE) or two.per:
        return None
    before, first, second = two.sides
    if any(t not in STOPWORDS and t not in _OPENERS for t in retrieve(lens, before).tokens):
        return None
    second, bounds = split_bounds(lens, second, values)  # "… with a payload of over 100"
    found_a = retrieve(lens, first, values)
    found_b = retrieve(lens, second, values)
    a = _fact_side(found_a, len(found_a.tokens))
    rows_at = found_b.mentions[0].end if found_b.mentions else 0
    b = _fact_side(found_b, rows_at)
    if a is None or b is None:
        return None
    rows = _rows_phrase(lens, found_b, rows_at)
    if rows is None:
        return None
    model = _one_model(lens, (found_a, a), (found_b, b))
    key = _key_of(lens, model, found_b, rows)
    query = _render(lens, model, key, (_fact(model, a), _fact(model, b)), two)
    for condition in row_bounds(lens, model, bounds):
        query = query.where(condition)
    return query.sql(dialect=lens.config.dialect, pretty=True)


def _fact_side(found: Retrieval, end: int) -> Mention | None:
    """The one fact mention of tokens ``[0, end)``, every other token a stopword; ``None``
    when the side is something else (a metric, an aggregation word, another word)."""
    inside = [m for m in found.mentions if m.start < end]
    if len(inside) != 1 or inside[0].kind != "fact" or inside[0].end != end:
        return None
    mention = inside[0]
    loose = [t for i, t in enumerate(found.tokens[:end]) if not mention.start <= i < mention.end]
    if any(t not in STOPWORDS or t in AGGREGATE_WORDS for t in loose):
        return None
    return mention


def _rows_phrase(lens: Lens, found: Retrieval, start: int) -> tuple[int, int] | None:
    """The span of the phrase naming the rows after ``start`` ("for each course id"):
    a model noun or one dimension mention, introduced by ``each``/``every``/``per``;
    ``None`` when the words after ``start`` are anything else.

    Raises:
        Declined: nothing after the facts names the rows.
    """
    toks = found.tokens
    i = start
    while i < len(toks) and toks[i] in _ROW_WORDS:
        i += 1
    if i == len(toks) and all(t in STOPWORDS for t in toks[start:]):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            "a ratio of two facts: of each row, or of totals? Say 'for each <key>' "
            "(or 'the ratio of total … to total …')",
        )
    if not _INTRODUCERS & set(toks[start:i]):
        return None
    nouns = model_nouns(lens)
    width = next((n for n in range(len(toks) - i, 0, -1) if toks[i : i + n] in nouns), 0)
    mention = next((m for m in found.mentions if m.start == i), None)
    if width and (mention is None or mention.end <= i + width):
        end = i + width
    elif mention is not None and mention.kind == "dimension":
        end = mention.end
    else:
        return None
    # stopwords may follow: the "with" of a comparison split off ("… code with")
    return (i, end) if all(t in STOPWORDS for t in toks[end:]) else None


def _one_model(lens: Lens, *sides: tuple[Retrieval, Mention]) -> Model:
    """The one model both fact phrases are on."""
    places = [{t.model for t in m.targets} for _, m in sides]
    shared = sorted(places[0] & places[1])
    if len(shared) != 1:
        words = [" ".join(f.words[m.start : m.end]) for f, m in sides]
        if not shared:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{words[0]!r} and {words[1]!r} are facts of different models "
                f"({', '.join(sorted(places[0]))} / {', '.join(sorted(places[1]))}): "
                "a value of each row needs both on one row",
            )
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{words[0]!r} and {words[1]!r} are facts of several models: which one?",
        )
    return lens.models[shared[0]]


def _fact(model: Model, mention: Mention) -> Column:
    """The one fact of ``model`` the mention names."""
    named = [c for c in model.facts if any(is_column(t, model, c) for t in mention.targets)]
    if len(named) != 1:
        listed = ", ".join(c.name for c in named)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"the fact phrase names several facts of model {model.name!r}: {listed}",
        )
    return named[0]


def _key_of(lens: Lens, model: Model, found: Retrieval, rows: tuple[int, int]) -> Column:
    """The key column the rows phrase names: the model's noun, or its key dimension."""
    words = " ".join(found.words[rows[0] : rows[1]])
    if len(model.primary_key) != 1:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"model {model.name!r} has no single-column primary key to name its rows",
        )
    keys = [c for c in model.dimensions if is_key(lens, model.name, c.name)]
    noun = model_nouns(lens).get(found.tokens[rows[0] : rows[1]])
    if noun == model.name:
        return keys[0] if keys else Column(name=model.primary_key[0])
    mention = next((m for m in found.mentions if (m.start, m.end) == rows), None)
    named = [c for c in keys if mention and any(is_column(t, model, c) for t in mention.targets)]
    if named:
        return named[0]
    raise Declined(
        DeclineKind.UNSAFE_RESULT,
        f"{words!r} is not the key of model {model.name!r}: several of its rows share one, "
        "so the facts need an aggregate (e.g. 'the ratio of total … to total … for each …')",
    )


def _render(
    lens: Lens, model: Model, key: Column, facts: tuple[Column, Column], two: TwoMeasures
) -> exp.Select:
    dialect = lens.config.dialect
    a, b = (sqlglot.parse_one(c.sql, read=dialect) for c in facts)
    value: exp.Expr
    if two.kind == DIFFERENCE:
        value = exp.Sub(this=a, expression=b)
    else:
        value = exp.Div(
            this=exp.cast(a, "double"),
            expression=exp.Nullif(this=b, expression=exp.Literal.number(0)),
        )
        if two.percent:
            value = exp.Mul(this=exp.Literal.number(100), expression=value)
    name = f"{facts[0].name}_{two.word}_{facts[1].name}"
    key_sql = sqlglot.parse_one(key.sql, read=dialect)
    query = (
        exp.select(exp.alias_(key_sql, key.name), exp.alias_(value, name))
        .from_(exp.to_table(model.table, dialect=dialect))
        .order_by(exp.Ordered(this=exp.column(key.name), desc=False))
    )
    return query
