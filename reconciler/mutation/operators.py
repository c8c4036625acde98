"""Semantic mutation operators over a lens's shared assets (pure).

A *mutant* is one lens file rewritten so that one asset means something else:
a metric that averages instead of sums, a join on the wrong key, a filter gone.
``dst mutate`` (:mod:`reconciler.mutation.driver`) runs the gate on each; a mutant the gate
does not block *survives*, which points at an asset the certified corpus checks
thinly. The idea is mutation testing's (DeMillo, Lipton and Sayward, "Hints on
test data selection", 1978); the operators are the ones a data engineer fears.

Operators (each applied wherever it fits; SQL is rewritten on sqlglot's AST,
YAML on the parsed document):

==================  ==========================================================
``aggregation``     SUM → AVG / COUNT / MAX, AVG → SUM / MAX, MIN ↔ MAX,
                    COUNT(DISTINCT x) ↔ COUNT(x)
``drop_filter``     a metric filter, one WHERE conjunct, or a FILTER clause removed
``negate_filter``   a metric filter or WHERE conjunct wrapped in NOT
``swap_join_key``   one side of a join condition moved to another key column of
                    that model (its primary key and join keys)
``time_grain``      a DATE_TRUNC / EXTRACT unit changed (month ↔ week / quarter /
                    day …); a bare time dimension truncated to week or month
``scale``           a metric expression times 2, a fact times 100, an aggregate
                    of an exemplar times 2
``swap_column``     a fact in a metric expression, or a dimension's expression,
                    replaced by a sibling of the same model
==================  ==========================================================

Skills are not mutated: the fast tier does not read them, so every such mutant
would survive by construction. Answers are not mutated either: they are the
oracle, and an edited answer is self-tested, never gated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
import yaml
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assets import normalize_sql
from reconciler.lens import Lens, Model
from reconciler.loader import load_yaml

OPERATORS = (
    "aggregation",
    "drop_filter",
    "negate_filter",
    "swap_join_key",
    "time_grain",
    "scale",
    "swap_column",
)

# Grain swaps, nearest neighbours first (DESIGN's grains: day … year).
GRAIN_SWAPS: Mapping[str, tuple[str, ...]] = {
    "day": ("week", "month"),
    "week": ("month", "day"),
    "month": ("week", "quarter", "day"),
    "quarter": ("month", "year"),
    "year": ("quarter", "month"),
}

# A rewrite maps one AST node (and the dialect, for labels) to [(label, replacement)];
# a ``None`` replacement removes the node.
Rewrite = Callable[[exp.Expr, str], list[tuple[str, exp.Expr | None]]]


@dataclass(frozen=True)
class Edit:
    """One rewritten lens file: a semantic mutant or a formatting-only edit.

    Attributes:
        operator: the mutation operator (:data:`OPERATORS`) or formatting kind.
        asset: the asset id the file declares (``metrics/net_revenue``), or
            ``answers/<id>`` for an answer file.
        path: lens-relative path of the file (``metrics/net_revenue.yaml``).
        change: one human line saying what changed (``expression: SUM(x) → AVG(x)``).
        content: the file's new bytes.
    """

    operator: str
    asset: str
    path: str
    change: str
    content: bytes

    def record(self) -> dict[str, str]:
        """JSON-ready form without the content."""
        return {
            "operator": self.operator,
            "asset": self.asset,
            "path": self.path,
            "change": self.change,
        }


class _Dumper(yaml.SafeDumper):
    """Safe dumper writing multi-line strings as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Any, *, indent: int = 2) -> bytes:
    """YAML text for ``data`` with key order kept and multi-line strings as blocks."""
    text = yaml.dump(
        data,
        Dumper=_Dumper,
        indent=indent,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return text.encode("utf-8")


def parse_file(lens: Lens, rel: str, content: bytes) -> Any:
    """A lens YAML file's data as the lens loader reads it (``on`` stays a string)."""
    return load_yaml(f"{lens.root}/{rel}", content).data


def sql_variants(
    sql: str, dialect: str, rewrite: Rewrite, *, pretty: bool = False
) -> list[tuple[str, str]]:
    """Every single-node rewrite of ``sql``'s AST, in pre-order.

    Args:
        sql: a query or an expression.
        dialect: sqlglot dialect name.
        rewrite: maps ``(node, dialect)`` to ``[(label, replacement or None to remove)]``.
        pretty: render multi-line (for whole queries).

    Returns:
        ``[(new sql, label)]``; variants whose normalized SQL equals the
        original's (no semantic change by AST) are dropped.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return []
    before = normalize_sql(sql, dialect)
    out: list[tuple[str, str]] = []
    for i, node in enumerate(tree.walk(bfs=False)):
        for label, replacement in rewrite(node, dialect):
            mutated = tree.copy()
            target = list(mutated.walk(bfs=False))[i]
            if target is mutated:
                if replacement is None:
                    continue
                mutated = replacement
            elif replacement is None:
                target.pop()
            else:
                target.replace(replacement)
            text = mutated.sql(dialect=dialect, pretty=pretty)
            if normalize_sql(text, dialect) != before:
                out.append((text, label))
    return out


def _agg(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
    arg = node.this.copy() if isinstance(node.this, exp.Expr) else None
    if arg is None:
        return []
    swaps: list[type[exp.Expr]] = []
    if isinstance(node, exp.Sum):
        swaps = [exp.Avg, exp.Count, exp.Max]
    elif isinstance(node, exp.Avg):
        swaps = [exp.Sum, exp.Max]
    elif isinstance(node, exp.Max):
        swaps = [exp.Min]
    elif isinstance(node, exp.Min):
        swaps = [exp.Max]
    elif isinstance(node, exp.Count) and isinstance(arg, exp.Distinct):
        inner = arg.expressions[0].copy() if len(arg.expressions) == 1 else None
        return (
            []
            if inner is None
            else [(_arrow(node, exp.Count(this=inner), dialect), exp.Count(this=inner))]
        )
    elif isinstance(node, exp.Count) and not isinstance(arg, exp.Star):
        counted = exp.Count(this=exp.Distinct(expressions=[arg]))
        return [(_arrow(node, counted, dialect), counted)]
    out: list[tuple[str, exp.Expr | None]] = []
    for cls in swaps:
        new = cls(this=arg.copy())
        out.append((_arrow(node, new, dialect), new))
    return out


def _arrow(before: exp.Expr, after: exp.Expr | None, dialect: str) -> str:
    return f"{before.sql(dialect)} → {after.sql(dialect) if after is not None else '(removed)'}"


def _conjuncts(where: exp.Where) -> list[exp.Expr]:
    cond = where.this
    return list(cond.flatten()) if isinstance(cond, exp.And) else [cond]


def _drop_conjunct(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
    if isinstance(node, exp.Filter):
        return [(f"FILTER ({node.expression.this.sql(dialect)}) removed", node.this.copy())]
    if not isinstance(node, exp.Where):
        return []
    parts = _conjuncts(node)
    out: list[tuple[str, exp.Expr | None]] = []
    for j, part in enumerate(parts):
        rest = [p.copy() for k, p in enumerate(parts) if k != j]
        new = exp.Where(this=exp.and_(*rest)) if rest else None
        out.append((f"WHERE condition {part.sql(dialect)} removed", new))
    return out


def _negate_conjunct(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
    if not isinstance(node, exp.Where):
        return []
    parts = _conjuncts(node)
    out: list[tuple[str, exp.Expr | None]] = []
    for j, part in enumerate(parts):
        new_parts = [exp.not_(p.copy()) if k == j else p.copy() for k, p in enumerate(parts)]
        out.append(
            (f"WHERE condition {part.sql(dialect)} negated", exp.Where(this=exp.and_(*new_parts)))
        )
    return out


def _grain(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        key = "unit"
    elif isinstance(node, exp.Extract):
        key = "this"
    else:
        return []
    unit = node.args.get(key)
    if not isinstance(unit, (exp.Var, exp.Literal)):
        return []
    out: list[tuple[str, exp.Expr | None]] = []
    for grain in GRAIN_SWAPS.get(unit.name.lower(), ()):
        new = node.copy()
        new.set(key, exp.Var(this=grain.upper()))
        out.append((f"{unit.name.lower()} → {grain}: {_arrow(node, new, dialect)}", new))
    return out


def _scale_aggregates(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
    # Only aggregates the query returns: a select item's own aggregate.
    if not isinstance(node, exp.AggFunc) or node.find_ancestor(exp.AggFunc) is not None:
        return []
    if not isinstance(node.parent, (exp.Alias, exp.Select)):
        return []
    new = exp.Mul(this=node.copy(), expression=exp.Literal.number(2))
    return [(_arrow(node, new, dialect), new)]


def _times(sql: str, dialect: str, factor: int) -> str:
    tree = sqlglot.parse_one(sql, read=dialect)
    return exp.Mul(this=exp.Paren(this=tree), expression=exp.Literal.number(factor)).sql(
        dialect=dialect
    )


def key_columns(lens: Lens, model: Model) -> list[str]:
    """Columns of ``model`` that serve as keys: its primary key and every join key on it."""
    keys = set(model.primary_key)
    for j in model.joins:
        keys.update(j.on)
    for other in lens.models.values():
        for j in other.joins:
            if j.to == model.name:
                keys.update(j.on.values())
    keys.update(c.sql for c in model.columns() if c.sql.lower().endswith("_id"))
    return sorted(keys)


def _join_key_swaps(lens: Lens, sql: str, dialect: str) -> Rewrite:
    """A rewrite moving a column of a JOIN's ON condition to another key of its table."""
    aliases: dict[str, Model] = {}
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return lambda _node, _dialect: []
    for table in tree.find_all(exp.Table):
        models = lens.models_for_table(table.name)
        if models:
            aliases[(table.alias_or_name).lower()] = models[0]

    def rewrite(node: exp.Expr, dialect: str) -> list[tuple[str, exp.Expr | None]]:
        if not isinstance(node, exp.Column) or not node.table:
            return []
        join = node.find_ancestor(exp.Join)
        on = join.args.get("on") if join is not None else None
        if on is None or not any(c is node for c in on.find_all(exp.Column)):
            return []
        model = aliases.get(node.table.lower())
        if model is None:
            return []
        out: list[tuple[str, exp.Expr | None]] = []
        for key in key_columns(lens, model):
            if key != node.name:
                new = exp.column(key, table=node.table)
                out.append((f"join key {_arrow(node, new, dialect)}", new))
        return out

    return rewrite


Candidate = tuple[str, str, Any]  # (operator, change, new data)


def _set(data: Any, path: Sequence[str | int], value: Any) -> Any:
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _sql_field_mutants(
    data: Any, path: Sequence[str | int], sql: str, dialect: str, rewrites: Mapping[str, Rewrite]
) -> Iterator[Candidate]:
    where = ".".join(str(p) for p in path)
    pretty = "\n" in sql.strip()
    for operator, rewrite in rewrites.items():
        for text, label in sql_variants(sql, dialect, rewrite, pretty=pretty):
            yield operator, f"{where}: {label}", _set(data, path, text + ("\n" if pretty else ""))


def _metric_mutants(lens: Lens, name: str, data: Any) -> Iterator[Candidate]:
    dialect = lens.config.dialect
    metric = lens.metrics[name]
    expression = metric.expression
    yield from _sql_field_mutants(data, ("expression",), expression, dialect, _EXPR_REWRITES)
    for i, flt in enumerate(metric.filters):
        rest = [f for k, f in enumerate(metric.filters) if k != i]
        yield "drop_filter", f"filters: {flt} removed", _set(data, ("filters",), rest)
        negated = exp.not_(sqlglot.parse_one(flt, read=dialect)).sql(dialect=dialect)
        yield "negate_filter", f"filters: {flt} → {negated}", _set(data, ("filters", i), negated)
    scaled = _times(expression, dialect, 2)
    yield "scale", f"expression: {expression} → {scaled}", _set(data, ("expression",), scaled)
    model = lens.models.get(metric.model)
    facts = sorted(c.name for c in model.facts) if model else []
    for col_name in facts:
        for other in facts:
            if other == col_name:
                continue

            def swap(node: exp.Expr, _dialect: str, a: str = col_name, b: str = other) -> list[Any]:
                if isinstance(node, exp.Column) and node.name == a:
                    return [(f"column {a} → {b}", exp.column(b, table=node.table or None))]
                return []

            yield from _sql_field_mutants(
                data, ("expression",), expression, dialect, {"swap_column": swap}
            )


def _model_mutants(lens: Lens, name: str, data: Any) -> Iterator[Candidate]:
    dialect = lens.config.dialect
    model = lens.models[name]
    for group in ("dimensions", "time_dimensions", "facts"):
        for i, col in enumerate(getattr(model, group)):
            path = (group, i, "expr")
            yield from _sql_field_mutants(data, path, col.sql, dialect, _EXPR_REWRITES)
            if group == "facts":
                scaled = _times(col.sql, dialect, 100)
                yield "scale", f"facts.{col.name}: {col.sql} → {scaled}", _set(data, path, scaled)
            if group == "time_dimensions" and isinstance(
                sqlglot.parse_one(col.sql, read=dialect), exp.Column
            ):
                for grain in ("week", "month"):
                    trunc = f"DATE_TRUNC('{grain}', {col.sql})"
                    yield (
                        "time_grain",
                        f"time_dimensions.{col.name}: day → {grain}: {col.sql} → {trunc}",
                        _set(data, path, trunc),
                    )
            if group == "dimensions":
                for other in model.dimensions:
                    if other.sql != col.sql:
                        yield (
                            "swap_column",
                            f"dimensions.{col.name}: {col.sql} → {other.sql}",
                            _set(data, path, other.sql),
                        )
    for i, join in enumerate(model.joins):
        target = lens.models.get(join.to)
        for left, right in sorted(join.on.items()):
            others = {k: v for k, v in join.on.items() if k != left}
            for key in key_columns(lens, model):
                if key != left and key not in others:
                    new_on = {**others, key: right}
                    yield (
                        "swap_join_key",
                        f"joins.{join.to}: {name}.{left} → {name}.{key}",
                        _set(data, ("joins", i, "on"), new_on),
                    )
            for key in key_columns(lens, target) if target else []:
                if key != right:
                    yield (
                        "swap_join_key",
                        f"joins.{join.to}: {join.to}.{right} → {join.to}.{key}",
                        _set(data, ("joins", i, "on"), {**join.on, left: key}),
                    )


def _exemplar_mutants(lens: Lens, name: str, data: Any) -> Iterator[Candidate]:
    dialect = lens.config.dialect
    sql = lens.exemplars[name].sql
    rewrites: dict[str, Rewrite] = {
        "aggregation": _agg,
        "drop_filter": _drop_conjunct,
        "negate_filter": _negate_conjunct,
        "swap_join_key": _join_key_swaps(lens, sql, dialect),
        "time_grain": _grain,
        "scale": _scale_aggregates,
    }
    yield from _sql_field_mutants(data, ("sql",), sql, dialect, rewrites)


_EXPR_REWRITES: Mapping[str, Rewrite] = {
    "aggregation": _agg,
    "drop_filter": _drop_conjunct,
    "time_grain": _grain,
}


def semantic_mutants(
    lens: Lens, files: Mapping[str, bytes], *, limit: int | None = None
) -> list[Edit]:
    """Every semantic mutant of ``lens``'s models, metrics and exemplars.

    Args:
        lens: the validated lens.
        files: its files, ``{lens-relative path: bytes}`` (as :func:`load_lens` took them).
        limit: at most this many mutants per operator (``None``: all). Mutants
            are taken round-robin over assets, so a cap still spreads over the lens.

    Returns:
        Mutants ordered by operator (:data:`OPERATORS`), then round-robin over
        assets: metrics, models, exemplars, each sorted by name (so a cap
        reaches the assets answers lean on first); deterministic for a lens.
    """
    generators: list[tuple[str, Callable[[Lens, str, Any], Iterator[Candidate]]]] = []
    generators += [(f"metrics/{n}", _metric_mutants) for n in sorted(lens.metrics)]
    generators += [(f"models/{n}", _model_mutants) for n in sorted(lens.models)]
    generators += [(f"exemplars/{n}", _exemplar_mutants) for n in sorted(lens.exemplars)]
    per_asset: dict[str, dict[str, list[Edit]]] = {op: {} for op in OPERATORS}
    for asset, generate in generators:
        rel = lens.sources[asset]
        data = parse_file(lens, rel, files[rel])
        seen: set[bytes] = set()
        for operator, change, new_data in generate(lens, asset.split("/", 1)[1], data):
            content = dump_yaml(new_data)
            if content in seen:
                continue
            seen.add(content)
            per_asset[operator].setdefault(asset, []).append(
                Edit(operator, asset, rel, change, content)
            )
    out: list[Edit] = []
    for operator in OPERATORS:
        out += round_robin(per_asset[operator], limit)
    return out


def round_robin(groups: Mapping[str, Sequence[Edit]], limit: int | None) -> list[Edit]:
    """Interleave ``groups`` in their order: first of each, then second of each …, capped."""
    out: list[Edit] = []
    depth = max((len(g) for g in groups.values()), default=0)
    for i in range(depth):
        for key in groups:
            if i < len(groups[key]):
                out.append(groups[key][i])
    return out if limit is None else out[:limit]
