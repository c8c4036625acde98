"""Rows whose fact is above or below that fact's own average (pure).

A listing whose closing comparison sets a row's fact against the average of the same
fact over the same model's rows — "the cars whose weight is below the average
weight", "cars with a weight smaller than the average", "the museums with more staff
than the average" — keeps each row whose value passes, one row per row of the model,
no aggregate shown:

    SELECT <columns> FROM <table> [LEFT JOIN …]
    WHERE <fact> < (SELECT AVG(<fact>) FROM <table>)

The closing words are ``[is|are] <below|under|above|over> [the] average|mean [<the same
fact>] [of|across|among [all] <the model's noun>]`` or ``[is|are] <less|smaller|lower|
fewer|more|greater|larger|higher|bigger> than [the] average …`` right after one fact
phrase, and nothing follows them. The rest of the question is read as a listing
(:func:`reconciler.reading.grammar.listing.listed_rows`, given a placeholder number in
place of the average), so every word the listing does not read leaves the question to
the other shapes. A row with no value never passes (``NULL < …`` is not true), and the
average is over the rows that have one.

The shape declines when the listing keeps its rows by anything else too (the average
of every row, or only of the rows kept?), ranks or cuts its rows, or when the fact is
not a column of the listed rows' own model (an average over another model's rows
needs saying which rows).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind

Listing = Callable[[Lens, str, DimensionValues], "str | None"]
"""A listing's reader: :func:`reconciler.reading.grammar.listing.listed_rows`."""

_BELOW = frozenset({"below", "under"})
_ABOVE = frozenset({"above", "over"})
_LESS = frozenset({"less", "smaller", "lower", "fewer"})
_MORE = frozenset({"more", "greater", "larger", "higher", "bigger"})
_AVERAGE = frozenset({"average", "mean"})
_BE = frozenset({"is", "are", "was", "were"})
_TAIL = frozenset({"of", "across", "among", "for", "over"})
_EVERY = frozenset({"all", "the", "every", "each"})
# A number no question names: the listing reads it where the average stands.
_PLACEHOLDER = "918273645"
_CUT = re.compile(r"\b(?:the\s+)?(?:average|mean)\b", re.IGNORECASE)


def above_average(
    lens: Lens, question: str, values: DimensionValues, listing: Listing
) -> str | None:
    """The SQL of rows kept by their fact against its average (module docstring), or
    ``None`` when the question is not of that shape.

    Raises:
        Declined: the shape, but other conditions on the rows, a ranking or cut of
            them, or a fact of another model than the listed rows'.
    """
    found = retrieve(lens, question, values)
    clause = _clause(lens, found)
    if clause is None:
        return None
    fact, less = clause
    cuts = list(_CUT.finditer(question))
    if len(cuts) != 1:
        return None
    try:
        sql = listing(lens, f"{question[: cuts[0].start()].rstrip()} {_PLACEHOLDER}", values)
    except Declined as exc:
        raise Declined(exc.kind, exc.reason.replace(_PLACEHOLDER, "the average")) from exc
    if sql is None:
        return None
    return _with_average(lens, sql, fact, less)


def _clause(lens: Lens, found: Retrieval) -> tuple[Mention, bool] | None:
    """``(fact mention, below?)`` of the closing comparison with an average, else ``None``."""
    toks = found.tokens
    if sum(t in _AVERAGE for t in toks) != 1:
        return None
    at = toks.index(next(t for t in toks if t in _AVERAGE))
    fact = next((m for m in reversed(found.mentions) if m.end <= at), None)
    if fact is None or fact.kind != "fact":
        return None
    i = fact.end
    while i < at and toks[i] in _BE:
        i += 1
    if i < at and toks[i] in _BELOW | _ABOVE:
        less = toks[i] in _BELOW
        i += 1
    elif i + 1 < at and toks[i] in _LESS | _MORE and toks[i + 1] == "than":
        less = toks[i] in _LESS
        i += 2
    else:
        return None
    after = at + 1
    named = next((m for m in found.mentions if m.start == at), None)
    if named is not None and toks[after : named.end] == toks[fact.start : fact.end]:
        after = named.end  # "the average weight" is a phrase of its own
    if toks[i:at] not in ((), ("the",)) or not _tail(lens, found, fact, after):
        return None
    return fact, less


def _tail(lens: Lens, found: Retrieval, fact: Mention, at: int) -> bool:
    """Whether the words after ``average`` are only the same fact again and a noun of
    the fact's model (``… weight of all cars``)."""
    toks = found.tokens
    again = next((m for m in found.mentions if m.start == at), None)
    if again is not None and again.kind == "fact":
        if {(t.model, t.name) for t in again.targets} != {(t.model, t.name) for t in fact.targets}:
            return False
        at = again.end
    if at == len(toks):
        return True
    if toks[at] not in _TAIL:
        return False
    at += 1
    while at < len(toks) and toks[at] in _EVERY:
        at += 1
    noun = model_nouns(lens).get(toks[at:])
    return noun is not None and noun in {t.model for t in fact.targets}


def _with_average(lens: Lens, sql: str, fact: Mention, less: bool) -> str:
    """The listing's SQL with its placeholder comparison set against the fact's average."""
    dialect = lens.config.dialect
    tree = sqlglot.parse_one(sql, read=dialect)
    marks = [
        lit for lit in tree.find_all(exp.Literal) if not lit.is_string and lit.this == _PLACEHOLDER
    ]
    compared = marks[0].parent if len(marks) == 1 else None
    if not isinstance(tree, exp.Select) or not isinstance(compared, exp.LT | exp.GT):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a comparison with an average read only on a plain listing of rows",
        )
    if isinstance(compared, exp.LT) != less or compared.expression is not marks[0]:
        raise Declined(DeclineKind.AMBIGUOUS_READING, "above or below the average?")
    where = tree.args.get("where")
    alone = where is not None and where.this is compared
    if not alone or compared.find_ancestor(exp.Select) is not tree:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            "the rows are kept by other conditions too: the average of every row, or only "
            "of the rows kept? Ask for the average on its own first",
        )
    if any(tree.args.get(k) for k in ("limit", "group", "having", "qualify")):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a comparison with an average read only on a plain listing of rows",
        )
    source = tree.args.get("from") or tree.args.get("from_")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a comparison with an average read only on a plain listing of rows",
        )
    named = table.name.lower()
    base = next((m for m in lens.models.values() if m.table.split(".")[-1].lower() == named), None)
    if base is None or base.name not in {t.model for t in fact.targets}:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "the fact compared with its average is not a column of the listed rows' model: "
            "say over which rows the average is taken",
        )
    value = compared.this.copy()
    alias = table.alias_or_name
    if any(c.table not in ("", alias) for c in value.find_all(exp.Column)):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "the fact compared with its average is not a column of the listed rows' model",
        )
    for column in value.find_all(exp.Column):
        column.set("table", None)
    average = exp.select(exp.Avg(this=value)).from_(exp.to_table(base.table, dialect=dialect))
    marks[0].replace(average.subquery())
    return tree.sql(dialect=dialect, pretty=True)
