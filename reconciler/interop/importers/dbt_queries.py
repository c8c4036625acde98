"""dbt saved queries → lens exemplars (pure, sqlglot).

A saved query (dbt docs, "Saved queries": ``query_params`` with ``metrics``,
``group_by``, ``where``, ``order_by``, ``limit``) is a named, uncertified
question → SQL example, which is what an exemplar is. Its SQL is compiled here
once, the way MetricFlow would for one model:

* ``FROM`` the metrics' model, aliased by the model's name, ``INNER JOIN`` along
  the declared joins to every model a group-by or filter reads;
* ``SELECT`` each group-by under MetricFlow's output name (``listing__capacity_latest``,
  ``metric_time__day``), then each metric under its name;
* ``WHERE`` the metrics' shared filters and the query's ``where``; ``GROUP BY``
  the group-bys; ``ORDER BY``/``LIMIT`` as given.

Metrics of different models need MetricFlow's metric join (a full outer join on
the group-by keys), and a query without metrics has no aggregate; both raise
:class:`~reconciler.interop.importers.dbt_metrics.Unmappable`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import exp

from reconciler import guard
from reconciler.interop.importers import scalar_text
from reconciler.interop.importers.dbt_metrics import (
    DIALECT,
    Form,
    Resolver,
    Unmappable,
    filter_texts,
    fold_filters,
)
from reconciler.interop.importers.dbt_source import mapping
from reconciler.lens import Exemplar, Join

_CALL = re.compile(r"^\s*(\w+)\(([^)]*)\)((?:\s*\.\s*\w+\([^)]*\))*)\s*$")
_ARG = re.compile(r"""['"]([^'"]*)['"]""")


def compile_saved_query(
    raw: Mapping[str, Any],
    forms: Mapping[str, Form],
    resolver: Resolver,
    joins: Mapping[str, tuple[Join, ...]],
    tables: Mapping[str, str],
) -> Exemplar:
    """The exemplar of one saved query.

    Args:
        raw: the saved query mapping.
        forms: the lens forms of the mapped metrics, by metric name.
        resolver: resolves dimension and entity references and filters.
        joins: each lens model's joins.
        tables: each lens model's physical table.

    Raises:
        Unmappable: a metric that was not mapped, metrics of several models, no
            metrics, a reference that does not resolve, or a join path that is
            missing or ambiguous.
    """
    params = mapping(raw.get("query_params"))
    names = [scalar_text(m).strip() for m in params.get("metrics") or ()]
    if not names:
        raise Unmappable("a query without metrics has no aggregate to compile")
    missing = [n for n in names if n not in forms]
    if missing:
        raise Unmappable(f"metric {missing[0]!r} was not imported")
    chosen = [forms[n] for n in names]
    models = sorted({f.model for f in chosen})
    if len(models) > 1:
        raise Unmappable(
            f"its metrics aggregate different models ({', '.join(models)}), which needs "
            "a metric join on the group-by keys"
        )
    base = models[0]
    shared = len({f.filters for f in chosen}) == 1
    select: list[exp.Expr] = []
    keys: dict[str, exp.Expr] = {}
    for item in params.get("group_by") or ():
        alias, sql = _group_by(scalar_text(item), base, resolver)
        keys[alias] = _qualified(sql, base)
    for alias, tree in keys.items():
        select.append(exp.alias_(tree.copy(), alias))
    for name, form in zip(names, chosen, strict=True):
        tree = form.expression if shared else fold_filters(form.expression, form.filters)
        select.append(exp.alias_(_qualified(tree.sql(dialect=DIALECT), base), name))
    conditions = [_qualified(f, base) for f in (chosen[0].filters if shared else ())]
    conditions += [
        _qualified(resolver.filter_sql(text, base), base)
        for text in filter_texts(params.get("where"))
    ]
    query = exp.select(*select).from_(exp.alias_(exp.to_table(tables[base]), base, table=True))
    read = {c.table for e in [*select, *conditions] for c in e.find_all(exp.Column) if c.table}
    for here, join in _join_edges(base, read - {base}, joins):
        on = exp.and_(*(exp.column(a, here).eq(exp.column(b, join.to)) for a, b in join.on.items()))
        query = query.join(exp.alias_(exp.to_table(tables[join.to]), join.to, table=True), on=on)
    if conditions:
        query = query.where(exp.and_(*conditions))
    if keys:
        query = query.group_by(*(exp.column(alias) for alias in keys))
    order = [_order(scalar_text(o), keys, names) for o in params.get("order_by") or ()]
    if order:
        query = query.order_by(*order)
    if params.get("limit") is not None:
        query = query.limit(int(scalar_text(params["limit"])))
    sql = query.sql(dialect=DIALECT, pretty=True)
    guard.check_read_only(sql, DIALECT)
    name = scalar_text(raw.get("name")).strip().lower()
    description = scalar_text(raw.get("description")).strip()
    first_line = description.splitlines()[0] if description else ""
    question = scalar_text(raw.get("label")).strip() or first_line
    return Exemplar(
        name=name,
        question=question or name.replace("_", " "),
        sql=sql,
        description=f"dbt saved query {name!r}, compiled at import. {description}".strip(),
    )


def _parse_call(text: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    match = _CALL.match(text)
    if match is None:
        raise Unmappable(f"{text!r} is not Dimension(...)/TimeDimension(...)/Entity(...)")
    methods = re.findall(r"\.\s*(\w+)\(([^)]*)\)", match.group(3) or "")
    return match.group(1), _ARG.findall(match.group(2)), methods


def _group_by(text: str, base: str, resolver: Resolver) -> tuple[str, str]:
    """``(output name, SQL seen from base)`` of one group-by item."""
    call, args, methods = _parse_call(text)
    if not args:
        raise Unmappable(f"group_by {text!r} names nothing")
    grain = args[1] if len(args) > 1 else None
    for method, arg in methods:
        if method != "grain":
            raise Unmappable(f"group_by {text!r} uses .{method}(), which has no lens form")
        grain = (_ARG.findall(arg) or [None])[0]
    ref = args[0].lower()
    if call == "Entity":
        return ref, resolver.entity_sql(ref, base)
    if call not in ("Dimension", "TimeDimension"):
        raise Unmappable(f"group_by {call}() is not a dimension or entity")
    sql = resolver.dimension_sql(ref, base)
    if grain:
        template = "{{ TimeDimension('" + ref + "', '" + grain + "') }}"
        return f"{ref}__{grain.lower()}", resolver.filter_sql(template, base)
    return ref, sql


def _order(text: str, keys: Mapping[str, exp.Expr], metrics: list[str]) -> exp.Ordered:
    call, args, methods = _parse_call(text)
    desc = any(m == "descending" and "true" in a.lower() for m, a in methods)
    name = args[0].lower() if args else ""
    if call == "Metric" and name in metrics:
        return exp.Ordered(this=exp.column(name), desc=desc)
    grain = next((_ARG.findall(a) for m, a in methods if m == "grain"), None)
    for alias in (
        name,
        f"{name}__{args[1].lower()}" if len(args) > 1 else "",
        f"{name}__{grain[0]}" if grain else "",
    ):
        if alias and alias in keys:
            return exp.Ordered(this=exp.column(alias), desc=desc)
    raise Unmappable(f"order_by {text!r} is neither a metric nor a group-by of the query")


def _qualified(sql: str, base: str) -> exp.Expr:
    tree = sqlglot.parse_one(sql, read=DIALECT)
    for col in tree.find_all(exp.Column):
        if not col.table:
            col.set("table", exp.to_identifier(base))
    return tree


def _join_edges(
    base: str, targets: set[str], joins: Mapping[str, tuple[Join, ...]]
) -> list[tuple[str, Join]]:
    """The declared joins from ``base`` to each target, each path unique and fan-out free."""
    edges: list[tuple[str, Join]] = []
    for target in sorted(targets):
        parents: dict[str, tuple[str, Join]] = {}
        queue, seen = deque([base]), {base}
        while queue:
            here = queue.popleft()
            for join in joins.get(here, ()):
                if join.to not in seen:
                    seen.add(join.to)
                    parents[join.to] = (here, join)
                    queue.append(join.to)
        if target not in parents:
            raise Unmappable(f"no declared join leads from {base!r} to {target!r}")
        path: list[tuple[str, Join]] = []
        node = target
        while node != base:
            path.insert(0, parents[node])
            node = parents[node][0]
        for here, join in path:
            if join.relationship == "one_to_many":
                raise Unmappable(f"join {here} → {join.to} is one_to_many and would fan out")
            if (here, join) not in edges:
                edges.append((here, join))
    return edges
