"""The ``fast`` tier's compiler back end: a :class:`Plan` → one SELECT (pure).

:mod:`reconciler.generators.fast` reads a question into a :class:`Plan`; this module
compiles the plan into SQL with sqlglot (:func:`render` writes it out), in the
lens's dialect, following the conventions of the question grammar:

* select list: time bucket (aliased by its grain, ``CAST(DATE_TRUNC(…) AS DATE)``, or
  ``DATE_TRUNC(…)`` of a ``timestamp`` time dimension, which keeps its type),
  and dimensions in question order (aliased by their names; the bucket after the
  breakdowns named before its grain word, :attr:`Plan.bucket_at`), then the measure
  (aliased by the metric's name, or ``<avg|sum|min|max>_<fact>`` for a fact);
* FROM the measure's model, LEFT JOIN along the declared many-to-one joins outward,
  so no measured row vanishes from a breakdown by a joined model's column (its NULL
  group holds the rows with no match); INNER JOIN through a hop that fans out and
  beyond, on the way to a ranking's groups and to a model the question filters
  (:func:`~reconciler.reading.resolve.paths.join_kinds`);
* WHERE: the metric's filters, the period as a half-open range on the time
  dimension, dimension-value equalities, boolean flags ``= TRUE``, comparisons on
  facts (``amount > 100``), days of the week (``DATE_PART('dow', <time>) IN (0, 6)``);
* several measures side by side: the filters they share go to WHERE, each one's
  own filters into its aggregates (``SUM(CASE WHEN <filter> THEN amount END)``), so
  every column is what the metric alone would give for that group;
* compared periods ("2024 vs 2023"): one bucket per period, WHERE the time
  dimension falls in any of them;
* a share of total: the keys and ``CAST(m AS DOUBLE) / NULLIF(SUM(m) OVER (), 0)``
  (times 100 for ``percentage`` / ``percent``), aliased ``<measure>_share`` or
  ``<measure>_percentage`` — the total is over the rows the WHERE keeps;
* a change between periods ("month over month change"): the bucketed series, then
  ``<measure>_change`` = the measure minus the previous bucket's (``_pct_change``:
  100 × that over the previous value), NULL when the previous bucket has no rows;
  the filter reaches one bucket before the period so its first bucket has a change;
* GROUP BY the keys and the hidden keys (a person's model key, :attr:`Plan.hidden_keys`);
* ORDER BY: an ordering phrase's column first ("sorted by region"); else time
  series by the keys (under the lens's ``series_order: newest_first``: the bucket
  latest first, then the measure descending); rankings by the measure then LIMIT
  n (``with ties``: every row whose RANK() is within n, so the result may hold more
  than n rows); plain breakdowns by the measure descending; the keys always break ties.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date

import sqlglot
from sqlglot import exp

from reconciler.assembly import memo as lensmemo
from reconciler.assembly.joins import key_equalities
from reconciler.assembly.lexicon import model_named
from reconciler.lens import Join, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan, comparison, null_note
from reconciler.reading.lex import PERCENT_WORDS
from reconciler.reading.resolve.metricfilters import filter_clash
from reconciler.reading.resolve.paths import (
    counts_distinct,
    join_kinds,
    per_base_row,
    plan_edges,
)
from reconciler.reading.resolve.zeros import empty_groups, render_from_groups
from reconciler.reading.today import Day, day_sql

__all__ = ["render"]

_NUMBER_RE = re.compile(r"^-?\d+(\.\d+)?$")
_NUMERIC_TYPES = re.compile(
    r"^(int|bigint|smallint|number|numeric|decimal|float|double|real)", re.IGNORECASE
)


_CONDITIONAL = (exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Count)


class _Renderer:
    """Builds the SQL of a plan with sqlglot, in the lens's dialect."""

    def __init__(self, lens: Lens, plan: Plan) -> None:
        self.lens = lens
        self.plan = plan
        self.dialect = lens.config.dialect
        self.aliases: dict[str, str] = {}
        self.edges: list[tuple[str, Join]] = []
        self.hidden_order: list[exp.Expr] = []  # the hidden keys, as the final query reads them
        self._alias(plan.base)
        for here, join in plan_edges(lens, plan):
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
                raise Declined(
                    DeclineKind.UNSAFE_RESULT, f"{node.sql()} names a table the query does not join"
                )
            new = node.copy()
            new.set("table", exp.to_identifier(self.aliases[target]))
            return new

        # The lens's expressions are parsed once per lens version; transform() works
        # on a copy, so the shared tree is never edited.
        parsed = lensmemo.memoized(
            self.lens, ("compiler.expr", sql), lambda: sqlglot.parse_one(sql, read=self.dialect)
        )
        return parsed.transform(fix)

    def column(self, model_name: str, column: str) -> exp.Expr:
        model = self.lens.models[model_name]
        col = next((c for c in model.columns() if c.name == column), None)
        if col is None:  # the model's one-column key, declared by primary_key alone
            assert list(model.primary_key) == [column], column
            return self.expr(column, model, expand=False)
        return self.expr(col.sql, model, expand=False)

    def table(self, model_name: str) -> exp.Expr:
        model = self.lens.models[model_name]
        table = exp.to_table(model.table, dialect=self.dialect)
        return exp.alias_(table, self.aliases[model_name], table=True)

    def grouped(self) -> tuple[exp.Select, list[tuple[exp.Expr, str]], exp.Expr]:
        """The grouped SELECT (no ORDER BY), its keys ``(expression, alias)`` and the
        first measure's aggregate."""
        plan, lens = self.plan, self.lens
        base = lens.models[plan.base]
        keys: list[tuple[exp.Expr, str]] = []
        if plan.grain and plan.time:
            # A timestamp keeps its type: its bucket is the midnight timestamp the
            # warehouse's DATE_TRUNC gives, never a DATE that compares unequal to it.
            kept = next(c for c in lens.models[plan.time[0]].columns() if c.name == plan.time[1])
            spelled = f"DATE_TRUNC('{plan.grain}', __t)"
            if not kept.data_type.lower().startswith("timestamp"):
                spelled = f"CAST({spelled} AS DATE)"
            trunc = sqlglot.parse_one(spelled, read="duckdb")
            time_col = self.column(*plan.time)
            bucket = trunc.transform(lambda n: time_col.copy() if isinstance(n, exp.Column) else n)
            keys.append((bucket, plan.grain))
        dims = [(self.column(m, d), d) for m, d in plan.breakdowns]
        at = plan.bucket_at if keys else 0
        keys = [*dims[:at], *keys, *dims[at:]]
        measures = (plan.measure, *plan.extra)
        common = [f for f in plan.measure.filters if all(f in m.filters for m in measures)]
        columns = [
            (self._measure(m, [f for f in m.filters if f not in common]), m.name) for m in measures
        ]
        measure = columns[0][0]
        outputs = [*(exp.alias_(e, a) for e, a in keys)]
        if plan.share:
            outputs.append(exp.alias_(self._share(measure), self._share_name()))
        else:
            outputs.extend(exp.alias_(e, a) for e, a in columns)
        # Every part is built fresh here and attached once, so the builders need not
        # copy the query at each step (copy=False): same tree, no deep copies.
        query = exp.select(*outputs).from_(self.table(plan.base), copy=False)
        for (here, join), kind in zip(self.edges, join_kinds(plan, self.edges), strict=True):
            left, right = self.aliases[here], self.aliases[join.to]
            keys_eq = key_equalities(self.lens, here, join, left, right)
            query = query.join(
                self.table(join.to), on=exp.and_(*keys_eq), join_type=kind, copy=False
            )
        conditions = [self.expr(f, base) for f in common]
        if plan.period and plan.time:
            conditions.extend(self._within(plan.period))
        if plan.compared and plan.time:
            ranges = [exp.and_(*self._within(span)) for span in plan.compared]
            conditions.append(exp.Paren(this=exp.or_(*ranges)))
        if plan.weekdays and plan.time:
            day = sqlglot.parse_one("DATE_PART('dow', __t)", read="duckdb")
            time_col = self.column(*plan.time)
            day = day.transform(lambda n: time_col.copy() if isinstance(n, exp.Column) else n)
            conditions.append(day.isin(*(exp.Literal.number(d) for d in plan.weekdays)))
        conditions.extend(self._values(plan))
        for model, dim in plan.flags:
            conditions.append(self.column(model, dim).eq(exp.true()))
        for model, fact, op, number in plan.bounds:
            conditions.append(comparison(self.column(model, fact), op, number))
        if conditions:
            # A value filter restating a metric's own (filter_clash lets only that
            # through) is the same condition: written once.
            unique = {c.sql(dialect=self.dialect): c for c in conditions}
            query = query.where(exp.and_(*unique.values()), copy=False)
        hidden = [self.column(m, c) for m, c in plan.hidden_keys]
        self.hidden_order = hidden
        if any(j.relationship == "one_to_many" for _, j in self.edges) and not all(
            counts_distinct(lens, m) for m in measures
        ):
            # fanout_doubt let it through: the hop starts at the base, unique on its key
            extra = [(h, f"dst_hidden_{i}") for i, h in enumerate(hidden)]
            selects = query.selects
            held = [exp.alias_(e.copy(), a) for e, a in extra]
            query.set("expressions", [*selects[: len(keys)], *held, *selects[len(keys) :]])
            query, keys = per_base_row(query, self.aliases[plan.base], [*keys, *extra])
            if extra:  # grouped by, not shown
                shown, names = len(keys) - len(extra), {a for _, a in extra}
                self.hidden_order = [e for e, _ in keys[shown:]]
                query.set("expressions", [e for e in query.selects if e.alias_or_name not in names])
                keys = keys[:shown]
        elif keys:
            query = query.group_by(*(e.copy() for e, _ in keys), *hidden, copy=False)
        return query, keys, measure

    def render(self) -> str:
        plan = self.plan
        query, keys, measure = self.grouped()
        if plan.rank and plan.ties:
            return self._with_ties(query, measure, [a for _, a in keys])
        if plan.change:
            return self._with_change(query, [a for _, a in keys])
        order: list[exp.Ordered] = []
        if plan.order:
            alias, descending = plan.order
            chosen = next(s.this for s in query.selects if s.alias_or_name == alias)
            order.append(exp.Ordered(this=chosen.copy(), desc=descending))
            keys = [(e, a) for e, a in keys if a != alias]
        elif plan.rank:
            order.append(exp.Ordered(this=measure.copy(), desc=plan.rank[0]))
        elif plan.grain is None and keys:
            order.append(exp.Ordered(this=measure.copy(), desc=True))
        elif self.lens.config.series_order == "newest_first" and plan.grain:
            # Latest bucket first, and within it the breakdown largest first.
            bucket = next(e for e, a in keys if a == plan.grain)
            order.append(exp.Ordered(this=bucket.copy(), desc=True))
            if len(keys) > 1:
                order.append(exp.Ordered(this=measure.copy(), desc=True))
            keys = [(e, a) for e, a in keys if a != plan.grain]
        order.extend(exp.Ordered(this=e.copy(), desc=False) for e, _ in keys)
        order.extend(exp.Ordered(this=e.copy(), desc=False) for e in self.hidden_order)
        if order:
            query = query.order_by(*order, copy=False)
        if plan.rank:
            query = query.limit(plan.rank[1], copy=False)
        # The query is not used after this, so the generator need not copy it first.
        return query.sql(dialect=self.dialect, pretty=True, copy=False)

    def _within(self, span: tuple[Day, Day]) -> list[exp.Expr]:
        """``time >= start AND time < stop``; an open end (``date.min`` / ``date.max``,
        "since 2023", "before 2024") adds no condition."""
        assert self.plan.time is not None
        start, stop = (day_sql(d) for d in span)
        out: list[exp.Expr] = []
        if span[0] != date.min:
            out.append(self.column(*self.plan.time) >= start)
        if span[1] != date.max:
            out.append(self.column(*self.plan.time) < stop)
        return out

    def _measure(self, measure: Measure, own_filters: list[str]) -> exp.Expr:
        """The measure's aggregate, its ``own_filters`` moved inside each aggregate."""
        base = self.lens.models[measure.model]
        tree = self.expr(measure.expression, base)
        if not own_filters:
            return tree
        cond = exp.and_(*(self.expr(f, base) for f in own_filters))

        def only_when(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.AggFunc):
                return node
            if not isinstance(node, _CONDITIONAL) or node.find(exp.Window, exp.Filter):
                raise Declined(
                    DeclineKind.UNSUPPORTED_CONSTRUCT,
                    f"{measure.name}: cannot move its filters into {node.sql()} to show it "
                    f"beside other metrics",
                )
            arg = node.this
            distinct = isinstance(arg, exp.Distinct)
            if distinct:
                if len(arg.expressions) != 1:
                    raise Declined(
                        DeclineKind.UNSUPPORTED_CONSTRUCT,
                        f"{measure.name}: {node.sql()} counts several columns",
                    )
                arg = arg.expressions[0]
            if isinstance(arg, exp.Star) or arg is None:
                arg = exp.Literal.number(1)
            case = exp.Case().when(cond.copy(), arg.copy())
            new = node.copy()
            new.set("this", exp.Distinct(expressions=[case]) if distinct else case)
            return new

        return tree.transform(only_when)

    def _share_name(self) -> str:
        kind = "percentage" if self.plan.share in PERCENT_WORDS else "share"
        return f"{self.plan.measure.name}_{kind}"

    def _share(self, measure: exp.Expr) -> exp.Expr:
        total = exp.Window(this=exp.Sum(this=measure.copy()))
        ratio = exp.Div(
            this=exp.cast(measure.copy(), "double"),
            expression=exp.Nullif(this=total, expression=exp.Literal.number(0)),
        )
        if self.plan.share in PERCENT_WORDS:
            return exp.Mul(this=exp.Literal.number(100), expression=ratio)
        return ratio

    def _with_change(self, query: exp.Select, key_names: list[str]) -> str:
        """``query`` (the bucketed series) with the change from the previous bucket."""
        assert self.plan.change is not None
        grain, kind, shown = self.plan.change
        value = self.plan.measure.name
        others = [exp.column(k) for k in key_names if k != grain]

        def lag(name: str) -> exp.Expr:
            return exp.Window(
                this=exp.Lag(this=exp.column(name)),
                partition_by=[c.copy() for c in others] or None,
                order=exp.Order(expressions=[exp.Ordered(this=exp.column(grain))]),
            )

        months = {"month": 1, "quarter": 3, "year": 12}[grain]
        step = exp.Interval(this=exp.Literal.string(str(months)), unit=exp.Var(this="MONTH"))
        adjacent = lag(grain).eq(exp.Sub(this=exp.column(grain), expression=step))
        diff: exp.Expr = exp.Sub(this=exp.column(value), expression=lag(value))
        name = f"{value}_change"
        if kind == "percent":
            ratio = exp.Div(
                this=exp.cast(exp.Paren(this=diff), "double"),
                expression=exp.Nullif(this=lag(value), expression=exp.Literal.number(0)),
            )
            diff, name = (
                exp.Mul(this=exp.Literal.number(100), expression=ratio),
                f"{value}_pct_change",
            )
        names = [s.alias_or_name for s in query.selects]
        middle = exp.select(
            *(exp.column(n) for n in names), exp.alias_(exp.Case().when(adjacent, diff), name)
        ).from_(query.subquery("series"))
        outer = exp.select(*(exp.column(n) for n in [*names, name])).from_(
            middle.subquery("changes")
        )
        if shown is not None:
            first = exp.cast(exp.Literal.string(shown.isoformat()), "date")
            outer = outer.where(exp.column(grain) >= first)
        outer = outer.order_by(exp.column(grain), *(c.copy() for c in others))
        return outer.sql(dialect=self.dialect, pretty=True)

    def _with_ties(self, query: exp.Select, measure: exp.Expr, key_names: list[str]) -> str:
        """``query`` cut to the rows whose RANK() by the measure is within the first n.

        A group whose every key is NULL is no entity (the NULL-group gate, DESIGN §1):
        it is left out before the rows are ranked, so it takes no place in the rank.
        """
        assert self.plan.rank is not None
        descending, n = self.plan.rank
        names = [s.alias_or_name for s in query.selects]
        value = names[len(key_names)]
        window = exp.Window(
            this=exp.Anonymous(this="RANK"),
            order=exp.Order(expressions=[exp.Ordered(this=exp.column(value), desc=descending)]),
        )
        grouped = exp.select(exp.Star()).from_(query.subquery("grouped"))
        if key_names:
            grouped = grouped.where(
                exp.not_(exp.and_(*(exp.column(k).is_(exp.null()) for k in key_names)))
            )
        inner = grouped.select(exp.alias_(window, "ranking")).subquery("ranked")
        outer = (
            exp.select(*(exp.column(name) for name in names))
            .from_(inner)
            .where(exp.column("ranking") <= exp.Literal.number(n))
            .order_by(
                exp.Ordered(this=exp.column(value), desc=descending),
                *(exp.Ordered(this=exp.column(k), desc=False) for k in key_names),
            )
        )
        return outer.sql(dialect=self.dialect, pretty=True)

    def _values(self, plan: Plan) -> list[exp.Expr]:
        """The plan's value filters (``=``, ``IN`` for several values of one column) and
        negated ones (``<>``, a comment saying that a NULL is left out:
        :mod:`reconciler.reading.phrases.negation`)."""
        said: dict[tuple[str, str], list[str]] = {}
        for m, d, v in plan.filters:  # several values of one column: any of them
            said.setdefault((m, d), []).append(v)
        out: list[exp.Expr] = [
            self.column(m, d).eq(self._literal(m, d, vs[0]))
            if len(vs) == 1
            else self.column(m, d).isin(*(self._literal(m, d, v) for v in vs))
            for (m, d), vs in said.items()
        ]
        for model, dim, value in plan.excluded:
            literal = self._literal(model, dim, value)
            literal.add_comments([null_note(dim, value)])
            out.append(self.column(model, dim).neq(literal))
        return out

    def _literal(self, model_name: str, dim: str, value: str) -> exp.Expr:
        col = next(c for c in self.lens.models[model_name].dimensions if c.name == dim)
        numeric = _NUMERIC_TYPES.match(col.data_type) and _NUMBER_RE.match(value)
        return exp.Literal.number(value) if numeric else exp.Literal.string(value)


