"""How a listed model's rows reach related rows: the link behind ``EXISTS`` (pure).

:mod:`reconciler.reading.grammar.existence` keeps the rows of a model *A* that have (or
lack) related rows of a model *B*. :func:`link` finds the declared joins that relate
them, and :func:`exists_clause` writes the correlated subquery. A link is one of:

* a path of declared many-to-one (or one-to-one) joins from *B* to *A*
  (``treatments → patients``, ``outcomes → treatments → patients``);
* a path from *A* to *B* (``authors → organizations``);
* one *bridge* model with a direct join to each (``paper_keyphrases → papers`` and
  ``paper_keyphrases → keyphrases``), when exactly one model is such a bridge.

Each path must be the only shortest one, never hop a ``one_to_many`` join, and
every hop must pass the join-grain gate (DESIGN §1,
:func:`~reconciler.assembly.grain.join_doubt`): a link that holds in the warehouse
is what makes "has related rows" mean what the lens says. Two kinds of link at
once (a path each way) decline: the relation is not one. The subquery is

    EXISTS (SELECT 1 FROM <root> [JOIN <m> ON …] WHERE <root or m>.<key> = <A>.<key>
            [AND <filters on B>])

a semi-join, so no number of matching related rows repeats a row of *A*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

import sqlglot
from sqlglot import exp

from reconciler.assembly.grain import join_doubt
from reconciler.assembly.joins import as_text, join_paths, keys_differ
from reconciler.assembly.lexicon import DimensionValues
from reconciler.lens import Join, Lens
from reconciler.reading.ir import Declined, DeclineKind, comparison
from reconciler.reading.today import Day, day_sql

Edge = tuple[str, Join]
_WHOLE = re.compile(r"^(int|integer|bigint|smallint|number)$", re.IGNORECASE)


@dataclass(frozen=True)
class Link:
    """The joins that relate model ``listed`` to model ``related``.

    Attributes:
        listed: model *A*, whose rows are listed (the outer query).
        related: model *B*, whose rows must exist (or not).
        root: the model the subquery reads FROM.
        inner: the joins rendered inside the subquery, from ``root`` outward.
        outer: the join that ties the subquery to *A*: ``(model, join)`` where
            ``model`` is inside the subquery and ``join.to`` is *A*, or where
            ``model`` is *A* and ``join.to`` is ``root``.
    """

    listed: str
    related: str
    root: str
    inner: tuple[Edge, ...]
    outer: Edge

    def models(self) -> frozenset[str]:
        """Every model the query reads: *A*, *B* and any model between them."""
        return frozenset({self.listed, self.related, self.root, *(j.to for _, j in self.inner)})


def _only_path(lens: Lens, source: str, target: str) -> tuple[Edge, ...] | None:
    """The one shortest declared path ``source → target``, ``None`` when there is none."""
    paths = join_paths(lens, source, target)
    if not paths or source == target:
        return None
    if len(paths) > 1:
        routes = " / ".join("→".join([source, *(j.to for _, j in p)]) for p in paths)
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"{target!r} is related to {source!r} in several ways ({routes})",
        )
    return paths[0]


def link(lens: Lens, listed: str, related: str, values: DimensionValues) -> Link:
    """The :class:`Link` between ``listed`` (*A*) and ``related`` (*B*) (module docstring).

    Raises:
        Declined: *A* and *B* are one model, no declared join relates them, they are
            related in several ways, a hop is one-to-many, or a hop's "one" side is
            not known to be unique on its key in the warehouse.
    """
    if listed == related:
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"rows of {listed!r} related to other {listed!r} rows: by which relation?",
        )
    found: list[Link] = []
    up = _only_path(lens, related, listed)
    if up is not None:
        found.append(Link(listed, related, related, up[:-1], up[-1]))
    down = _only_path(lens, listed, related)
    if down is not None:
        found.append(Link(listed, related, down[0][1].to, down[1:], down[0]))
    if not found:
        bridges = sorted(
            name
            for name, model in lens.models.items()
            if name not in (listed, related) and {j.to for j in model.joins} >= {listed, related}
        )
        if len(bridges) > 1:
            raise Declined(
                DeclineKind.NO_JOIN_PATH,
                f"{listed!r} and {related!r} are related through several models "
                f"({', '.join(bridges)}): which one?",
            )
        if bridges:
            joins = lens.models[bridges[0]].joins
            to_a = [j for j in joins if j.to == listed]
            to_b = [j for j in joins if j.to == related]
            if len(to_a) > 1 or len(to_b) > 1:
                raise Declined(
                    DeclineKind.NO_JOIN_PATH,
                    f"model {bridges[0]!r} joins {listed!r} or {related!r} twice",
                )
            found.append(
                Link(listed, related, bridges[0], ((bridges[0], to_b[0]),), (bridges[0], to_a[0]))
            )
    if not found:
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"no declared join relates model {listed!r} to model {related!r}",
        )
    if len(found) > 1:
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"{listed!r} and {related!r} join both ways (each has a join to the other): "
            "which relation?",
        )
    chosen = found[0]
    for here, join in (*chosen.inner, chosen.outer):
        if join.relationship == "one_to_many":
            raise Declined(
                DeclineKind.NO_JOIN_PATH,
                f"join {here} → {join.to} is one_to_many: related rows are not one",
            )
        doubt = join_doubt(values, here, join)
        if doubt is not None:
            raise Declined(DeclineKind.NO_JOIN_PATH, doubt)
    return chosen


def qualified(sql: str, alias: str, dialect: str) -> exp.Expr:
    """The column expression ``sql`` with every unqualified column read from ``alias``."""
    tree = sqlglot.parse_one(sql, read=dialect)
    for column in tree.find_all(exp.Column):
        if not column.table:
            column.set("table", exp.to_identifier(alias))
    return tree


def _keys(lens: Lens, here: str, join: Join) -> list[exp.Expr]:
    """``here.<from key> = <to>.<to key>`` for each key pair of ``join``, compared as
    text on both sides when the lens declares one key text and the other not."""
    dialect = lens.config.dialect
    out: list[exp.Expr] = []
    for a, b in join.on.items():
        near, far = qualified(a, here, dialect), qualified(b, join.to, dialect)
        if keys_differ(lens, here, a, join.to, b):
            near, far = as_text(near), as_text(far)
        out.append(exp.EQ(this=near, expression=far))
    return out


def exists_clause(lens: Lens, chosen: Link, filters: list[exp.Expr], negated: bool) -> exp.Expr:
    """``[NOT] EXISTS (SELECT 1 FROM …)`` over ``chosen``, with ``filters`` (already
    qualified by model name) in its WHERE.

    Every table is aliased by its model's name, so the outer query must read *A* as
    ``<table> AS <A>``.
    """
    dialect = lens.config.dialect

    def table(name: str) -> exp.Expr:
        return exp.alias_(exp.to_table(lens.models[name].table, dialect=dialect), name)

    query = exp.select(exp.Literal.number(1)).from_(table(chosen.root))
    for here, join in chosen.inner:
        query = query.join(table(join.to), on=exp.and_(*_keys(lens, here, join)))
    conditions = [*_keys(lens, *chosen.outer), *filters]
    query = query.where(exp.and_(*conditions))
    found = exp.Exists(this=query)
    return exp.Not(this=found) if negated else found


def conditions(
    lens: Lens,
    model: str,
    equalities: list[tuple[str, str]],
    flags: tuple[str, ...] = (),
    span: tuple[Day, Day] | None = None,
) -> list[exp.Expr]:
    """Conditions on ``model``'s rows, its columns qualified by the model's name:
    ``(dimension, value)`` equalities (a whole number on a whole-number column as a
    number), yes/no ``flags`` ``= TRUE``, and ``span`` — a
    half-open ``[start, stop)`` on the model's time dimension (an open end,
    ``date.min`` / ``date.max``, adds no condition)."""
    dialect = lens.config.dialect
    found = lens.models[model]

    def column(name: str) -> exp.Expr:
        sql = next(c.sql for c in found.columns() if c.name == name)
        return qualified(sql, model, dialect)

    def literal(name: str, value: str) -> exp.Expr:
        data_type = next(c.data_type for c in found.columns() if c.name == name)
        whole = value.isdigit() and _WHOLE.match(data_type) is not None
        return exp.Literal.number(value) if whole else exp.Literal.string(value)

    out: list[exp.Expr] = [
        exp.EQ(this=column(name), expression=literal(name, value)) for name, value in equalities
    ]
    out.extend(exp.EQ(this=column(name), expression=exp.true()) for name in flags)
    time = found.time_dimension()
    if span is not None and time is not None:
        start, stop = (day_sql(d) for d in span)
        if span[0] != date.min:
            out.append(column(time.name) >= start)
        if span[1] != date.max:
            out.append(column(time.name) < stop)
    return out


def compared(lens: Lens, model: str, name: str, op: str, number: str) -> exp.Expr:
    """``<model>.<column name> <op> <number>``, the column qualified by the model's name
    (:func:`~reconciler.reading.ir.comparison`)."""
    sql = next(c.sql for c in lens.models[model].columns() if c.name == name)
    column = qualified(sql, model, lens.config.dialect)
    return comparison(column, op, number)
