"""Rows kept by sets of related rows: both, either, but not; related rows compared (pure).

:func:`related_sets` reads a listing of one model's rows (*A*) kept by what its related
rows (*B*) say, where one related-rows clause is not enough:

    Which airlines have flights from both LAX and JFK?
    Which airlines have flights from LAX but not from JFK?
    Which airlines have flights from either LAX or JFK?
    List the names of singers that have songs with sales more than 300000.

Each part is read by the existence reader it is given
(:func:`reconciler.reading.grammar.existence.existence_rows`), on the question with
the other part left out, and the parts are put together on the keyed rows of *A*:

| words | the rows of *A* kept |
|---|---|
| ``both <X> and <Y>`` | ``EXISTS (… X) AND EXISTS (… Y)`` |
| ``<X> but not [<preposition>] <Y>`` | ``EXISTS (… X) AND NOT EXISTS (… Y)`` |
| ``either <X> or <Y>``, ``<X> or <Y>`` | ``EXISTS (… X) OR EXISTS (… Y)`` |

so no related row repeats a row of *A*, and a NULL in *B*'s column never drops one (no
``NOT IN`` over a nullable column). *X* and *Y* are values of one column (``'LAX'``,
``'JFK'``) or whole numbers (``2014``, ``2015``); ``both`` and ``either`` stand at most
three words before *X*, and the words between (``airports``, ``the years of``) are
kept for both parts. ``and`` with no ``both`` ("flights from LAX and JFK": every one,
or any?) is not read here, and the question declines.

A comparison on a fact of *B* after *B*'s noun ("songs with sales more than 300000",
:func:`~reconciler.reading.phrases.bounds.split_bounds`) goes inside *B*'s
``EXISTS``: a related row must pass it to count. A fact that is not of the related
rows (a fact of *A*, or of two models the subquery reads) is not read here.

``both`` / ``either`` before a whole phrase, and its ``and`` / ``or`` before another
that ends the question, make the two parts too ("visitors who visited both a museum
opened before 2009 and a museum opened after 2011"). Parts read into different
listings ("show both the name and the id") are not this shape.

A clause said another way ("people that are not poker players", "stadiums having a
concert", "all stadiums except for stadiums having …", "countries where there is not a
single car maker") is restated first
(:func:`~reconciler.reading.phrases.relatedclauses.restate`); an ``except`` clause's
condition is negated, a membership clause must ride a direct join from *B* to *A*.

Declines: a set of related rows inside a negated clause ("airlines that have no
flights from both LAX and JFK": none from either, or not from both?), or a
comparison whose fact two models of the subquery hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp, parse_one

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.bounds import Bound, split_bounds
from reconciler.reading.phrases.related import compared
from reconciler.reading.phrases.relatedclauses import Restated, member_link, restate

Reader = Callable[[Lens, str, DimensionValues], "str | None"]
"""A related-rows reader: ``(lens, question, values) -> SQL`` or ``None``."""

_MARKERS = {"and": "both", "or": "either"}
_PREPOSITIONS = frozenset({"from", "to", "in", "at", "of", "on", "with", "by", "for"})
_REACH = 3  # words "both" / "either" may stand before the first value


@dataclass(frozen=True)
class _Sets:
    """Two parts of a question and how their rows combine (``and``, ``but not``, ``or``)."""

    op: str
    first: str
    second: str


def related_sets(lens: Lens, question: str, values: DimensionValues, read: Reader) -> str | None:
    """The SQL of a listing kept by a set of related rows (module docstring), or
    ``None`` when the question is not of that shape.

    Args:
        lens: the lens.
        question: the question as asked.
        values: dimension values and join-key facts.
        read: the related-rows reader each part is read by.

    Raises:
        Declined: the shape, but a reading that is not one (module docstring).
    """
    restated = restate(lens, retrieve(lens, question, values))
    text = question if restated is None else restated.text
    sets = _split(lens, text, values)
    if sets is None:
        sql = _bounded(lens, text, values, read, alone=restated is None)
    else:
        first = _bounded(lens, sets.first, values, read, alone=False)
        second = _bounded(lens, sets.second, values, read, alone=False)
        if first is None or second is None:
            return None
        sql = _combine(lens, sets.op, first, second)
    return sql if sql is None or restated is None else _settle(lens, sql, restated, values)


def _settle(lens: Lens, sql: str, restated: Restated, values: DimensionValues) -> str:
    """``sql`` read from a restated question: a membership clause's link held
    (:func:`~reconciler.reading.phrases.relatedclauses.member_link`), an ``except``
    clause's condition negated."""
    dialect = lens.config.dialect
    tree = parse_one(sql, read=dialect)
    where = tree.args.get("where")
    source = tree.args.get("from") or tree.args.get("from_")
    table = source.find(exp.Table) if source is not None else None
    if where is None or table is None:
        return sql
    if restated.member is not None:
        member_link(lens, table.alias_or_name, restated.member, values)
    if restated.negated:
        tree.set("where", exp.Where(this=exp.Not(this=exp.paren(where.this))))
    return tree.sql(dialect=dialect, pretty=True)