def _check_namesake_filters(lens: Lens, plan: Plan) -> None:
    """Decline a value filter on another model's dimension when the measure's own model
    has a dimension of the same name ("How many huts are in Northmark?" with 'Northmark'
    a district of hikers only, and huts holding a district of their own): counting
    huts through their hikers' district answers another question, with no note.

    Raises:
        Declined: ``AMBIGUOUS_READING``, naming both columns.
    """
    base = lens.models[plan.measure.model]
    keys = {k.lower() for j in base.joins for k in j.on} | {k.lower() for k in base.primary_key}
    own = {d.name for d in base.dimensions if d.sql.lower() not in keys}  # a key joins them
    for model, dim, value in (*plan.filters, *plan.excluded):
        if model != base.name and dim in own:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{value!r} is a {dim} of {model}, and {base.name} has a {dim} of its own: "
                f"{base.name}.{dim} or {model}.{dim}? Name the one meant",
            )


def render(lens: Lens, plan: Plan) -> str:
    """The SQL of ``plan`` in ``lens.config.dialect``.

    Raises:
        Declined: a measure expression names a table the query does not join, a
            model the plan reads has no single safe join path from the base, or a
            filter of the question constrains a column a metric's own filter does
            (:func:`~reconciler.reading.resolve.metricfilters.filter_clash`).
    """
    clash = filter_clash(lens, plan)
    if clash is not None:
        raise Declined(DeclineKind.UNSAFE_RESULT, clash)
    _check_namesake_filters(lens, plan)
    if plan.joined:
        return _render_joined(lens, plan)
    if empty_groups(lens, plan):  # a ranking from the lowest: every group, 0 for none
        return render_from_groups(
            lens,
            plan,
            lambda p: _Renderer(lens, p).grouped(),
            lambda p, *a: _Renderer(lens, p)._with_ties(*a),
        )
    return _Renderer(lens, plan).render()


