"""Counts of entities compared: "How many authors have more than 2 papers?" (pure).

``how many <A> [that|who|which] [have|has|had] <comparison> <n> <B>`` (or ``[what is]
[the] number of <A> [with|having|that have] …``), where ``<A>`` and ``<B>`` are model
nouns (the lens's ``vocabulary`` may drop verbs such as "published"), counts the
entities of A whose number of related B entities passes the comparison:

| words | HAVING |
|---|---|
| ``more than n``, ``greater than n``, ``over n`` | ``> n`` |
| ``at least n``, ``n or more`` | ``>= n`` |
| ``exactly n`` | ``= n`` |

The relation is the one declared model R that holds both: B itself with a
many-to-one join to A, or a model with many-to-one joins to A and to B. The rows of R
are grouped by its column naming one A (the join's single column; NULL names no
one) and B is counted by its key (``COUNT(DISTINCT …)``): ``SELECT COUNT(*) FROM
(SELECT a_fk FROM R WHERE a_fk IS NOT NULL GROUP BY a_fk HAVING COUNT(DISTINCT
b_key) > n)``. No metric asset is used: the count is of B's keys.

``ratio of A that have … B to A that have … B`` (both sides the same A and B) counts
both sides on one such grouping: ``CAST(COUNT(CASE WHEN c > n THEN 1 END) AS DOUBLE)
/ NULLIF(COUNT(CASE WHEN c = m THEN 1 END), 0)``. A bare number on one side ("papers
that have 1 keyphrase") reads as exactly that many only against ``more than`` the
same number on the other side; any other bare number declines (exactly, or at least?).

A composite key on B, when B itself holds the join to A, still makes each of its rows
one B: they are counted with ``COUNT(*)``.

A comparison an A with no B at all passes — ``fewer than n`` / ``less than n`` /
``under n`` (``<``), ``at most n`` / ``no more than n`` / ``n or fewer`` (``<=``),
``at least 0``, ``exactly 0`` — counts A's own rows instead, by a correlated count
of its B that reads such an A as 0 (R holds no row for it):

    SELECT COUNT(*) FROM <A table> AS <A>
    WHERE (SELECT COUNT(DISTINCT related.b_key) FROM <R table> AS related
           WHERE related.a_fk = <A>.<key>) <op> n

The same comparison after a listing's head (:mod:`reconciler.reading.grammar.heads`,
or ``find|list|show [all] <A>`` for A's label) — "the names of teams that have more
than 2 players", "teams with fewer than 2 players", "teams having at most 1 player"
— keeps the rows of A whose correlated count passes it (:func:`kept_by_count`):
``SELECT <columns> FROM <A table> AS <A> WHERE (…) <op> n``; ``at least one`` drops
an A with none.

Declines:

* one side of a ratio with ``less than``, ``fewer than``, ``at most`` …, ``n or
  fewer``, ``at least 0`` or ``exactly 0``: those with none are in no row of R;
* ``<B>`` that is also a fact or a metric (``customers with more than 2 orders`` when
  customers hold an ``orders`` column): a count of rows, or a comparison on the column?
* no declared relation, or several (``papers cite papers`` through two joins);
* a COUNT metric with filters on A, B or the relating model (the lens counts those
  rows its own way);
* A and B the same model; a composite key on a B another model relates, or on A
  where a correlated count ties B to A's key.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import key_pair
from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Retrieval, retrieve
from reconciler.assembly.text import STOPWORDS, stems, tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.grammar.heads import Head, head_columns, read_head
from reconciler.reading.ir import RATIO, Declined, DeclineKind, TwoMeasures
from reconciler.reading.lex import NUMBER_WORDS
from reconciler.reading.phrases.twomeasures import find_two_measures

_AT_LEAST = (("at", "least"), ("no", "less", "than"), ("no", "fewer", "than"))
_OPERATORS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("more", "than"), ">"),
    (("greater", "than"), ">"),
    (("over",), ">"),
    *((w, ">=") for w in _AT_LEAST),
    (("exactly",), "="),
)
_AT_MOST: tuple[tuple[tuple[str, ...], str], ...] = (
    (("less", "than"), "<"),
    (("fewer", "than"), "<"),
    (("at", "most"), "<="),
    (("under",), "<"),
    (("no", "more", "than"), "<="),
)
_LINKS = frozenset({"that", "who", "which", "have", "has", "had"})
_CLAUSE = _LINKS | {"with", "having"}
_OPENERS = stems("return list show give find display get provide")


@dataclass(frozen=True)
class _Shape:
    """``how many A … op n B`` read from the tokens: the two models, operator, number."""

    counted: str
    related: str
    op: str
    n: int
    related_at: tuple[int, int]


def compared_count(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a count of entities compared (module docstring), or ``None`` when
    the question is not of that shape.

    Raises:
        Declined: the shape with a "less than" side, an ambiguous ``<B>``, no single
            declared relation, or a composite key (module docstring).
    """
    two = find_two_measures(question)
    if two is not None and two.kind == RATIO and not two.percent:
        return _ratio(lens, two, values)
    found = retrieve(lens, question, values)
    shape = _read(lens, found)
    if shape is None:
        return None
    relating, a_fk, b_key = _checked(lens, found, shape)
    if _zeros(shape):  # an A with no B passes: count A's rows by a correlated count
        model = _keyed(lens, shape)
        dialect = lens.config.dialect
        query = (
            exp.select(exp.alias_(exp.Count(this=exp.Star()), f"{shape.counted}_count"))
            .from_(exp.alias_(exp.to_table(model.table, dialect=dialect), model.name))
            .where(_related_count(lens, shape, (relating, a_fk, b_key)))
        )
        return query.sql(dialect=dialect, pretty=True)
    count = _counted(b_key)
    inner = (
        exp.select(exp.column(a_fk))
        .from_(exp.to_table(lens.models[relating].table))
        .where(exp.Not(this=exp.Is(this=exp.column(a_fk), expression=exp.Null())))
        .group_by(exp.column(a_fk))
        .having(_condition(shape, count))
    )
    outer = exp.select(exp.alias_(exp.Count(this=exp.Star()), f"{shape.counted}_count")).from_(
        inner.subquery("counted")
    )
    return outer.sql(dialect=lens.config.dialect, pretty=True)


