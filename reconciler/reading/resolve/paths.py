"""Join paths of a :class:`~reconciler.reading.ir.Plan` (pure).

A plan's models are reached from its base model along declared joins, else through one
hop against a join's direction (:func:`~reconciler.assembly.joins.related_paths`: a
bridge model, a one-to-many join). Such a hop repeats the base's rows once per related
row; :func:`plan_edges` says which measures may be taken through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import Reversal, join_paths, related_paths
from reconciler.assembly.lexicon import Target
from reconciler.lens import Join, Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan


class _OnModel(Protocol):
    @property
    def model(self) -> str: ...


T = TypeVar("T", bound=_OnModel)


def one_path(lens: Lens, base: str, target: str) -> tuple[tuple[str, Join], ...]:
    """The single join path from ``base`` to ``target``: the shortest along declared
    joins, else the shortest related path (one hop against a join's direction:
    :func:`~reconciler.assembly.joins.related_paths`).

    Whether the plan's measures may be taken through a hop that fans ``base``'s rows
    out is :func:`plan_edges`'s business.

    Raises:
        Declined: no declared or related path, or several shortest paths.
    """
    paths = join_paths(lens, base, target) or related_paths(lens, base, target)
    if not paths:
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"no declared join leads from model {base!r} to model {target!r}",
        )
    if len(paths) > 1:
        routes = " / ".join(_route(base, p) for p in paths)
        raise Declined(
            DeclineKind.NO_JOIN_PATH,
            f"model {target!r} is reachable from {base!r} in several ways ({routes})",
        )
    return paths[0]


def check_dated_through(
    lens: Lens, base: str, path: tuple[tuple[str, Join], ...], date: str
) -> None:
    """Decline a period on ``base``'s rows taken from another model's date along
    ``path``, unless each hop is the row's own parent: a many-to-one join on columns
    of the joining model's primary key (an order line's ``order_id`` in its key makes
    the order's date the line's). A production's director, a booking's room, a
    customer's orders are other things, with dates of their own: "productions in
    2024" is not "productions whose director was hired in 2024".

    Raises:
        Declined: ``MISSING_IN_LENS``, naming the date and the join it would go through.
    """
    for here, join in path:
        keys = {k.lower() for k in lens.models[here].primary_key}
        own = not isinstance(join, Reversal) and join.relationship != "one_to_many"
        if own and keys and all(c.lower() in keys for c in join.on):
            continue
        target = path[-1][1].to
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"model {base!r} has no date of its own: the period would apply to "
            f"{target}.{date} (through {_route(base, path)}), which dates other rows; "
            f"name that date to use it, or give {base!r} a time dimension",
        )


def _route(base: str, path: tuple[tuple[str, Join], ...]) -> str:
    """``papers←paper_datasets→datasets``: each hop's arrow in its declared direction."""
    out = base
    for _, join in path:
        out += ("←" if isinstance(join, Reversal) else "→") + join.to
    return out


def reachable(lens: Lens, base: str, targets: Sequence[T]) -> list[T]:
    """The ``targets`` (anything with a ``model``) a declared join path from ``base``
    reaches; when none is, those a related path reaches (see :func:`one_path`)."""
    forward = [t for t in targets if join_paths(lens, base, t.model)]
    return forward or [t for t in targets if related_paths(lens, base, t.model)]


def plan_edges(lens: Lens, plan: Plan) -> tuple[tuple[str, Join], ...]:
    """Every join ``plan`` makes, ``(from model, join)`` in join order, each model once.

    A hop that fans ``plan.base``'s rows out (a declared ``one_to_many`` join, or a
    join walked backwards) repeats each row once per related row: every measure must
    be one that survives it (:func:`fanout_doubt`). The join-grain gate is the
    caller's (:func:`reconciler.assembly.grain.join_doubt` on each edge).

    A join walked backwards must lead into a bridge model (:func:`reversal_doubt`).

    Raises:
        Declined: a model is reached two ways, a path fans out twice, walks a join
            backwards into a model that is not a bridge, or a measure would be
            changed by the fan-out.
    """
    edges: dict[str, tuple[str, Join]] = {}
    for target in plan.models():
        path = one_path(lens, plan.base, target)
        fans = [(h, j) for h, j in path if j.relationship == "one_to_many"]
        if len(fans) > 1:
            raise Declined(
                DeclineKind.NO_JOIN_PATH,
                f"{_route(plan.base, path)} fans {plan.base!r} rows out twice",
            )
        if doubt := reversal_doubt(lens, plan, target, path):
            raise Declined(DeclineKind.NO_JOIN_PATH, doubt)
        if fans and (doubt := fanout_doubt(lens, plan, path)):
            raise Declined(DeclineKind.NO_JOIN_PATH, doubt)
        for here, join in path:
            if edges.setdefault(join.to, (here, join)) != (here, join):
                raise Declined(
                    DeclineKind.NO_JOIN_PATH,
                    f"model {join.to!r} would be joined from {plan.base!r} two ways",
                )
    return tuple(edges.values())


