"""dbt / MetricFlow metrics → lens metric expressions (pure, sqlglot).

A lens metric is one aggregate expression over one model's table, with optional
filters (SQL conditions; columns of joined models are qualified by the model's
name). MetricFlow metrics map onto that as follows (MetricFlow docs, "Metrics
overview", "Simple", "Ratio", "Derived" metrics):

* **simple** — the measure's ``agg`` over its ``expr`` (``sum`` → ``SUM``,
  ``sum_boolean`` → ``SUM(CAST(… AS INTEGER))``, ``average`` → ``AVG``,
  ``percentile`` → ``QUANTILE_CONT``/``QUANTILE_DISC`` …), with the metric's and
  the measure input's ``filter`` as lens filters;
* **ratio** — ``CAST(numerator AS DOUBLE) / CAST(NULLIF(denominator, 0) AS DOUBLE)``,
  the way MetricFlow renders it;
* **derived** — the ``expr`` with every input name replaced by that input's
  aggregate.

Inputs of a ratio or derived metric must aggregate the same model (a lens metric
reads one table); when their filters differ, each input's filters move inside its
aggregates (``SUM(CASE WHEN <filter> THEN x END)``), which aggregates the same rows.
Time offsets, cumulative and conversion metrics and semi-additive measures have no
lens form and raise :class:`Unmappable` with the reason.

Jinja in filters (``{{ Dimension('listing__is_lux_latest') }}``,
``{{ TimeDimension('metric_time', 'month') }}``, ``{{ Entity('listing') }}``) is
resolved through entities to the physical expression, qualified by the owning
model's name when that model is joined.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.interop.importers import scalar_text

DIALECT = "duckdb"
_JINJA = re.compile(r"{{\s*(\w+)\s*\(([^)]*)\)((?:\s*\.\s*\w+\([^)]*\))*)\s*}}")
_ARG = re.compile(r"""['"]([^'"]*)['"]""")
_GRAINS = {"day", "week", "month", "quarter", "year", "hour", "minute", "second"}
_PLAIN_AGGS: dict[str, type[exp.AggFunc]] = {
    "sum": exp.Sum, "average": exp.Avg, "avg": exp.Avg, "min": exp.Min, "max": exp.Max,
    "count": exp.Count, "median": exp.Median,
}  # fmt: skip


class Unmappable(Exception):
    """A definition with no lens form; ``reason`` says why (it goes into the report)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ModelInfo:
    """What metric resolution needs to know of one semantic model.

    Attributes:
        name: the lens model name (the semantic model's name).
        entities: ``{entity: (type, SQL over the table)}``; type is MetricFlow's
            ``primary``/``unique``/``natural``/``foreign``.
        dimensions: ``{dimension: (SQL over the table, is a time dimension)}``.
        agg_time: the default ``agg_time_dimension``, if any.
        primary_entity: the entity its own dimensions are named under when no
            entity column declares it (``primary_entity: booking``).
    """

    name: str
    entities: Mapping[str, tuple[str, str]]
    dimensions: Mapping[str, tuple[str, bool]]
    agg_time: str | None = None
    primary_entity: str | None = None


@dataclass(frozen=True)
class MeasureDef:
    """A measure (or a legacy metric's inline aggregation).

    Attributes:
        name: the measure's name.
        model: the model it aggregates.
        expr: its row-level SQL (defaults to the name).
        agg: MetricFlow ``agg`` lowercased (``sum``, ``count_distinct`` …).
        params: ``agg_params``.
        non_additive: it declares a ``non_additive_dimension``.
        agg_time: its own ``agg_time_dimension``, if it sets one.
    """

    name: str
    model: str
    expr: str
    agg: str
    params: Mapping[str, Any] = field(default_factory=dict)
    non_additive: bool = False
    agg_time: str | None = None


