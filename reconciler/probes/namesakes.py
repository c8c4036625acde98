"""The namesake gate: a filter on a name must not add several entities together (sqlglot).

DESIGN §1 runtime gates, for every tier. "How many appointments did Anna Kowalski
have?" filtered on ``doctor_name = 'Anna Kowalski'`` counts the appointments of every
doctor so named; where two doctors share the name the answer is their sum, and nothing
in the result says so. A name is not a key.

:func:`namesake_probes` finds, in any SELECT of the query, an equality of a *label*
column (a model's name-like or person dimension, :class:`Label`) with a string
literal, where that SELECT does not group by the model's key, and writes one bounded
query per such filter: the number of distinct keys holding the name. :func:`judge`
fails (``warning``, so the answer is ``review_required``) when more than one does.

Where the filter sits in the query's own top-level SELECT of aggregates only (no
GROUP BY, LIMIT, window or set operation: "SELECT COUNT(*) … WHERE name = 'Ann Lee'"),
the gate repairs instead of warning: :attr:`Namesake.each_sql` is the same query with
the label's key and name put first and grouped by, one row per entity so named, and
the answer is served that way with a note, as the tie gate keeps every tied row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from reconciler.assembly.lexicon import person_dimensions
from reconciler.assembly.text import tokenize
from reconciler.errors import UnsafeSqlError
from reconciler.guard import parse_query
from reconciler.lens import Lens
from reconciler.resultset import ResultSet
from reconciler.trust import Evaluation, RepairAction, Route

GATE_NAMESAKE = "namesake"
_COUNT = "dst_entities"


@dataclass(frozen=True)
class Label:
    """A column that names rows of a model with a one-column key.

    Attributes:
        model: the lens model's name (for messages).
        table: its table, as the lens declares it (compared by its last part).
        key: the primary key column.
        column: the label column's name in the table.
    """

    model: str
    table: str
    key: str
    column: str


@dataclass(frozen=True)
class Namesake:
    """One name filter and the probe that counts the entities holding the name."""

    label: Label
    value: str
    probe_sql: str
    each_sql: str | None = None  # one row per entity holding the name (module docstring)


_NAME_WORDS = frozenset({"name", "title"})


def lens_labels(lens: Lens) -> tuple[Label, ...]:
    """The label columns of ``lens``: each dimension (a plain column, not the key) of a
    model with a one-column primary key whose name or column ends in ``name``/``title``,
    or that names a person (:func:`~reconciler.assembly.lexicon.person_dimensions`)."""
    persons = {(t.model, t.name) for t in person_dimensions(lens)}
    out: list[Label] = []
    for model in lens.models.values():
        if len(model.primary_key) != 1:
            continue
        key = model.primary_key[0]
        for col in model.dimensions:
            plain = col.sql.replace("_", "").isalnum()
            named = any(
                (words := tokenize(text.replace("_", " "))) and words[-1] in _NAME_WORDS
                for text in (col.name, col.sql)
            )
            if not plain or col.sql.lower() == key.lower():
                continue
            if named or (model.name, col.name) in persons:
                out.append(Label(model.name, model.table, key, col.sql))
    return tuple(out)


def _table_name(name: str) -> str:
    return name.split(".")[-1].strip('"`').lower()


def _tables(select: exp.Select) -> dict[str, str]:
    """``{alias or name: table name}`` of the tables in ``select``'s own FROM and JOINs."""
    out: dict[str, str] = {}
    sources = [select.args.get("from"), *(select.args.get("joins") or [])]
    for source in sources:
        table = source.this if source is not None else None
        if isinstance(table, exp.Table):
            out[(table.alias_or_name or table.name).lower()] = table.name.lower()
    return out