def kept_by_count(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a listing of A kept by its number of B (module docstring), or
    ``None`` when the question is not of that shape (a ``how many`` head is
    :func:`compared_count`'s).

    Raises:
        Declined: an ambiguous ``<B>``, no single declared relation, a composite key
            (module docstring).
    """
    found = retrieve(lens, question, values)
    toks, covered = found.tokens, found.covered()
    at = next((i for i in range(1, len(toks)) if toks[i] in _CLAUSE and i not in covered), None)
    if at is None or _opened(toks, False) is not None:
        return None
    i = at
    while i < len(toks) and toks[i] in _CLAUSE:
        i += 1
    read = _listing_operator(toks, i)
    related = _noun(lens, toks, read[2]) if read else None
    if read is None or related is None or related[1] != len(toks):
        return None
    head = read_head(lens, found, at) or _bare_head(lens, found, at)
    if head is None or head.count:
        return None
    op, n, noun_at = read
    shape = _Shape(head.model, related[0], op, n, (noun_at, related[1]))
    relation = _checked(lens, found, shape)
    model = _keyed(lens, shape)
    dialect = lens.config.dialect
    columns = head_columns(model, found, head)
    query = (
        exp.select(
            *(exp.alias_(sqlglot.parse_one(sql, read=dialect), alias) for alias, sql in columns)
        )
        .from_(exp.alias_(exp.to_table(model.table, dialect=dialect), model.name))
        .where(_related_count(lens, shape, relation))
    )
    return (query.distinct() if head.distinct else query).sql(dialect=dialect, pretty=True)


def _zeros(shape: _Shape) -> bool:
    """Whether an A with no B at all passes the shape's comparison."""
    return shape.op in ("<", "<=") or (shape.n == 0 and shape.op != ">")


def _keyed(lens: Lens, shape: _Shape) -> Model:
    """A's model, whose one-column key a correlated count ties B's rows to.

    Raises:
        Declined: A's key has several columns.
    """
    model = lens.models[shape.counted]
    if len(model.primary_key) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"model {model.name!r} declares no single-column primary_key to tie its "
            f"{shape.related} to",
        )
    return model


def _related_count(lens: Lens, shape: _Shape, relation: tuple[str, str, str | None]) -> exp.Expr:
    """``(SELECT <count of B> FROM <R> AS related WHERE related.a_fk = A.key) <op> n``."""
    relating, a_fk, b_key = relation
    model = lens.models[shape.counted]
    dialect = lens.config.dialect
    count = (
        exp.select(_counted(b_key, "related"))
        .from_(exp.alias_(exp.to_table(lens.models[relating].table, dialect=dialect), "related"))
        .where(
            key_pair(
                lens, (relating, a_fk, "related"), (model.name, model.primary_key[0], model.name)
            )
        )
    )
    return _condition(shape, count.subquery())


def _bare_head(lens: Lens, found: Retrieval, at: int) -> Head | None:
    """``find|list|show … [all] [the] <A>`` with no column named: A's label, as
    ``which <A>`` asks for it."""
    toks = found.tokens
    i = 1 if toks[:1] and toks[0] in _OPENERS else 0
    while i and i < at and toks[i] in ("all", "the", "me"):
        i += 1
    named = model_nouns(lens).get(toks[i:at]) if i else None
    return Head(named, (i, at), [], False, which=True) if named else None


def _counted(key: str | None, table: str | None = None) -> exp.Expr:
    """``COUNT(DISTINCT key)``, or ``COUNT(*)`` when the counted rows are each one
    entity of a model whose key has several columns (``key`` ``None``)."""
    if key is None:
        return exp.Count(this=exp.Star())
    return exp.Count(this=exp.Distinct(expressions=[exp.column(key, table=table)]))


def _listing_operator(toks: tuple[str, ...], i: int) -> tuple[str, int, int] | None:
    """``(operator, n, index after n)`` of a listing's comparison at ``i``: those of
    :func:`_operator`, and "fewer than n", "at most n", "n or fewer" (an A with no B
    has 0 of them, and is kept)."""
    n = _number(toks, i)
    if n is not None and toks[i + 1 : i + 3] in (("or", "fewer"), ("or", "less")):
        return "<=", n, i + 3
    for words, op in _AT_MOST:
        if toks[i : i + len(words)] == words:
            n = _number(toks, i + len(words))
            return None if n is None else (op, n, i + len(words) + 1)
    return _operator(toks, i)


def _condition(shape: _Shape, count: exp.Expr) -> exp.Expr:
    """``count <op> n`` of a shape."""
    return {">": exp.GT, ">=": exp.GTE, "=": exp.EQ, "<": exp.LT, "<=": exp.LTE}[shape.op](
        this=count.copy(), expression=exp.Literal.number(shape.n)
    )


def _ratio(lens: Lens, two: TwoMeasures, values: DimensionValues) -> str | None:
    """``ratio of A that have op n B to A that have op m B``: both sides counted on
    one grouping of the relating model; ``None`` when the sides are not of that shape.
    A bare ``n`` on one side reads as exactly n only against ``more than n`` on the
    other ("more than 1 keyphrase to 1 keyphrase")."""
    before, first, second = two.sides
    if any(t not in STOPWORDS for t in tokenize(before)):
        return None
    sides = []
    for text in (first, second):
        found = retrieve(lens, f"how many {text}", values)
        shape = _read(lens, found, bare=True)
        if shape is None:
            return None
        sides.append((found, shape))
    (found_a, a), (_, b) = sides
    if (a.counted, a.related) != (b.counted, b.related):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a ratio of {a.counted} by their {a.related} to {b.counted} by their "
            f"{b.related}: the two sides must count the same things",
        )
    bare = [s for s, (found, _) in zip((a, b), sides, strict=True) if _is_bare(found, s)]
    other = b if bare and bare[0] is a else a
    if bare and (len(bare) > 1 or (other.op, other.n) != (">", bare[0].n)):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'{bare[0].n} {a.related}' alone: exactly {bare[0].n}, or at least "
            f"{bare[0].n}? Say 'exactly'",
        )
    relating, a_fk, b_key = _checked(lens, found_a, a)
    counted = exp.column("related_count")
    sides_sql = [
        exp.Count(
            this=exp.Case(ifs=[exp.If(this=_condition(s, counted), true=exp.Literal.number(1))])
        )
        for s in (a, b)
    ]
    ratio = exp.Div(
        this=exp.Cast(this=sides_sql[0], to=exp.DataType.build("double")),
        expression=exp.Nullif(this=sides_sql[1], expression=exp.Literal.number(0)),
    )
    inner = (
        exp.select(
            exp.column(a_fk),
            exp.alias_(_counted(b_key), "related_count"),
        )
        .from_(exp.to_table(lens.models[relating].table))
        .where(exp.Not(this=exp.Is(this=exp.column(a_fk), expression=exp.Null())))
        .group_by(exp.column(a_fk))
    )
    query = exp.select(exp.alias_(ratio, "ratio")).from_(inner.subquery("counted"))
    return query.sql(dialect=lens.config.dialect, pretty=True)