def is_bridge(lens: Lens, model: str) -> bool:
    """Whether ``model`` only relates rows of other models: no facts, no time dimension,
    and every metric on it an unfiltered count of distinct values of one of its keys
    (its primary key or a join's column): ``authorships``, ``paper_datasets``, a
    ``categories`` model of labels per business, ``offerings`` of courses per semester."""
    found = lens.models[model]
    if found.facts or found.time_dimensions:
        return False
    keys = {k.lower() for k in found.primary_key}
    keys.update(k.lower() for j in found.joins for k in j.on)
    for metric in lens.metrics.values():
        if metric.model != model:
            continue
        tree = sqlglot.parse_one(metric.expression, read=lens.config.dialect)
        counted = tree.this.expressions if isinstance(tree, exp.Count) else []
        distinct = isinstance(tree, exp.Count) and isinstance(tree.this, exp.Distinct)
        if metric.filters or not distinct or len(counted) != 1:
            return False
        if not isinstance(counted[0], exp.Column) or counted[0].name.lower() not in keys:
            return False
    return True


def reversal_doubt(
    lens: Lens, plan: Plan, target: str, path: tuple[tuple[str, Join], ...]
) -> str | None:
    """Why ``plan`` may not read ``target`` along ``path``, or ``None``.

    A join walked backwards (``maintenance_events → bikes ← rentals``) meets every row
    that refers to the row it starts from. Into a bridge model (:func:`is_bridge`) that
    relates each row to the groups it belongs to (a paper to each of its authors).
    Into any other model it is read only from the base itself and only by counts of
    the base's rows, each kept once per group (the venues with papers in each year,
    the courses offered in each semester: :func:`per_base_row`). Further out it
    relates a row to the values another entity's rows had (each ticket to every bike
    type its bike's rentals were recorded with, to every member who rode the bike),
    and a sum or average from the base would weigh a row once per related row's value
    (a fare in each month one of its payments was taken): both decline.
    """
    for at, (here, join) in enumerate(path):
        if not isinstance(join, Reversal) or is_bridge(lens, join.to):
            continue
        measures = (plan.measure, *plan.extra)
        if at == 0 and all(_counts(lens, m) for m in measures):
            continue
        used = [
            f"{m}.{d}"
            for m, d in (
                *plan.breakdowns,
                *((f[0], f[1]) for f in (*plan.filters, *plan.excluded)),
                *plan.flags,
                *((plan.time,) if plan.time else ()),
                *((b[0], b[1]) for b in plan.bounds),
            )
            if m == target
        ]
        what = f"a breakdown or filter by {', '.join(used) if used else target}"
        return (
            f"each {here} row has many {join.to} rows (join {join.to} → {here} walked "
            f"backwards), and {join.to} is not a bridge model (it holds facts, a time "
            f"dimension or a metric of its own): {what} would count each {plan.base} row "
            f"once per related {join.to} row's value"
        )
    return None


def join_kinds(plan: Plan, edges: Sequence[tuple[str, Join]]) -> tuple[str, ...]:
    """``"left"`` or ``"inner"`` for each of ``edges`` (:func:`plan_edges`), in order.

    A many-to-one or one-to-one hop from the base outward is a LEFT JOIN, as semantic
    layers join a dimension's model to the measure's: a measured row whose key is NULL
    or matches nothing stays, in a NULL group. A hop that fans out (a declared
    ``one_to_many``, a join walked backwards) and every hop beyond one stay INNER: a
    row is read there through its related rows, and one with none has no group. So
    do the hops leading to a ranking's groups ("top 3 plans by rentals": a row without
    a plan belongs to no plan that could rank) and to a model the question filters
    (a value, a flag, a comparison, a period on its time dimension): the WHERE keeps
    no row without a match, so INNER says the same, plainly.
    """
    came = {join.to: here for here, join in edges}
    filtered = [
        *(m for m, _, _ in plan.filters),
        *(m for m, _, _ in plan.excluded),
        *(m for m, _ in plan.flags),
        *(m for m, _, _, _ in plan.bounds),
    ]
    if plan.time and (plan.period or plan.compared):
        filtered.append(plan.time[0])
    if plan.rank is not None:
        filtered += [*(m for m, _ in plan.breakdowns), *(m for m, _ in plan.hidden_keys)]
        if plan.grain and plan.time:
            filtered.append(plan.time[0])
    required: set[str] = set()
    for model in filtered:
        while model in came and model not in required:
            required.add(model)
            model = came[model]
    inner: set[str] = set()
    kinds: list[str] = []
    for here, join in edges:
        if join.relationship == "one_to_many" or here in inner or join.to in required:
            inner.add(join.to)
            kinds.append("inner")
        else:
            kinds.append("left")
    return tuple(kinds)