def _render_joined(lens: Lens, plan: Plan) -> str:
    """Measures on several models: each part grouped on its own, then the parts stacked
    with ``UNION ALL`` (each part's measures beside NULLs for the others') and grouped
    again on the keys, so a model's rows are never repeated by another's join, a key
    only one part has still shows, and NULL keys meet NULL keys. (A ``FULL OUTER
    JOIN`` on a NULL-safe key is what this means, but PostgreSQL plans a full join
    only on merge- or hash-joinable conditions, which ``IS NOT DISTINCT FROM`` is not.)
    Without keys the one-row parts are cross joined."""
    parts = [plan, *plan.joined]
    queries = [_Renderer(lens, dataclasses.replace(p, joined=())).grouped() for p in parts]
    key_names = [a for _, a in queries[0][1]]
    names = [f"p{i}" for i in range(len(parts))]
    measures = [[s.alias_or_name for s in q.selects[len(keys) :]] for q, keys, _ in queries]
    if key_names:
        stacked: exp.Query | None = None
        for i, ((q, _, _), name) in enumerate(zip(queries, names, strict=True)):
            cells = [
                exp.column(m, name) if j == i else exp.alias_(exp.Null(), m)
                for j, own in enumerate(measures)
                for m in own
            ]
            part = exp.select(*(exp.column(k, name) for k in key_names), *cells).from_(
                q.subquery(name)
            )
            stacked = part if stacked is None else exp.union(stacked, part, distinct=False)
        assert stacked is not None
        merged: list[exp.Expression] = [exp.column(k, "parts") for k in key_names]
        query = (
            exp.select(
                *merged,
                *(
                    exp.alias_(exp.Max(this=exp.column(m, "parts")), m)
                    for own in measures
                    for m in own
                ),
            )
            .from_(stacked.subquery("parts"))
            .group_by(*(e.copy() for e in merged))
        )
        first_measure: exp.Expression = exp.Max(this=exp.column(measures[0][0], "parts"))
    else:
        query = exp.select(
            *(exp.column(m, name) for own, name in zip(measures, names, strict=True) for m in own)
        ).from_(queries[0][0].subquery(names[0]))
        for (q, _, _), name in zip(queries[1:], names[1:], strict=True):
            query = query.join(q.subquery(name), join_type="cross")
        merged = []
        first_measure = exp.column(measures[0][0], names[0])
    order: list[exp.Ordered] = []
    if plan.grain is None and key_names:
        order.append(exp.Ordered(this=first_measure, desc=True, nulls_first=False))
    order.extend(exp.Ordered(this=e.copy(), desc=False) for e in merged)
    if order:
        query = query.order_by(*order)
    return query.sql(dialect=lens.config.dialect, pretty=True)
