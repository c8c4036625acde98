"""Join paths of a :class:`~reconciler.generators.plans.Plan` (pure).

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
from reconciler.generators.plans import Declined, Plan
from reconciler.lens import Join, Lens


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
        raise Declined(f"no declared join leads from model {base!r} to model {target!r}")
    if len(paths) > 1:
        routes = " / ".join(_route(base, p) for p in paths)
        raise Declined(f"model {target!r} is reachable from {base!r} in several ways ({routes})")
    return paths[0]


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
    join walked backwards) repeats each row once per related row: only a count of
    distinct values of the base's own columns is unchanged by that, so every measure
    must be one (:func:`fanout_doubt`). The join-grain gate is the caller's.

    Raises:
        Declined: a model is reached two ways, a path fans out twice, or a measure
            would be changed by the fan-out.
    """
    edges: dict[str, tuple[str, Join]] = {}
    for target in plan.models():
        path = one_path(lens, plan.base, target)
        fans = [(h, j) for h, j in path if j.relationship == "one_to_many"]
        if len(fans) > 1:
            raise Declined(f"{_route(plan.base, path)} fans {plan.base!r} rows out twice")
        if fans and (doubt := fanout_doubt(lens, plan, fans[0])):
            raise Declined(doubt)
        for here, join in path:
            if edges.setdefault(join.to, (here, join)) != (here, join):
                raise Declined(f"model {join.to!r} would be joined from {plan.base!r} two ways")
    return tuple(edges.values())


def fanout_doubt(lens: Lens, plan: Plan, hop: tuple[str, Join]) -> str | None:
    """Why ``plan``'s measures cannot be taken through the fanning ``hop``, or ``None``.

    Each ``plan.base`` row is repeated once per row ``hop`` reaches, so a SUM, AVG or
    row COUNT would weigh a row by how many related rows it has; COUNT(DISTINCT …) of
    the base's own columns counts each value once per group whatever the repeats —
    the entities related to each group (an author counted once for each dataset one
    of their papers belongs to). A share of such counts adds an entity to the total
    once per group, so it declines too.
    """
    here, join = hop
    name = f"join {here} → {join.to} is one_to_many"
    if isinstance(join, Reversal):
        name = f"join {join.to} → {here}, walked from {here} to {join.to}, is one-to-many"
    if plan.share:
        return f"{name}: a {plan.share} would count an entity related to several groups in each"
    for measure in (plan.measure, *plan.extra):
        tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
        distinct = isinstance(tree, exp.Count) and isinstance(tree.this, exp.Distinct)
        if not distinct or set(measure.models) - {measure.model}:
            return (
                f"{name} and would fan out {measure.name} ({tree.sql()}): each {plan.base} "
                f"row would count once per related {join.to} row; only a count of distinct "
                f"values of {plan.base} (COUNT(DISTINCT …)) is read through it"
            )
    return None