def namesake_probes(sql: str, dialect: str, labels: tuple[Label, ...]) -> tuple[Namesake, ...]:
    """The name filters of ``sql`` that may add namesakes together (module docstring).

    Args:
        sql: one query, in ``dialect``.
        dialect: a sqlglot dialect name.
        labels: the lens's label columns.

    Returns:
        One :class:`Namesake` per ``<label column> = '<text>'`` in a SELECT that does
        not group by the label's key; empty when the SQL does not parse or has none.
    """
    if not labels:
        return ()
    try:
        tree = parse_query(sql, dialect)
    except UnsafeSqlError:
        return ()
    by_place = {(_table_name(lb.table), lb.column.lower()): lb for lb in labels}
    found: dict[tuple[str, str], Namesake] = {}
    for eq in tree.find_all(exp.EQ):
        column, literal = eq.this, eq.expression
        if isinstance(literal, exp.Column):
            column, literal = literal, column
        if not (isinstance(column, exp.Column) and isinstance(literal, exp.Literal)):
            continue
        if not literal.is_string:
            continue
        select = eq.find_ancestor(exp.Select)
        if select is None:
            continue
        tables = _tables(select)
        if column.table:
            table = tables.get(column.table.lower())
        else:
            table = next(iter(tables.values())) if len(tables) == 1 else None
        label = by_place.get((table or "", column.name.lower()))
        if label is None or _groups_by(select, label.key):
            continue
        probe = (
            exp.select(
                exp.alias_(
                    exp.Count(this=exp.Distinct(expressions=[exp.column(label.key)])), _COUNT
                )
            )
            .from_(exp.to_table(label.table, dialect=dialect))
            .where(exp.column(label.column).eq(exp.Literal.string(literal.this)))
        )
        each = _each_entity(tree, select, column, label, dialect)
        found.setdefault(
            (label.table, literal.this),
            Namesake(label, literal.this, probe.sql(dialect=dialect), each),
        )
    return tuple(found.values())


def _each_entity(
    tree: exp.Expr, select: exp.Select, column: exp.Column, label: Label, dialect: str
) -> str | None:
    """``tree`` with ``label``'s key and name first and grouped by, when ``select`` is
    its top-level SELECT of aggregates only (module docstring); else ``None``."""
    plain = not any(select.args.get(k) for k in ("group", "limit", "order", "having"))
    outputs = select.expressions
    aggregates = all(
        o.find(exp.AggFunc) is not None and o.find(exp.Window) is None for o in outputs
    )
    if tree is not select or not plain or not outputs or not aggregates:
        return None
    qualifier = column.table
    key = exp.column(label.key, table=qualifier) if qualifier else exp.column(label.key)
    name = exp.column(label.column, table=qualifier) if qualifier else exp.column(label.column)
    each = select.copy()
    each.set(
        "expressions",
        [exp.alias_(key, label.key), exp.alias_(name, label.column), *each.expressions],
    )
    each = each.group_by(key.copy(), name.copy()).order_by(key.copy())
    return each.sql(dialect=dialect)


def _groups_by(select: exp.Select, key: str) -> bool:
    group = select.args.get("group")
    if group is None:
        return False
    return any(
        isinstance(c, exp.Column) and c.name.lower() == key.lower() for c in group.expressions
    )


def judge(
    namesake: Namesake, counted: ResultSet, route: Route, *, shown_each: bool = False
) -> Evaluation:
    """Fail (``warning``) when more than one entity holds the name the query filters on;
    passed (``info``) when one does, or when ``shown_each``: the answer was repaired to
    one row per entity (:attr:`Namesake.each_sql`)."""
    n = counted.rows[0][0] if counted.rows and counted.rows[0] else 0
    lb = namesake.label
    if not isinstance(n, int) or n <= 1:
        return Evaluation(
            GATE_NAMESAKE, True, "info", detail=f"{namesake.value!r} names one {lb.model} row"
        )
    if shown_each:
        detail = (
            f"{namesake.value!r} names {n} different {lb.model} rows (distinct {lb.key}): "
            f"one row for each is shown"
        )
        return Evaluation(GATE_NAMESAKE, True, "info", detail=detail)
    detail = (
        f"{namesake.value!r} names {n} different {lb.model} rows (distinct {lb.key}): "
        f"the answer adds them together"
    )
    return Evaluation(
        GATE_NAMESAKE,
        False,
        "warning",
        detail=detail,
        suggested_repair=f"group by {lb.model}.{lb.key} to show each one, or ask by its key",
        repair_action=RepairAction("retry", route, f"group by {lb.key} as well"),
    )
