"""SQL rendering for the ``fast`` tier: a compiled :class:`Plan` → one SELECT (pure).

:mod:`reconciler.generators.fast` reads a question into a :class:`Plan`; this module
turns the plan into SQL with sqlglot, in the lens's dialect, following the
conventions of the question grammar:

* select list: time bucket (aliased by its grain, ``CAST(DATE_TRUNC(…) AS DATE)``),
  then dimensions in question order (aliased by their names), then the measure
  (aliased by the metric's name, or ``<avg|sum|min|max>_<fact>`` for a fact);
* FROM the measure's model, INNER JOIN along the declared joins outward;
* WHERE: the metric's filters, the period as a half-open range on the time
  dimension, dimension-value equalities, boolean flags ``= TRUE``;
* ORDER BY: time series by bucket; rankings by the measure then LIMIT n; plain
  breakdowns by the measure descending; the keys always break ties.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

import sqlglot
from sqlglot import exp

from reconciler.assembly import join_paths, metric_models, model_named
from reconciler.lens import Join, Lens, Model

_NUMBER_RE = re.compile(r"^-?\d+(\.\d+)?$")
_NUMERIC_TYPES = re.compile(
    r"^(int|bigint|smallint|number|numeric|decimal|float|double|real)", re.IGNORECASE
)


FACT_FUNCTIONS: Mapping[str, type[exp.Func]] = {
    "avg": exp.Avg,
    "sum": exp.Sum,
    "min": exp.Min,
    "max": exp.Max,
}


class Declined(Exception):
    """The question is outside the grammar; ``reason`` says where.

    Control flow inside the fast tier, not a :class:`~reconciler.errors.DstError`:
    :func:`reconciler.generators.fast.compile_request` turns it into a declined
    :class:`~reconciler.generators.Generation`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Measure:
    """What a query aggregates: a lens metric, or an aggregate of one model fact.

    Attributes:
        name: the output column alias (the metric's name, or ``avg_amount``).
        model: the model the aggregate reads (the FROM table).
        expression: aggregate SQL whose bare columns are ``model``'s columns.
        filters: SQL conditions the measure always carries (a metric's ``filters``).
        models: every model the expression and filters read (for joins).
        metric: the metric's name, or ``None`` for a fact aggregate.
        function: for a fact aggregate, its :data:`FACT_FUNCTIONS` key.
    """

    name: str
    model: str
    expression: str
    filters: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    metric: str | None = None
    function: str | None = None

    @classmethod
    def of_metric(cls, lens: Lens, name: str) -> Measure:
        """The lens metric ``name``: its expression, filters and the models they read."""
        m = lens.metrics[name]
        return cls(name, m.model, m.expression, m.filters, metric_models(lens, name), name)

    @classmethod
    def of_fact(cls, lens: Lens, model: str, fact: str, function: str) -> Measure:
        """``function`` (``avg``, ``sum``, ``min``, ``max``) of ``model``'s fact ``fact``,
        aliased ``<function>_<fact>``; the fact's own ``expr`` is expanded at render."""
        sql = FACT_FUNCTIONS[function](this=exp.column(fact)).sql(dialect=lens.config.dialect)
        return cls(f"{function}_{fact}", model, sql, (), (model,), None, function)


