"""Question by example: an exemplar whose question differs only in slots, adapted (pure).

An exemplar (``exemplars/*.yaml``: question and SQL, not certified) is used for an
asked question when the two questions read the same token for token except in
*slots*, each of which is then replaced on sqlglot's tree of the exemplar's SQL:

=============  ==============================================  ==========================
slot           in the question                                 in the SQL
=============  ==============================================  ==========================
period         a year, quarter or month (absolute or relative  the period's first day and
               at ``as_of``), of the same unit on both sides   first day after, each a
                                                               date literal found once
value          a stored value of one dimension (``South`` →    the string literal compared
               ``Canada``), the same dimension on both sides   to that dimension's column,
                                                               found once
N              the number right after ``top``, ``bottom``,     the one ``LIMIT``, equal to N
               ``which`` …
dimension      a dimension of one model swapped for another    every reference to the old
               of the same model (``segment`` → ``country``)   column (one table alias, only
                                                               shown, grouped or ordered by),
                                                               and its output alias
=============  ==============================================  ==========================

Anything else that differs (a word, a metric, a period added or removed) and the
exemplar is not used. An exemplar that reads like the question but whose slot
cannot be placed in its SQL without doubt (the literal occurs twice or not at all,
other date literals, a dimension with its own expression or inside a filter,
several LIMITs) makes the question decline: the lens's own example of that shape
says something the compiler's reading may not. Only the exemplars the assembled
request names are ever looked at (in the suite they already exclude the answer
under test, DESIGN §4), best first; the first that adapts wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import Mention, retrieve
from reconciler.lens import Exemplar, Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import ASCENDING, DESCENDING, NUMBER_WORDS
from reconciler.reading.phrases.periods import UNITS, period_at, spell_to_date

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The words a top/bottom N follows ("top 3", "which 2"); any other number is no slot.
_RANKING = DESCENDING | ASCENDING | {"which", "first"}


@dataclass(frozen=True)
class Slot:
    """One slot of a question.

    Attributes:
        kind: ``period:<unit>``, ``value:<model>.<dimension>``, ``n`` or
            ``dimension:<model>``; two questions line up only slot kind by slot kind.
        filler: what fills it: ``(start, stop)`` ISO dates, the stored value, the
            number, or the dimension's name.
    """

    kind: str
    filler: tuple[str, ...]


Skeleton = tuple[str | Slot, ...]


def skeleton(lens: Lens, question: str, values: DimensionValues) -> Skeleton:
    """``question`` as tokens and :class:`Slot` s (module docstring).

    Raises:
        Declined: a relative period while the lens pins no ``as_of``.
    """
    found = retrieve(lens, spell_to_date(question), values)
    toks = found.tokens
    free = set(range(len(toks))) - found.covered()
    starts = {m.start: m for m in found.mentions}
    out: list[str | Slot] = []
    i = 0
    while i < len(toks):
        mention = starts.get(i)
        if mention is not None:
            places = sorted({(t.model, t.name) for t in mention.targets})
            if mention.kind == "value":
                places = _qualified(places, found.mentions, mention)
            if mention.kind == "value" and len({t.value for t in mention.targets}) == 1:
                value = mention.targets[0].value
                assert value is not None
                kind = "value:" + ";".join(f"{m}.{n}" for m, n in places)
                out.append(Slot(kind, (value,)))
            elif mention.kind == "dimension" and len(places) == 1:
                out.append(Slot(f"dimension:{places[0][0]}", (places[0][1],)))
            else:
                out.extend(toks[mention.start : mention.end])
            i = mention.end
            continue
        period = period_at(toks, i, free, lens.config.as_of) if i in free else None
        if period is not None and period[1].unit in UNITS:
            start, stop = period[1].span
            if isinstance(start, date) and isinstance(stop, date):
                out.append(Slot(f"period:{period[1].unit}", (start.isoformat(), stop.isoformat())))
            else:  # counted from today (as_of: today): the same words on both sides
                out.extend(toks[i : period[0]])
            i = period[0]
            continue
        token = toks[i]
        ranked = i > 0 and toks[i - 1] in _RANKING
        if ranked and i in free and ((token.isdigit() and len(token) < 4) or token in NUMBER_WORDS):
            out.append(Slot("n", (str(NUMBER_WORDS.get(token) or int(token)),)))
        else:
            out.append(token)
        i += 1
    return tuple(out)


def _qualified(
    places: list[tuple[str, str]], mentions: tuple[Mention, ...], value: Mention
) -> list[tuple[str, str]]:
    """The value's ``places``, narrowed by a dimension phrase right beside it ("the
    Canada region": a region, not a country), as the fast tier reads it."""
    for d in mentions:
        if d.kind == "dimension" and (d.end == value.start or d.start == value.end):
            narrowed = [p for p in places if p in {(t.model, t.name) for t in d.targets}]
            if narrowed:
                return narrowed
    return places


