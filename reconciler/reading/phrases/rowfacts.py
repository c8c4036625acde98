"""Raw facts as conditions on a listed model's own rows, without an aggregate (pure).

A listing keeps the rows a comparison on one of *its own* facts passes ("the aircraft
codes of all aircraft with a cruising speed of over 200"; the phrase is split off by
:mod:`reconciler.reading.phrases.bounds`): :func:`row_bounds`. "Which <nouns> have the
highest <fact>", plural with no count, keeps every row tied at the extreme:
:func:`tied_rows`; a ranking whose rows are a column's values ("which 3 manufacturers
have the highest capacity") needs an aggregate: :func:`check_ranked_values`. Used by
:mod:`reconciler.reading.grammar.listing` and :mod:`reconciler.reading.grammar.rawfacts`.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import Target
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, comparison
from reconciler.reading.phrases.bounds import Bound
from reconciler.reading.phrases.naming import is_key


def is_column(target: Target, model: Model, column: Column) -> bool:
    """Whether a phrase's ``target`` is ``column`` of ``model``."""
    return target.model == model.name and target.name == column.name


def row_bounds(lens: Lens, model: Model, bounds: tuple[Bound, ...]) -> list[exp.Expr]:
    """The WHERE conditions of comparisons on columns of the rows listed
    (:mod:`reconciler.reading.phrases.bounds`): "the aircraft with a cruising speed of over
    200", "the cars with 4 cylinders" (an integer dimension held).

    Raises:
        Declined: a compared fact of another model than the listed one (its rows are
            not these), or a phrase naming several facts of it.
    """
    dialect = lens.config.dialect
    out: list[exp.Expr] = []
    for bound in bounds:
        named = [c for c in model.columns() if any(is_column(t, model, c) for t in bound.facts)]
        if not named:
            places = ", ".join(sorted({f"{t.model}.{t.name}" for t in bound.facts}))
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{bound.phrase!r} compares {places}, not a fact of the {model.name} listed",
            )
        if len(named) > 1:
            listed = ", ".join(c.name for c in named)
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{bound.phrase!r} names several facts of {model.name}: {listed}",
            )
        for op, n in bound.conditions:
            out.append(comparison(sqlglot.parse_one(named[0].sql, read=dialect), op, n))
    return out


def tied_rows(lens: Lens, model: Model, extreme: tuple[str, bool], query: exp.Select) -> exp.Expr:
    """``<column> = (SELECT MAX(<column>) FROM <table> WHERE …)`` (``MIN`` when not
    descending): every row of ``query`` tied at the extreme of the column ``extreme``
    (``(SQL, descending)``), within the rows ``query``'s WHERE keeps.

    Raises:
        Declined: the column is not one of ``model``'s own (a fact of a row it reaches:
            the subquery reads ``model``'s table only).
    """
    if extreme[0] not in {c.sql for c in model.columns()}:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "ties at a related row's extreme")
    dialect = lens.config.dialect
    value = sqlglot.parse_one(extreme[0], read=dialect)
    top = exp.Max(this=value.copy()) if extreme[1] else exp.Min(this=value.copy())
    inner = exp.select(top).from_(exp.to_table(model.table, dialect=dialect))
    where = query.args.get("where")
    if where is not None:
        inner.set("where", where.copy())
    return exp.EQ(this=value, expression=exp.Subquery(this=inner))


def check_ranked_values(
    lens: Lens, model: Model, columns: list[tuple[str, str]], key: tuple[str, str]
) -> None:
    """Decline a ranking by a fact that lists columns naming no one row: "which 3
    manufacturers have the highest capacity" ranks manufacturers, each over several
    rows, so it needs an aggregate; the model's key or a name or title column names
    its rows ("which 3 aircraft codes have the highest capacity").

    Args:
        lens: the lens.
        model: the model listed (the question names no noun of it).
        columns: ``(alias, SQL)`` of the listed columns.
        key: ``(alias, SQL)`` of the fact ranked by.

    Raises:
        Declined: a listed column that is neither the key nor a name or title column.
    """
    for alias, _ in columns:
        if is_key(lens, model.name, alias) or tokenize(alias)[-1:] in (("name",), ("title",)):
            continue
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"ranking {alias!r} by {key[0]!r}: several {model.name} rows share a {alias}, so "
            f"it needs an aggregate (total, average, maximum {key[0]} by {alias}), or rank "
            f"the {model.name} rows themselves",
        )