def _is_bare(found: Retrieval, shape: _Shape) -> bool:
    """Whether the shape's number stands alone (no comparison word before it)."""
    at = shape.related_at[0] - 2
    return shape.op == "=" and found.tokens[at : at + 1] != ("exactly",)


def _checked(lens: Lens, found: Retrieval, shape: _Shape) -> tuple[str, str, str | None]:
    """The relation of a shape, after the checks of the module docstring."""
    a, b = shape.counted, shape.related
    if a == b:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{a} compared with {a}: which relation between them?"
        )
    start, end = shape.related_at
    for m in found.mentions:
        if m.kind == "metric" and all(_counts_rows(lens, t.name, b) for t in m.targets):
            continue  # "appointments" = COUNT(*) of appointments: the same count
        if m.start < end and m.end > start and m.kind in ("fact", "metric"):
            listed = ", ".join(sorted({f"{t.model}.{t.name}" for t in m.targets}))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{' '.join(found.words[start:end])!r} is a model and also {listed}: "
                f"a count of {b} or a comparison on that column?",
            )
    relating, a_fk, b_key = _relation(lens, a, b)
    _check_counts(lens, (a, b, relating))
    return relating, a_fk, b_key


def _counts_rows(lens: Lens, metric: str, model: str) -> bool:
    """Whether ``metric`` is a plain count of ``model``'s rows: ``COUNT(*)``, or
    ``COUNT([DISTINCT] <its one-column key>)``, on that model, with no filters."""
    m = lens.metrics.get(metric)
    if m is None or m.model != model or m.filters:
        return False
    tree = sqlglot.parse_one(m.expression, read=lens.config.dialect)
    if not isinstance(tree, exp.Count):
        return False
    arg = tree.this.expressions[0] if isinstance(tree.this, exp.Distinct) else tree.this
    if isinstance(arg, exp.Star):
        return not isinstance(tree.this, exp.Distinct)
    key = lens.models[model].primary_key
    return isinstance(arg, exp.Column) and len(key) == 1 and arg.name.lower() == key[0].lower()


