"""Columns a listing shows from models its rows reach, one related row each (pure).

A listing lists the rows of one model (:mod:`reconciler.reading.grammar.listing`).
A column it asks for that is not on that model may be on a model the rows reach
along declared many-to-one or one-to-one joins only: each listed row meets at most
one row there, so the column is still a value of the listed row — "the names of
poker players in descending order of earnings" shows each poker player's person's
name, "the model of the car with the least horsepower" the car's model. A one-to-many
hop, or a join walked backwards, would repeat the listed rows: such a column is not
the listing's (:func:`joined_column` gives ``None``).

Such columns are read only when the listed rows are named by the fact ranked ("the
car model with the highest mpg" ranks cars: :func:`rows_model`) or by a noun the
columns are said *of* ("the names of the poker players"): a noun after a verb ("…
that have outcomes") names other rows (:func:`reaching`).

When a phrase names columns on several reachable models, it names one value when
each further column is the join key the nearer one is joined on (``car_names.model``
and ``car_models.model_name``, equal on the join between them): the nearest is
shown. Otherwise the listing declines (which one?).

:func:`with_joins` adds the joins to the listing's query: each reached model once,
``LEFT JOIN`` (a listed row whose related row is missing keeps its place with NULL
columns, never dropped by the join; a ranking's NULL-group gate then names no such
row, and says so), every column
of the outer query qualified by its model (a subquery keeps its own table's). A
column expression that names its table itself is not joined (declines).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import Path, join_paths, key_equalities
from reconciler.assembly.lexicon import Target
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import NUMBER_WORDS
from reconciler.reading.phrases.nouns import EVERY

_BEFORE_ROWS = frozenset({"the", "all", *EVERY, *NUMBER_WORDS})  # "of the 3 players"


_OWN_TABLE = DeclineKind.UNSUPPORTED_CONSTRUCT


def reach(lens: Lens, base: str, model: str) -> Path | None:
    """The one shortest declared path from ``base`` to ``model`` whose every hop is
    many-to-one or one-to-one; ``None`` when there is none (or ``model`` is ``base``).

    Raises:
        Declined: several such paths (which one?).
    """
    if model == base:
        return None
    paths = [
        p
        for p in join_paths(lens, base, model)
        if all(j.relationship != "one_to_many" for _, j in p)
    ]
    if len(paths) > 1:
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"model {model!r} is reachable from {base!r} in several ways: which one?",
        )
    return paths[0] if paths else None


def joined_column(
    lens: Lens, base: str, targets: tuple[Target, ...], phrase: str
) -> tuple[Column, Path] | None:
    """The column of a model the rows of ``base`` reach one-to-one (module docstring)
    that ``targets`` name, with its path; ``None`` when they name none.

    Raises:
        Declined: columns of several reachable models that are not one value.
    """
    found: list[tuple[Column, Path]] = []
    for t in targets:
        path = reach(lens, base, t.model)
        col = next((c for c in lens.models[t.model].columns() if c.name == t.name), None)
        if path is not None and col is not None:
            found.append((col, path))
    found.sort(key=lambda f: len(f[1]))
    if not found:
        return None
    near = found[0]
    if any(not _keyed_on(near, other) for other in found[1:]):
        places = ", ".join(f"{p[-1][1].to}.{c.name}" for c, p in found)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{phrase!r} could mean several columns ({places})"
        )
    return near


def _keyed_on(near: tuple[Column, Path], other: tuple[Column, Path]) -> bool:
    """Whether ``other``'s column is the join key ``near``'s column is joined on, along
    ``near``'s path continued to ``other``'s model (the two hold one value)."""
    (col, path), (far, far_path) = near, other
    if far_path[: len(path)] != path:
        return False
    here = col.sql
    for _, join in far_path[len(path) :]:
        if here not in join.on:
            return False
        here = join.on[here]
    return here == far.sql


def qualified(sql: str, alias: str, dialect: str) -> str:
    """``sql`` with its bare columns qualified by ``alias``."""

    def fix(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table:
            raise Declined(_OWN_TABLE, f"{sql!r} names its table: not joined by a listing")
        if isinstance(node, exp.Column):
            new = node.copy()
            new.set("table", exp.to_identifier(alias))
            return new
        return node

    return sqlglot.parse_one(sql, read=dialect).transform(fix).sql(dialect=dialect)


def with_joins(lens: Lens, query: exp.Select, base: str, paths: list[Path]) -> exp.Select:
    """``query`` over ``base``'s table with every model of ``paths`` LEFT JOINed once,
    each table aliased by its model's name and every bare column of the outer query
    qualified by ``base`` (module docstring); ``query`` unchanged when ``paths`` is empty."""
    if not paths:
        return query
    dialect = lens.config.dialect
    aliases = {base, *(join.to for path in paths for _, join in path)}
    for column in list(query.find_all(exp.Column)):
        if column.find_ancestor(exp.Subquery) is not None:
            continue
        if column.table and column.table not in aliases:
            raise Declined(_OWN_TABLE, f"{column.sql()!r} names its table: not joined by a listing")
        if not column.table:
            column.set("table", exp.to_identifier(base))
    table = exp.to_table(lens.models[base].table, dialect=dialect)
    query.set("from_", exp.From(this=exp.alias_(table, base, table=True)))
    joined = {base}
    for path in paths:
        for here, join in path:
            if join.to in joined:
                continue
            joined.add(join.to)
            keys = key_equalities(lens, here, join, here, join.to)
            right = exp.to_table(lens.models[join.to].table, dialect=dialect)
            query = query.join(
                exp.alias_(right, join.to, table=True), on=exp.and_(*keys), join_type="left"
            )
    return query


def listed_column(
    lens: Lens, model: Model, targets: tuple[Target, ...], phrase: str, paths: list[Path] | None
) -> tuple[str, str]:
    """``(alias, SQL)`` of the column of ``model``, else (``paths`` not ``None``) of a
    model its rows reach one to one (:func:`joined_column`: its SQL qualified by that
    model, its path added to ``paths``), that ``targets`` name.

    Raises:
        Declined: no such column, or several that are not one value.
    """
    own = next(
        (c for t in targets if t.model == model.name for c in model.columns() if c.name == t.name),
        None,
    )
    if own is not None:
        return own.name, own.sql
    joined = None if paths is None else joined_column(lens, model.name, targets, phrase)
    if joined is None or paths is None:
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"{phrase!r} is not a column of model {model.name!r}"
        )
    col, path = joined
    if path not in paths:
        paths.append(path)
    return col.name, qualified(col.sql, path[-1][1].to, lens.config.dialect)


def reaching(
    found: Retrieval, noun: tuple[int, int] | None, paths: list[Path]
) -> list[Path] | None:
    """``paths`` when a listing may show columns of models its rows reach, else ``None``:
    its rows are named by the ranked fact (no ``noun``), or by a noun the columns are
    said *of* ("the names of (all) the poker players"), not one after a verb ("… that
    have outcomes" names other rows)."""
    if noun is None:
        return paths
    k = noun[0] - 1
    while k > 0 and (found.tokens[k] in _BEFORE_ROWS or found.tokens[k].isdigit()):
        k -= 1
    return paths if found.tokens[k : k + 1] in (("of",), ("for",)) else None


def rows_model(
    lens: Lens, ranked: tuple[Target, ...], asked: list[tuple[Target, ...]]
) -> str | None:
    """The one model of a ranked fact (``ranked``) whose rows reach a column of every
    asked phrase (``asked``): on the model, or one to one (:func:`reach`); else ``None``."""

    def shows(model: str, targets: tuple[Target, ...]) -> bool:
        return any(t.model == model or _reaches(lens, model, t.model) for t in targets)

    models = {t.model for t in ranked if t.kind == "fact"}
    fits = [m for m in sorted(models) if all(shows(m, a) for a in asked)]
    return fits[0] if len(fits) == 1 else None


def showing_model(lens: Lens, asked: list[tuple[Target, ...]]) -> str | None:
    """The one model, among those the asked phrases name, whose rows reach a column of
    every asked phrase — on the model, or one to one — ("the song titles and singer
    names": the songs, each with its singer's name); else ``None``."""

    def shows(model: str, targets: tuple[Target, ...]) -> bool:
        return any(t.model == model or _reaches(lens, model, t.model) for t in targets)

    models = {t.model for targets in asked for t in targets}
    fits = [m for m in sorted(models) if all(shows(m, a) for a in asked)]
    return fits[0] if len(fits) == 1 else None


def _reaches(lens: Lens, base: str, model: str) -> bool:
    try:
        return reach(lens, base, model) is not None
    except Declined:
        return True  # reached, in several ways: resolving the column declines