def adapted_sql(
    lens: Lens, exemplar: Exemplar, asked: Skeleton, values: DimensionValues
) -> str | None:
    """The exemplar's SQL adapted to the question read as ``asked``, else ``None``.

    Returns the exemplar's SQL as written when the questions read the same, and
    ``None`` when they differ outside slots.

    Raises:
        Declined: the questions differ only in slots, but one cannot be placed in
            the exemplar's SQL without doubt.
    """
    try:
        theirs = skeleton(lens, exemplar.question, values)
    except Declined:
        return None
    if len(theirs) != len(asked):
        return None
    changes: list[tuple[Slot, Slot]] = []
    for old, new in zip(theirs, asked, strict=True):
        if isinstance(old, Slot) and isinstance(new, Slot) and old.kind == new.kind:
            if old.filler != new.filler:
                changes.append((old, new))
        elif old != new:
            return None
    if not changes:
        return exemplar.sql
    dialect = lens.config.dialect
    try:
        tree = sqlglot.parse_one(exemplar.sql, read=dialect)
    except SqlglotError as exc:
        raise Declined(
            DeclineKind.BUILD_FAILED, f"exemplar {exemplar.name!r} reads like the question: {exc}"
        ) from exc
    # Each step finds its nodes by identity, so it edits this one copy in place.
    tree = tree.copy()
    for old, new in changes:
        step = _STEPS[old.kind.split(":", 1)[0]]
        result = step(lens, tree, old, new)
        if result is None:
            slot = old.kind.split(":", 1)[0]
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"exemplar {exemplar.name!r} reads like the question, but its SQL does not "
                f"show without doubt where its {slot} {', '.join(old.filler)} goes",
            )
        tree = result
    return tree.sql(dialect=dialect, pretty=True)


def _period(lens: Lens, tree: exp.Expr, old: Slot, new: Slot) -> exp.Expr | None:
    """The period's two bounds swapped; every date literal must be one of them, once."""
    literals = [
        n
        for n in tree.find_all(exp.Literal)
        if n.is_string and _ISO_DATE.match(n.this) and _is_date(n.this)
    ]
    found = [n.this for n in literals]
    if sorted(found) != sorted(old.filler) or len(set(found)) != len(found):
        return None
    bounds = dict(zip(old.filler, new.filler, strict=True))
    ids = {id(n) for n in literals}
    return tree.transform(
        lambda n: exp.Literal.string(bounds[n.this]) if id(n) in ids else n, copy=False
    )