def _read(lens: Lens, found: Retrieval, bare: bool = False) -> _Shape | None:
    """The shape's parts, or ``None`` when the tokens are not ``how many A … op n B``;
    ``bare`` also reads ``A that have n B`` (operator ``=``; one side of a ratio)."""
    toks = found.tokens
    start = _opened(toks, bare)
    if start is None:
        return None
    counted = _noun(lens, toks, start)
    if counted is None:
        return None
    i = counted[1]
    links = _LINKS if bare else _CLAUSE  # "the number of teams with more than 2 players"
    while i < len(toks) and toks[i] in links:
        i += 1
    if not bare:
        read = _listing_operator(toks, i)  # an A with none counts 0 (_zeros)
    else:
        for words, _ in _AT_MOST:
            after = i + len(words)
            if (
                toks[i:after] == words
                and _number(toks, after) is not None
                and _noun(lens, toks, after + 1)
            ):
                raise Declined(
                    DeclineKind.UNSAFE_RESULT,
                    f"'{' '.join(words)}': {counted[0]} with none at all are in no row that "
                    "relates them; counted or not? Ask for those with at least one, or none",
                )
        read = _operator(toks, i)
        if read is None and (n := _number(toks, i)) is not None:
            read = "=", n, i + 1
    if read is None:
        return None
    op, n, at = read
    if bare and n == 0 and op != ">":
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"'{' '.join(toks[i:at])}': {counted[0]} with none are in no row to count",
        )
    related = _noun(lens, toks, at)
    if related is None or related[1] != len(toks):
        return None
    return _Shape(counted[0], related[0], op, n, (at, related[1]))