def _split(lens: Lens, question: str, values: DimensionValues) -> _Sets | None:
    """The two parts of ``both X and Y``, ``X but not Y``, ``[either] X or Y``, if any."""
    found = retrieve(lens, question, values)
    toks, said = found.tokens, found.words
    covered = found.covered()
    for j, t in enumerate(toks):
        if j in covered or j == 0:
            continue
        but_not = toks[j : j + 2] == ("but", "not")
        if t not in _MARKERS and not but_not:
            continue
        left = _item_ending(found, j)
        at = j + (2 if but_not else 1)
        word = None  # "to ORD but not from LAX": the second part's own preposition
        if at < len(toks) and toks[at] in _PREPOSITIONS and at not in covered:
            word, at = at, at + 1
        right = _item_starting(found, at)
        if left is None or right is None or not _same_column(found, left, right):
            continue
        swap = _preposition(found, left[0]) if word is not None else None
        if word is not None and swap is None:
            continue  # a preposition the first part has no counterpart of
        drop = set(range(j, right[1]))
        if not but_not:
            marker = _marker(found, left[0], _MARKERS[t])
            if marker is None and t == "and":
                continue  # "from LAX and JFK": every one, or any? (the existence reader's)
            if marker is not None:
                drop.add(marker)
        kept = [i for i in range(len(said)) if i not in drop]
        second: list[str] = []
        for i in kept:
            if i == swap and word is not None:
                second.append(said[word])
            elif i == left[0]:
                second.extend(said[right[0] : right[1]])
            elif not left[0] < i < left[1]:
                second.append(said[i])
        first = [said[i] for i in kept]
        op = "but not" if but_not else t
        return _Sets(op, " ".join(first), " ".join(second))
    return _phrases(found, question)


def _phrases(found: Retrieval, question: str) -> _Sets | None:
    """The two parts of ``both <phrase> and <phrase>`` or ``either <phrase> or
    <phrase>`` ending the question ("visitors who visited both a museum opened before
    2009 and a museum opened after 2011"): each part is the words before the marker
    and one phrase, cut from the question as asked (a verb the lens's vocabulary
    drops still says the rows did something)."""
    toks, covered = found.tokens, found.covered()
    for b, t in enumerate(toks):
        joiner = next((j for j, w in _MARKERS.items() if w == t), None)
        if joiner is None or b in covered:
            continue
        j = next(
            (k for k in range(b + 2, len(toks)) if toks[k] == joiner and k not in covered), None
        )
        if j is None or j + 1 >= len(toks):
            return None
        before = sum(1 for k in range(b + 1, j) if toks[k] == joiner)
        marker = list(re.finditer(rf"\b{t}\b", question, re.IGNORECASE))
        joins = [m for m in re.finditer(rf"\b{joiner}\b", question, re.IGNORECASE)]
        if len(marker) != 1:
            return None
        after = [m for m in joins if m.start() > marker[0].end()]
        if len(after) <= before:
            return None
        cut = after[before]
        head = question[: marker[0].start()]
        first = head + question[marker[0].end() : cut.start()]
        return _Sets(
            joiner, " ".join(first.split()), " ".join((head + question[cut.end() :]).split())
        )
    return None


def _preposition(found: Retrieval, start: int) -> int | None:
    """The index of the nearest preposition at most :data:`_REACH` tokens before
    ``start``, with no value between them."""
    values = {i for m in found.mentions if m.kind == "value" for i in range(m.start, m.end)}
    for k in range(start - 1, max(start - 1 - _REACH, -1), -1):
        if k in values:
            return None
        if found.tokens[k] in _PREPOSITIONS and k not in found.covered():
            return k
    return None


def _item_ending(found: Retrieval, end: int) -> tuple[int, int] | None:
    """The value mention or bare whole number ending at token ``end``."""
    mention = next((m for m in found.mentions if m.end == end), None)
    if mention is not None:
        return (mention.start, mention.end) if mention.kind == "value" else None
    k = end - 1
    return (k, end) if k >= 0 and found.tokens[k].isdigit() and k not in found.covered() else None