@dataclass(frozen=True)
class Form:
    """A resolved metric: one aggregate over ``model`` and the filters it carries.

    Attributes:
        model: the model whose table is aggregated.
        expression: the aggregate, duckdb SQL tree.
        filters: SQL conditions (duckdb), bare columns on ``model``'s table.
        losses: what the lens metric does not keep (the metric is still written).
    """

    model: str
    expression: exp.Expr
    filters: tuple[str, ...] = ()
    losses: tuple[str, ...] = ()


class Resolver:
    """Resolves metric definitions into :class:`Form` values, memoized by name.

    Args:
        models: semantic models by name.
        measures: measures by name.
        metrics: raw metric mappings by name (MetricFlow shape).
        joins: ``{model: models it declares a join to}``.
    """

    def __init__(
        self,
        models: Mapping[str, ModelInfo],
        measures: Mapping[str, MeasureDef],
        metrics: Mapping[str, Mapping[str, Any]],
        joins: Mapping[str, set[str]],
    ) -> None:
        self.models = models
        self.measures = measures
        self.metrics = metrics
        self.joins = joins
        self._done: dict[str, Form | Unmappable] = {}
        self._active: list[str] = []

    def metric(self, name: str) -> Form:
        """The lens form of metric ``name``.

        Raises:
            Unmappable: the metric (or one of its inputs) has no lens form.
        """
        if name in self._done:
            done = self._done[name]
            if isinstance(done, Unmappable):
                raise done
            return done
        if name in self._active:
            raise Unmappable(f"metric {name!r} depends on itself")
        if name not in self.metrics:
            raise Unmappable(f"input metric {name!r} is not defined")
        self._active.append(name)
        try:
            result: Form | Unmappable = self._resolve(self.metrics[name])
        except Unmappable as exc:
            result = exc
        finally:
            self._active.pop()
        self._done[name] = result
        if isinstance(result, Unmappable):
            raise result
        return result

    def _resolve(self, raw: Mapping[str, Any]) -> Form:
        kind = scalar_text(raw.get("type")).strip().lower()
        params = raw.get("type_params") or {}
        if not isinstance(params, dict):
            raise Unmappable("type_params is not a mapping")
        own = filter_texts(raw.get("filter"))
        losses: list[str] = []
        if raw.get("time_granularity"):
            losses.append(f"time_granularity {raw['time_granularity']!r} (lens metrics have none)")
        if kind == "simple":
            ref = params.get("measure")
            name, input_filters, extra = _input(ref)
            losses += extra
            if name not in self.measures:
                raise Unmappable(f"measure {name!r} is not defined by any semantic model")
            form = self.measure(self.measures[name])
            return self.with_filters(form, [*input_filters, *own], losses)
        if kind == "ratio":
            num = self._metric_input(params.get("numerator"), own)
            den = self._metric_input(params.get("denominator"), own)
            model, (a, b), filters = _combine([num, den])
            ratio = exp.Div(
                this=exp.cast(exp.paren(a, copy=False), "DOUBLE"),
                expression=exp.cast(exp.func("NULLIF", b, exp.Literal.number(0)), "DOUBLE"),
            )
            return Form(model, ratio, filters, tuple([*losses, *num.losses, *den.losses]))
        if kind == "derived":
            return self._derived(params, own, losses)
        if kind == "cumulative":
            raise Unmappable(
                "cumulative metrics aggregate over a moving time window; "
                "a lens metric is one aggregate per group"
            )
        if kind == "conversion":
            raise Unmappable(
                "conversion metrics join two event streams within a time window; "
                "a lens metric reads one table"
            )
        raise Unmappable(f"metric type {kind or '(none)'!r} is unknown")

    def _derived(self, params: Mapping[str, Any], own: list[str], losses: list[str]) -> Form:
        inputs = params.get("metrics") or []
        if not isinstance(inputs, list) or not inputs:
            raise Unmappable("a derived metric needs type_params.metrics")
        forms: dict[str, Form] = {}
        for entry in inputs:
            name, _, _ = _input(entry)
            alias = scalar_text(entry.get("alias")).strip() if isinstance(entry, dict) else ""
            if isinstance(entry, dict) and (
                entry.get("offset_window") or entry.get("offset_to_grain")
            ):
                raise Unmappable(
                    f"input {name!r} is offset in time (offset_window/offset_to_grain); "
                    "a lens metric reads one period"
                )
            forms[(alias or name).lower()] = self._metric_input(entry, own)
        model, combined, filters = _combine(list(forms.values()))
        by_name = dict(zip(forms, combined, strict=True))
        try:
            tree = guard.parse_expression(scalar_text(params.get("expr")) or "", DIALECT)
        except UnsafeSqlError as exc:
            raise Unmappable(f"expr does not parse ({exc.message})") from None

        def swap(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in by_name:
                return exp.paren(by_name[node.name.lower()].copy(), copy=False)
            return node

        tree = tree.transform(swap)
        for col in tree.find_all(exp.Column):
            if not _inside_aggregate(col):
                raise Unmappable(f"expr names {col.sql()!r}, which is not one of its input metrics")
        return Form(
            model, tree, filters, tuple(losses + [x for f in forms.values() for x in f.losses])
        )

    def _metric_input(self, ref: Any, extra_filters: Sequence[str]) -> Form:
        name, input_filters, losses = _input(ref)
        form = self.metric(name)
        return self.with_filters(form, [*input_filters, *extra_filters], losses)

    def measure(self, measure: MeasureDef) -> Form:
        """The aggregate of one measure, unfiltered.

        Raises:
            Unmappable: a semi-additive measure or an unknown ``agg``.
        """
        if measure.non_additive:
            raise Unmappable(
                f"measure {measure.name!r} is semi-additive (non_additive_dimension); "
                "a lens metric aggregates every row of the period"
            )
        try:
            operand = guard.parse_expression(measure.expr, DIALECT)
        except UnsafeSqlError as exc:
            raise Unmappable(
                f"measure {measure.name!r} expr does not parse ({exc.message})"
            ) from None
        losses: list[str] = []
        info = self.models[measure.model]
        if measure.agg_time and measure.agg_time != info.agg_time:
            losses.append(
                f"agg_time_dimension {measure.agg_time!r} of measure {measure.name!r} "
                f"(the lens buckets time by the model's default, {info.agg_time!r})"
            )
        agg = measure.agg
        if agg in _PLAIN_AGGS:
            tree: exp.Expr = _PLAIN_AGGS[agg](this=operand)
        elif agg == "sum_boolean":
            tree = exp.Sum(this=exp.cast(operand, "INTEGER"))
        elif agg == "count_distinct":
            tree = exp.Count(this=exp.Distinct(expressions=[operand]))
        elif agg == "percentile":
            tree, note = _percentile(measure, operand)
            losses += note
        else:
            raise Unmappable(f"measure {measure.name!r} has agg {agg!r}, which is unknown")
        return Form(measure.model, tree, (), tuple(losses))

    def with_filters(self, form: Form, filters: Sequence[str], losses: Sequence[str] = ()) -> Form:
        """``form`` with MetricFlow filter templates added, resolved on its model.

        Raises:
            Unmappable: a filter that cannot be resolved.
        """
        resolved = [self.filter_sql(text, form.model) for text in filters]
        merged = tuple(dict.fromkeys([*form.filters, *resolved]))
        return Form(form.model, form.expression, merged, (*form.losses, *losses))

    def filter_sql(self, template: str, model: str) -> str:
        """A MetricFlow ``where`` template as SQL over ``model`` (joined models qualified).

        Raises:
            Unmappable: a reference that does not resolve, a ``Metric(...)`` filter,
                or SQL that does not parse.
        """

        def sub(match: re.Match[str]) -> str:
            call, args, chain = match.group(1), _ARG.findall(match.group(2)), match.group(3)
            grain = args[1] if len(args) > 1 else None
            for method in re.findall(r"\.\s*(\w+)\(([^)]*)\)", chain or ""):
                if method[0] != "grain":
                    raise Unmappable(f"filter uses .{method[0]}(), which has no lens form")
                grain = (_ARG.findall(method[1]) or [None])[0]
            if call == "Metric":
                raise Unmappable("filter on a metric value (Metric(...)) needs a subquery")
            if not args:
                raise Unmappable(f"{call}() without a name")
            if call == "Entity":
                sql = self.entity_sql(args[0], model)
            elif call in ("Dimension", "TimeDimension"):
                sql = self.dimension_sql(args[0], model)
            else:
                raise Unmappable(f"filter call {call}() is unknown")
            if grain:
                if grain.lower() not in _GRAINS:
                    raise Unmappable(f"time grain {grain!r} has no DATE_TRUNC unit")
                sql = f"DATE_TRUNC('{grain.lower()}', {sql})"
            return sql

        text = _JINJA.sub(sub, template)
        if "{{" in text or "{%" in text:
            raise Unmappable(f"filter {template.strip()!r} holds Jinja the importer cannot read")
        try:
            return guard.parse_expression(text, DIALECT).sql(dialect=DIALECT)
        except UnsafeSqlError as exc:
            raise Unmappable(f"filter {text!r} does not parse ({exc.message})") from None

    def dimension_sql(self, ref: str, model: str) -> str:
        """``entity__dimension`` (or ``metric_time``) as SQL seen from ``model``.

        Raises:
            Unmappable: no model owns it, or the owner is not joined from ``model``.
        """
        parts = ref.lower().split("__")
        name, path = parts[-1], parts[:-1]
        entities = {e for m in self.models.values() for e in m.entities}
        if name in _GRAINS and path and path[-1] not in entities:
            inner = self.dimension_sql("__".join(path), model)  # ds__month: a grain suffix
            return f"DATE_TRUNC('{name}', {inner})"
        if ref.lower() == "metric_time":
            name, path = self.models[model].agg_time or "", []
            if not name:
                raise Unmappable(f"model {model!r} has no agg_time_dimension for metric_time")
        owner = self._owner(path[-1] if path else None, model, lambda m: name in m.dimensions)
        if owner is None:
            raise Unmappable(f"no semantic model joined from {model!r} has dimension {ref!r}")
        return self._seen_from(owner.dimensions[name][0], owner.name, model)

    def entity_sql(self, ref: str, model: str) -> str:
        """An entity's key expression seen from ``model``.

        Raises:
            Unmappable: no joined model declares the entity.
        """
        parts = ref.lower().split("__")
        owner = self._owner(parts[-1], model, lambda m: parts[-1] in m.entities)
        if owner is None:
            raise Unmappable(f"no semantic model joined from {model!r} has entity {ref!r}")
        return self._seen_from(owner.entities[parts[-1]][1], owner.name, model)

    def _owner(
        self, entity: str | None, model: str, has: Callable[[ModelInfo], bool]
    ) -> ModelInfo | None:
        here = self.models[model]
        if has(here) and entity in (None, here.primary_entity, *here.entities):
            return here
        if entity is None:
            return None
        for info in self.models.values():
            kind = info.entities.get(entity, ("", ""))[0]
            if (
                kind in ("primary", "unique", "natural")
                and has(info)
                and self.joined(model, info.name)
            ):
                return info
        return None

    def joined(self, source: str, target: str) -> bool:
        """Whether declared joins lead from ``source`` to ``target``."""
        seen, queue = {source}, deque([source])
        while queue:
            here = queue.popleft()
            if here == target:
                return True
            for nxt in self.joins.get(here, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return False

    def _seen_from(self, sql: str, owner: str, model: str) -> str:
        tree = guard.parse_expression(sql, DIALECT)
        if owner != model:
            for col in tree.find_all(exp.Column):
                col.set("table", exp.to_identifier(owner))
        return tree.sql(dialect=DIALECT)


def filter_texts(value: Any) -> list[str]:
    """MetricFlow filter templates from any of their spellings.

    A string, a list of strings, or the manifest's ``{"where_filters":
    [{"where_sql_template": …}]}``.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [t for v in value for t in filter_texts(v)]
    if isinstance(value, dict):
        if "where_sql_template" in value:
            return filter_texts(value["where_sql_template"])
        return filter_texts(value.get("where_filters"))
    return [scalar_text(value)]


def _input(ref: Any) -> tuple[str, list[str], list[str]]:
    """``(name, filters, losses)`` of a measure or metric input (a name or a mapping)."""
    if isinstance(ref, dict):
        losses = []
        for key in ("join_to_timespine", "fill_nulls_with"):
            if ref.get(key) not in (None, False):
                losses.append(f"{key} (lens metrics have no time spine)")
        return scalar_text(ref.get("name")).strip(), filter_texts(ref.get("filter")), losses
    return scalar_text(ref).strip(), [], []


def _combine(forms: Sequence[Form]) -> tuple[str, list[exp.Expr], tuple[str, ...]]:
    """Put inputs on one model: shared filters stay filters, differing ones move inside.

    Raises:
        Unmappable: the inputs aggregate different models.
    """
    models = sorted({f.model for f in forms})
    if len(models) > 1:
        raise Unmappable(
            f"its inputs aggregate different models ({', '.join(models)}); "
            "a lens metric reads one model's table"
        )
    if len({f.filters for f in forms}) == 1:
        return models[0], [f.expression for f in forms], forms[0].filters
    return models[0], [fold_filters(f.expression, f.filters) for f in forms], ()


def fold_filters(expression: exp.Expr, filters: Sequence[str]) -> exp.Expr:
    """Move filter conditions inside every aggregate: ``SUM(x)`` → ``SUM(CASE WHEN c THEN x END)``.

    Aggregates ignore NULLs, so each aggregates exactly the rows the filters keep.

    Raises:
        Unmappable: an aggregate without an argument to guard.
    """
    if not filters:
        return expression.copy()
    condition = exp.and_(*(guard.parse_expression(f, DIALECT) for f in filters))

    def guarded(value: exp.Expr) -> exp.Expr:
        return exp.Case(ifs=[exp.If(this=condition.copy(), true=value)])

    def fold(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.AggFunc):
            return node
        arg = node.this
        if isinstance(arg, exp.Star):
            node.set("this", guarded(exp.Literal.number(1)))
        elif isinstance(arg, exp.Distinct):
            arg.set("expressions", [guarded(e) for e in arg.expressions])
        elif isinstance(arg, exp.Expr):
            node.set("this", guarded(arg))
        else:
            raise Unmappable(f"aggregate {node.sql()} has no argument to filter")
        return node

    return expression.copy().transform(fold, copy=False)


def _percentile(measure: MeasureDef, operand: exp.Expr) -> tuple[exp.Expr, list[str]]:
    params = measure.params or {}
    try:
        p = float(scalar_text(params.get("percentile")))
    except ValueError:
        raise Unmappable(f"measure {measure.name!r} has no numeric agg_params.percentile") from None
    func = "QUANTILE_DISC" if params.get("use_discrete_percentile") else "QUANTILE_CONT"
    tree = guard.parse_expression(f"{func}(__x, {p!r})", DIALECT)
    placeholder = tree.find(exp.Column)
    assert placeholder is not None
    placeholder.replace(operand.copy())
    notes = []
    if params.get("use_approximate_percentile"):
        notes.append(f"approximate percentile of {measure.name!r} (computed exactly)")
    return tree, notes


def _inside_aggregate(node: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.AggFunc):
            return True
        parent = parent.parent
    return False