def _value(lens: Lens, tree: exp.Expr, old: Slot, new: Slot) -> exp.Expr | None:
    """The one literal equal to the old value, compared to its dimension's column."""
    place = old.kind.split(":", 1)[1]
    if ";" in place:
        return None  # the value is stored in several dimensions
    model, dim = place.split(".", 1)
    col = next(c for c in lens.models[model].dimensions if c.name == dim)
    try:
        column = sqlglot.parse_one(col.sql, read=lens.config.dialect)
    except SqlglotError:
        return None
    hits = [n for n in tree.find_all(exp.Literal) if n.this == old.filler[0]]
    if len(hits) != 1 or not isinstance(column, exp.Column):
        return None
    compared = hits[0].parent
    if not isinstance(compared, (exp.EQ, exp.NEQ, exp.In)):
        return None
    others = [c for c in compared.find_all(exp.Column) if c.name == column.name]
    if len(others) != 1:
        return None
    literal = hits[0]
    swapped = (
        exp.Literal.string(new.filler[0])
        if literal.is_string
        else exp.Literal.number(new.filler[0])
    )
    return tree.transform(lambda n: swapped.copy() if n is literal else n, copy=False)


def _n(lens: Lens, tree: exp.Expr, old: Slot, new: Slot) -> exp.Expr | None:
    """The one LIMIT, equal to the old N."""
    limits = list(tree.find_all(exp.Limit))
    if len(limits) != 1:
        return None
    count = limits[0].expression
    if not isinstance(count, exp.Literal) or count.this != old.filler[0]:
        return None
    return tree.transform(
        lambda n: exp.Literal.number(new.filler[0]) if n is count else n, copy=False
    )


def _dimension(lens: Lens, tree: exp.Expr, old: Slot, new: Slot) -> exp.Expr | None:
    """Every reference to the old dimension's column (one table alias) renamed."""
    model = lens.models[old.kind.split(":", 1)[1]]
    by_name = {c.name: c for c in model.dimensions}
    was, now = by_name[old.filler[0]], by_name[new.filler[0]]
    if not _plain(was.sql) or not _plain(now.sql):
        return None
    refs = [c for c in tree.find_all(exp.Column) if c.name == was.sql]
    ids = {id(c) for c in refs}
    tables = {t.alias_or_name for t in tree.find_all(exp.Table) if t.name == model.table}
    if not refs or {c.table for c in refs} - tables or len(tables) != 1:
        return None
    if any(c.name == now.sql for c in tree.find_all(exp.Column)):
        return None
    if not all(_shown_or_grouped(c) for c in refs):
        return None  # a filter or an aggregate on the old column means something else
    aliases = {was.name, was.sql}

    def rename(node: exp.Expr) -> exp.Expr:
        if id(node) in ids and isinstance(node, exp.Column):
            return exp.column(now.sql, table=node.table or None)
        if isinstance(node, exp.Alias) and node.alias in aliases:
            return exp.alias_(node.this, now.name)
        return node

    return tree.transform(rename, copy=False)


def _shown_or_grouped(column: exp.Column) -> bool:
    """Whether ``column`` is a select item (aliased or not), a GROUP BY or an ORDER BY key."""
    parent = column.parent
    if isinstance(parent, exp.Alias):
        parent = parent.parent
    return isinstance(parent, (exp.Select, exp.Group, exp.Ordered))


def _plain(sql: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", sql) is not None


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


_STEPS: dict[str, Callable[[Lens, exp.Expr, Slot, Slot], exp.Expr | None]] = {
    "period": _period,
    "value": _value,
    "n": _n,
    "dimension": _dimension,
}


def from_exemplars(
    lens: Lens, question: str, names: tuple[str, ...], values: DimensionValues
) -> tuple[str, str] | None:
    """``(name, adapted SQL)`` of the first exemplar of ``names`` that adapts to
    ``question``, else ``None``.

    Raises:
        Declined: no exemplar adapts, and one reads like the question but its slot
            cannot be placed in its SQL (:func:`adapted_sql`).
    """
    try:
        asked = skeleton(lens, question, values)
    except Declined:
        return None
    doubt: Declined | None = None
    for name in names:
        exemplar = lens.exemplars.get(name)
        if exemplar is None:
            continue
        try:
            sql = adapted_sql(lens, exemplar, asked, values)
        except Declined as exc:
            doubt = doubt or exc
            continue
        if sql is not None:
            return name, sql
    if doubt is not None:
        raise doubt
    return None