def _item_starting(found: Retrieval, start: int) -> tuple[int, int] | None:
    """The value mention or bare whole number starting at token ``start``."""
    mention = next((m for m in found.mentions if m.start == start), None)
    if mention is not None:
        return (mention.start, mention.end) if mention.kind == "value" else None
    toks = found.tokens
    digit = start < len(toks) and toks[start].isdigit() and start not in found.covered()
    return (start, start + 1) if digit else None


def _mention(found: Retrieval, span: tuple[int, int]) -> Mention | None:
    return next((m for m in found.mentions if (m.start, m.end) == span), None)


def _same_column(found: Retrieval, left: tuple[int, int], right: tuple[int, int]) -> bool:
    """Whether two items are values of one column (or both whole numbers)."""
    a, b = _mention(found, left), _mention(found, right)
    if a is None or b is None:
        return a is None and b is None
    columns = {(t.model, t.name) for t in a.targets}
    return columns == {(t.model, t.name) for t in b.targets}


def _marker(found: Retrieval, start: int, word: str) -> int | None:
    """The index of ``word`` at most :data:`_REACH` tokens before ``start``, with no
    value between them."""
    values = {i for m in found.mentions if m.kind == "value" for i in range(m.start, m.end)}
    for k in range(start - 1, max(start - 1 - _REACH, -1), -1):
        if k in values:
            return None
        if found.tokens[k] == word and k not in found.covered():
            return k
    return None


def _bounded(
    lens: Lens, question: str, values: DimensionValues, read: Reader, *, alone: bool
) -> str | None:
    """``read`` of ``question`` with each comparison on a fact of the related rows
    inside their ``EXISTS``; ``None`` when the reader reads none of it, or (``alone``)
    when the question has no such comparison (the reader's own question)."""
    rest, bounds = split_bounds(lens, question, values)
    if not bounds:
        return None if alone else read(lens, question, values)
    sql = read(lens, rest, values)
    if sql is None:
        return None
    dialect = lens.config.dialect
    tree = parse_one(sql, read=dialect)
    found = list(tree.find_all(exp.Exists))
    if len(found) != 1:
        return None
    inner = found[0].this
    assert isinstance(inner, exp.Select)
    models = {t.alias_or_name for t in inner.find_all(exp.Table)}
    said = retrieve(lens, question, values)
    for bound in bounds:
        places = {(t.model, t.name) for t in bound.facts if t.model in models}
        if not places:
            return None  # a fact of the listed rows: not related rows compared
        if len(places) > 1:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{bound.phrase!r} compares a fact of {', '.join(sorted(m for m, _ in places))}: "
                "of which related rows?",
            )
        ((model, name),) = places
        if not _after_noun(lens, said, bound, model):
            return None
        for op, number in bound.conditions:
            inner.where(compared(lens, model, name, op, number), copy=False)
    return tree.sql(dialect=dialect, pretty=True)


def _after_noun(lens: Lens, found: Retrieval, bound: Bound, model: str) -> bool:
    """Whether the comparison's words stand after a noun of ``model`` (the related rows)."""
    words = bound.phrase.split()
    said = found.words
    start = next((i for i in range(len(said)) if list(said[i : i + len(words)]) == words), None)
    if start is None:
        return False
    nouns = {k for k, v in model_nouns(lens).items() if v == model}
    return any(found.tokens[i : i + len(n)] == n for n in nouns for i in range(start))


def _combine(lens: Lens, op: str, first: str, second: str) -> str | None:
    """The listing ``first`` with its WHERE put together with ``second``'s by ``op``."""
    dialect = lens.config.dialect
    a, b = parse_one(first, read=dialect), parse_one(second, read=dialect)
    wheres = [q.args.get("where") for q in (a, b)]
    if any(w is None for w in wheres) or any(w.find(exp.Not) for w in wheres if w):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            "a set of related rows in a negated clause: none of them, or not all of them? "
            "Ask for the rows that have them, or use 'but not'",
        )
    bare = [q.copy() for q in (a, b)]
    for q in bare:
        q.set("where", None)
    if bare[0].sql(dialect=dialect) != bare[1].sql(dialect=dialect):
        return None  # "both the name and the id": not two sets of one listing's rows
    x, y = (w.this for w in wheres if w is not None)
    if op == "or":
        joined: exp.Expr = exp.or_(x, y)
    elif op == "but not":
        joined = exp.and_(x, exp.Not(this=y))
    else:
        joined = exp.and_(x, y)
    a.set("where", exp.Where(this=joined))
    return a.sql(dialect=dialect, pretty=True)