def _opened(toks: tuple[str, ...], bare: bool) -> int | None:
    """Where A's noun starts after the opener: ``how many``, or (not on a ratio's side)
    ``[what is|find|give|show] [the] number of`` / ``count of``; ``None`` otherwise."""
    if toks[:2] == ("how", "many"):
        return 2
    if bare:
        return None
    i = 2 if toks[:2] == ("what", "is") else 1 if toks[:1] and toks[0] in _OPENERS else 0
    i += toks[i : i + 1] == ("the",)
    return i + 2 if toks[i : i + 2] in (("number", "of"), ("count", "of")) else None


def _operator(toks: tuple[str, ...], i: int) -> tuple[str, int, int] | None:
    """``(operator, n, index after n)`` of a comparison at ``i``; "n or more" too."""
    for words, op in _OPERATORS:
        if toks[i : i + len(words)] == words:
            n = _number(toks, i + len(words))
            return None if n is None else (op, n, i + len(words) + 1)
    n = _number(toks, i)
    if n is not None and toks[i + 1 : i + 3] == ("or", "more"):
        return ">=", n, i + 3
    if n is not None and toks[i + 1 : i + 3] in (("or", "fewer"), ("or", "less")):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'{n} or fewer' counts those with none too, or not? Say which",
        )
    return None


def _number(toks: tuple[str, ...], i: int) -> int | None:
    t = toks[i] if i < len(toks) else ""
    return int(t) if t.isdigit() else NUMBER_WORDS.get(t)


def _noun(lens: Lens, toks: tuple[str, ...], i: int) -> tuple[str, int] | None:
    """``(model, index after it)`` of the longest model noun at ``i``."""
    nouns = model_nouns(lens)
    for n in range(max((len(k) for k in nouns), default=0), 0, -1):
        if i + n <= len(toks) and toks[i : i + n] in nouns:
            return nouns[toks[i : i + n]], i + n
    return None


def _relation(lens: Lens, a: str, b: str) -> tuple[str, str, str | None]:
    """``(model, column naming one A, column naming one B)`` of the one model relating
    A and B (module docstring)."""
    found: list[tuple[str, str, str | None]] = []
    for model in lens.models.values():
        to_a = [j for j in model.joins if j.to == a and j.relationship == "many_to_one"]
        if len(to_a) != 1 or not _to_key(lens, to_a[0].on, a):
            continue
        a_fk = next(iter(to_a[0].on))
        if model.name == b:  # each of its rows one B: a composite key counts rows
            key = model.primary_key
            found.append((model.name, a_fk, key[0] if len(key) == 1 else None))
            continue
        to_b = [j for j in model.joins if j.to == b and j.relationship == "many_to_one"]
        if len(to_b) == 1 and _to_key(lens, to_b[0].on, b):
            found.append((model.name, a_fk, next(iter(to_b[0].on))))
    if len(found) != 1:
        what = "no declared model relates" if not found else "several declared models relate"
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{what} {a} and {b} (many-to-one joins to both, single columns): "
            f"declare the one that counts {b} per {a}",
        )
    return found[0]


def _check_counts(lens: Lens, models: tuple[str, ...]) -> None:
    """Decline when a COUNT metric with filters lives on one of ``models``: the lens
    counts those rows its own way (as :func:`reconciler.reading.grammar.measures.entity_count`)."""
    for metric in lens.metrics.values():
        if metric.model not in models or not metric.filters:
            continue
        if sqlglot.parse_one(metric.expression, read=lens.config.dialect).find(exp.Count):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"metric {metric.name!r} counts {metric.model} rows with filters: does the "
                f"question mean it, or every {metric.model} row?",
            )


def _to_key(lens: Lens, on: dict[str, str], model: str) -> bool:
    """Whether a join's ``on`` maps one column to ``model``'s single-column key."""
    return len(on) == 1 and tuple(on.values()) == lens.models[model].primary_key