def fanout_doubt(lens: Lens, plan: Plan, path: tuple[tuple[str, Join], ...]) -> str | None:
    """Why ``plan``'s measures cannot be taken along ``path``, which fans out once, or ``None``.

    Each ``plan.base`` row is repeated once per row the fanning hop reaches, so a SUM,
    AVG or row COUNT over the joined rows would weigh a row by how many related rows
    it has. Two readings stay sound:

    * COUNT(DISTINCT …) of the base's own columns counts each value once per group
      whatever the repeats: the entities related to each group (a paper counted once
      for each dataset it belongs to);
    * any measure of the base's own columns when the hop starts at the base itself
      (``papers ← authorships``): the join-grain gate proves the base unique on the
      hop's key, so the compiler can keep each base row once per group
      (:func:`per_base_row`) before aggregating — an author's total citations sum
      each of their papers once.

    A hop further out (``reviews → businesses ← categories``) relates the base's rows
    to a group through another model's rows: an average there is either over the
    base's rows or over that model's own averages, so it declines, and so does any
    measure but a distinct count (the base is not proven unique on any key there).
    So does an average along a bridge and further (``papers ← authorships → authors →
    labs``: over the lab's papers, or over its authors' own averages?). A share adds an
    entity related to several groups to the total once per group.
    """
    at = next(i for i, (_, j) in enumerate(path) if j.relationship == "one_to_many")
    here, join = path[at]
    name = f"join {here} → {join.to} is one_to_many"
    if isinstance(join, Reversal):
        name = f"join {join.to} → {here}, walked from {here} to {join.to}, is one-to-many"
    if plan.share:
        return f"{name}: a {plan.share} would count an entity related to several groups in each"
    at_base = isinstance(join, Reversal) and here == plan.base
    for measure in (plan.measure, *plan.extra):
        if set(measure.models) - {measure.model}:
            return f"{name} and {measure.name} reads other models than {plan.base}"
        tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
        averages = tree.find(exp.Avg) is not None or isinstance(tree, exp.Div)
        if counts_distinct(lens, measure) or (at_base and not (averages and len(path) > 2)):
            continue
        if averages:
            middle = here if not at_base else path[1][1].to
            return (
                f"{name}: {measure.name} ({tree.sql()}) by {path[-1][1].to} reads two ways: "
                f"over every {plan.base} row related to each group, or over each {middle} "
                f"row's own {measure.name}"
            )
        return (
            f"{name} and would fan out {measure.name} ({tree.sql()}): each {plan.base} "
            f"row would count once per related {join.to} row; only a count of distinct "
            f"values of {plan.base} (COUNT(DISTINCT …)) is read through it"
        )
    return None


def _counts(lens: Lens, measure: Measure) -> bool:
    """Whether ``measure`` is one COUNT (of rows, values or distinct values)."""
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    return isinstance(tree, exp.Count)


def counts_distinct(lens: Lens, measure: Measure) -> bool:
    """Whether ``measure`` is one COUNT(DISTINCT …), which repeated rows cannot change."""
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    return isinstance(tree, exp.Count) and isinstance(tree.this, exp.Distinct)


def per_base_row(
    query: exp.Select, base_alias: str, keys: list[tuple[exp.Expr, str]]
) -> tuple[exp.Select, list[tuple[exp.Expr, str]]]:
    """``query`` (a grouped SELECT: its keys, then its measures over ``base_alias``'s
    columns) aggregated over each base row once per key values.

    The joins and the WHERE move into ``SELECT DISTINCT <base>.*, <keys>``, a subquery
    named like the base, so the measures read the same columns; the base must be
    unique on a key (see :func:`fanout_doubt`) for DISTINCT to keep each of its rows.

    Returns:
        ``(query, keys)``: the keys now read from the subquery, aliased as before.
    """
    names = [f"dst_key_{i}" for i in range(len(keys))]
    inner = query.copy()
    star = exp.Column(this=exp.Star(), table=exp.to_identifier(base_alias))
    picked = [exp.alias_(e.copy(), n) for (e, _), n in zip(keys, names, strict=True)]
    inner.set("expressions", [star, *picked])
    inner.set("distinct", exp.Distinct())
    inner.set("group", None)
    outer_keys: list[tuple[exp.Expr, str]] = [
        (exp.column(n, base_alias), a) for (_, a), n in zip(keys, names, strict=True)
    ]
    measures = [s.copy() for s in query.selects[len(keys) :]]
    outer = exp.select(*(exp.alias_(e, a) for e, a in outer_keys), *measures).from_(
        inner.subquery(base_alias), copy=False
    )
    if outer_keys:
        outer = outer.group_by(*(e.copy() for e, _ in outer_keys), copy=False)
    return outer, outer_keys


def resolve_target(
    lens: Lens, base: str, targets: tuple[Target, ...], what: str, phrase: str
) -> Target:
    """The one target of a phrase reachable from ``base`` (through a safe join path).

    Raises:
        Declined: none or several columns reachable, several stored values, or no
            single join path (``what`` and ``phrase`` name the phrase).
    """
    found = reachable(lens, base, targets)
    if not found:
        one_path(lens, base, targets[0].model)
    places = sorted({(t.model, t.name) for t in found})
    if len(places) > 1:
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{what} {phrase!r} is ambiguous: it could mean {listed}"
        )
    chosen = [t for t in found if (t.model, t.name) == places[0]]
    if len({t.value for t in chosen}) > 1:
        listed = ", ".join(repr(t.value) for t in chosen)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{phrase!r} matches several stored values ({listed})"
        )
    one_path(lens, base, chosen[0].model)
    return chosen[0]