@dataclass(frozen=True)
class Plan:
    """A question compiled to its semantic parts, before rendering.

    Attributes:
        measure: what is aggregated; its model is the FROM table (``base``).
        breakdowns: ``(model, dimension)`` pairs in question order.
        filters: ``(model, dimension, exact stored value)`` equality filters.
        flags: ``(model, boolean dimension)`` pairs that must be TRUE.
        time: ``(model, time dimension)`` used by the grain and the period, if any.
        grain: DATE_TRUNC unit of the time bucket, if any.
        period: half-open ``[start, end)`` date range, if any.
        rank: ``(descending, n)`` for top/bottom N, if any.
    """

    measure: Measure
    breakdowns: tuple[tuple[str, str], ...] = ()
    filters: tuple[tuple[str, str, str], ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    time: tuple[str, str] | None = None
    grain: str | None = None
    period: tuple[date, date] | None = None
    rank: tuple[bool, int] | None = None

    @property
    def base(self) -> str:
        """The measure's model: the FROM table every join starts from."""
        return self.measure.model

    def models(self) -> tuple[str, ...]:
        """Models the plan reads directly (before adding the join paths between them)."""
        named = [
            self.base,
            *(m for m, _ in self.breakdowns),
            *(m for m, _, _ in self.filters),
            *(m for m, _ in self.flags),
            *((self.time[0],) if self.time else ()),
            *self.measure.models,
        ]
        return tuple(dict.fromkeys(named))


def one_path(lens: Lens, base: str, target: str) -> tuple[tuple[str, Join], ...]:
    """The single safe join path from ``base`` to ``target``.

    Raises:
        Declined: no declared path, several shortest paths, or a one-to-many hop
            that would fan the measure out.
    """
    paths = join_paths(lens, base, target)
    if not paths:
        raise Declined(f"no declared join leads from model {base!r} to model {target!r}")
    if len(paths) > 1:
        routes = " / ".join("→".join([base, *(j.to for _, j in p)]) for p in paths)
        raise Declined(f"model {target!r} is reachable from {base!r} in several ways ({routes})")
    for here, join in paths[0]:
        if join.relationship == "one_to_many":
            raise Declined(f"join {here} → {join.to} is one_to_many and would fan out the metric")
    return paths[0]


class _Renderer:
    """Builds the SQL of a plan with sqlglot, in the lens's dialect."""

    def __init__(self, lens: Lens, plan: Plan) -> None:
        self.lens = lens
        self.plan = plan
        self.dialect = lens.config.dialect
        self.aliases: dict[str, str] = {}
        self.edges: list[tuple[str, Join]] = []
        self._alias(plan.base)
        for target in plan.models():
            for here, join in one_path(lens, plan.base, target):
                if join.to not in self.aliases:
                    self._alias(join.to)
                    self.edges.append((here, join))

    def _alias(self, model: str) -> None:
        initials = "".join(part[0] for part in model.lower().split("_") if part) or "t"
        alias, n = initials, 1
        while alias in self.aliases.values():
            n += 1
            alias = f"{initials}{n}"
        self.aliases[model] = alias

    def expr(self, sql: str, model: Model, *, expand: bool = True) -> exp.Expr:
        """``sql`` with bare columns qualified by ``model``'s alias.

        A bare column naming one of the model's columns that has its own ``expr``
        is replaced by that expression (once, not recursively); a column qualified
        by a model or table name is re-qualified with that model's alias.
        """
        own = {c.name: c for c in model.columns()}
        alias = self.aliases[model.name]

        def fix(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
                return node
            if not node.table:
                col = own.get(node.name)
                if expand and col is not None and col.expr and col.expr != col.name:
                    return exp.Paren(this=self.expr(col.expr, model, expand=False))
                new = node.copy()
                new.set("table", exp.to_identifier(alias))
                return new
            target = model_named(self.lens, node.table)
            if target is None or target not in self.aliases:
                raise Declined(f"{node.sql()} names a table the query does not join")
            new = node.copy()
            new.set("table", exp.to_identifier(self.aliases[target]))
            return new

        return sqlglot.parse_one(sql, read=self.dialect).transform(fix)

    def column(self, model_name: str, column: str) -> exp.Expr:
        model = self.lens.models[model_name]
        col = next(c for c in model.columns() if c.name == column)
        return self.expr(col.sql, model, expand=False)

    def table(self, model_name: str) -> exp.Expr:
        model = self.lens.models[model_name]
        table = exp.to_table(model.table, dialect=self.dialect)
        return exp.alias_(table, self.aliases[model_name], table=True)

    def render(self) -> str:
        plan, lens = self.plan, self.lens
        base = lens.models[plan.base]
        keys: list[tuple[exp.Expr, str]] = []
        if plan.grain and plan.time:
            trunc = sqlglot.parse_one(
                f"CAST(DATE_TRUNC('{plan.grain}', __t) AS DATE)", read="duckdb"
            )
            time_col = self.column(*plan.time)
            bucket = trunc.transform(lambda n: time_col.copy() if isinstance(n, exp.Column) else n)
            keys.append((bucket, plan.grain))
        keys.extend((self.column(m, d), d) for m, d in plan.breakdowns)
        measure = self.expr(plan.measure.expression, base)
        query = exp.select(
            *(exp.alias_(e, a) for e, a in keys), exp.alias_(measure, plan.measure.name)
        ).from_(self.table(plan.base))
        for here, join in self.edges:
            left, right = self.aliases[here], self.aliases[join.to]
            keys_eq = (exp.column(a, left).eq(exp.column(b, right)) for a, b in join.on.items())
            query = query.join(self.table(join.to), on=exp.and_(*keys_eq), join_type="inner")
        conditions = [self.expr(f, base) for f in plan.measure.filters]
        if plan.period and plan.time:
            start, stop = (exp.cast(exp.Literal.string(d.isoformat()), "date") for d in plan.period)
            conditions.append(self.column(*plan.time) >= start)
            conditions.append(self.column(*plan.time) < stop)
        for model, dim, value in plan.filters:
            conditions.append(self.column(model, dim).eq(self._literal(model, dim, value)))
        for model, dim in plan.flags:
            conditions.append(self.column(model, dim).eq(exp.true()))
        if conditions:
            query = query.where(exp.and_(*conditions))
        if keys:
            query = query.group_by(*(e.copy() for e, _ in keys))
        order: list[exp.Ordered] = []
        if plan.rank:
            order.append(exp.Ordered(this=measure.copy(), desc=plan.rank[0]))
        elif plan.grain is None and keys:
            order.append(exp.Ordered(this=measure.copy(), desc=True))
        order.extend(exp.Ordered(this=e.copy(), desc=False) for e, _ in keys)
        if order:
            query = query.order_by(*order)
        if plan.rank:
            query = query.limit(plan.rank[1])
        return query.sql(dialect=self.dialect, pretty=True)

    def _literal(self, model_name: str, dim: str, value: str) -> exp.Expr:
        col = next(c for c in self.lens.models[model_name].dimensions if c.name == dim)
        numeric = _NUMERIC_TYPES.match(col.data_type) and _NUMBER_RE.match(value)
        return exp.Literal.number(value) if numeric else exp.Literal.string(value)


def render(lens: Lens, plan: Plan) -> str:
    """The SQL of ``plan`` in ``lens.config.dialect``.

    Raises:
        Declined: a measure expression names a table the query does not join, or a
            model the plan reads has no single safe join path from the base.
    """
    return _Renderer(lens, plan).render()
