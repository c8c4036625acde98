"""Export a lens as a Snowflake Cortex Analyst semantic model (YAML).

The inverse of :mod:`reconciler.interop.importers.cortex` (Snowflake docs, "Cortex
Analyst semantic model specification", "Verified Query Repository"):

==============================  ==============================================
lens                            Cortex
==============================  ==============================================
``lens.yaml`` name/description  model ``name``/``description``
model                           logical table ``<model name>``, ``base_table``
                                (``database``/``schema`` only when the table
                                name is qualified)
dimensions / time_dimensions    ``dimensions`` / ``time_dimensions``, ``expr``
                                transpiled lens dialect → Snowflake
facts                           ``facts``; ``default_aggregation`` when a lens
                                metric of the same name is exactly that
                                aggregate of the fact (as the importer makes)
other metrics                   table-level ``metrics``; filters move inside
                                the aggregates (``SUM(CASE WHEN … THEN x END)``)
joins                           ``relationships`` (``join_type: inner``)
active certified answers        ``verified_queries``: question, SQL over logical
                                tables, ``verified_by``, ``verified_at``
skills                          ``custom_instructions``
==============================  ==============================================

Verified SQL must name logical tables (Snowflake: "Verified SQL queries must use
the names of the logical tables and columns"), so each oracle is rewritten: a
derived table that the Cortex importer compiled from a logical table becomes that
``__<table>`` reference again, and a physical table read by exactly one model
becomes its logical table. Re-importing the export therefore compiles the very
oracle it started from. Everything Cortex cannot hold is listed in the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timezone

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.interop.exporters import ExportReport
from reconciler.interop.importers import dump_yaml
from reconciler.interop.importers.dbt_metrics import Unmappable, fold_filters
from reconciler.lens import Answer, Column, Lens, Metric, Model
from reconciler.provenance import certified_day

TARGET = "snowflake"
_AGGREGATIONS: dict[type[exp.Expr], str] = {
    exp.Sum: "sum", exp.Avg: "avg", exp.Median: "median", exp.Min: "min", exp.Max: "max",
    exp.Count: "count",
}  # fmt: skip
# The header the Cortex importer puts on custom instructions (reconciler.interop.importers.cortex).
_IMPORTED_HEADER = re.compile(r"^# Custom instructions\n\nImported from Cortex Analyst [^\n]*\n\n")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# One entry of the semantic model YAML (a table, a column, a metric …), as dumped.
Entry = dict[str, object]


@dataclass(frozen=True)
class _Table:
    """One logical table and what it carries.

    Attributes:
        entry: the table as dumped.
        facts: number of facts.
        metrics: number of table-level metrics.
    """

    entry: Entry
    facts: int
    metrics: int


def export_cortex(lens: Lens) -> tuple[bytes, ExportReport]:
    """A lens as a Cortex Analyst semantic model.

    Args:
        lens: a loaded lens.

    Returns:
        ``(YAML bytes, report)``. The YAML loads with ``dst import cortex``.
    """
    dialect = lens.config.dialect
    lost: list[str] = []
    written = [
        _table(lens, model, dialect, lost)
        for model in sorted(lens.models.values(), key=lambda m: m.name)
    ]
    tables = [t.entry for t in written]
    relationships = [
        {
            "name": f"{model.name}_to_{join.to}",
            "left_table": model.name,
            "right_table": join.to,
            "relationship_columns": [
                {"left_column": left, "right_column": right} for left, right in join.on.items()
            ],
            "join_type": "inner",
            "relationship_type": join.relationship,
        }
        for model in sorted(lens.models.values(), key=lambda m: m.name)
        for join in model.joins
    ]
    queries = [_verified_query(lens, a, dialect, lost) for a in lens.active_answers()]
    for answer in sorted(lens.answers.values(), key=lambda a: a.id):
        if answer.status != "active":
            lost.append(f"answers/{answer.id}: {answer.status} - only active answers are verified")
    for name in sorted(lens.exemplars):
        lost.append(f"exemplars/{name}: Cortex has no uncertified examples")
    config = lens.config
    for key, value in (
        ("as_of", config.as_of),
        ("clarify", config.clarify),
        ("exclusions", config.exclusions),
    ):
        if value:
            lost.append(f"lens.yaml {key}: Cortex has no {key}")
    if lens.cases:
        lost.append(f"evals/cases.yaml: {len(lens.cases)} behavioural cases - Cortex has no evals")
    if lens.seeds:
        lost.append(f"seeds: {len(lens.seeds)} CSV files - data, not part of a semantic model")
    data: Entry = {"name": lens.name}
    if config.description.strip():
        data["description"] = config.description.strip()
    data["tables"] = tables
    if relationships:
        data["relationships"] = [{k: v for k, v in r.items() if v} for r in relationships]
    if queries:
        data["verified_queries"] = queries
    instructions = "\n\n".join(
        _IMPORTED_HEADER.sub("", skill.text).strip() for _, skill in sorted(lens.skills.items())
    ).strip()
    if instructions:
        data["custom_instructions"] = instructions
    header = f"Cortex Analyst semantic model exported from lens {lens.name} by `dst export cortex`."
    report = ExportReport(
        lens=lens.name,
        tables=len(tables),
        facts=sum(t.facts for t in written),
        metrics=sum(t.metrics for t in written),
        relationships=len(relationships),
        verified_queries=len(queries),
        unmapped=tuple(lost),
    )
    return dump_yaml(data, header=header), report


def _sql(sql: str, dialect: str) -> str:
    return sqlglot.parse_one(sql, read=dialect).sql(dialect=TARGET)


def _column(col: Column, dialect: str, name: str | None = None) -> Entry:
    out: Entry = {"name": name or col.name, "expr": _sql(col.sql, dialect)}
    out["data_type"] = col.data_type
    if col.description:
        out["description"] = col.description
    if col.synonyms:
        out["synonyms"] = list(col.synonyms)
    if col.sample_values:
        out["sample_values"] = list(col.sample_values)
    return out


def _table(lens: Lens, model: Model, dialect: str, lost: list[str]) -> _Table:
    """One logical table: base table, keys, columns, facts and table-level metrics."""
    table: Entry = {"name": model.name}
    if model.description:
        table["description"] = model.description
    table["base_table"] = _base_table(model.table)
    if model.primary_key:
        table["primary_key"] = {"columns": list(model.primary_key)}
    dimensions = _dimensions(lens, model, dialect, lost)
    if dimensions:
        table["dimensions"] = dimensions
    if model.time_dimensions:
        table["time_dimensions"] = [_column(c, dialect) for c in model.time_dimensions]
    if model.default_time_dimension:
        lost.append(f"models/{model.name}.default_time_dimension: Cortex has no default time")
    facts, used = _facts(lens, model, dialect)
    if facts:
        table["facts"] = facts
    own = sorted((m for m in lens.metrics.values() if m.model == model.name), key=lambda m: m.name)
    written = [_table_metric(lens, m, dialect, lost) for m in own if m.name not in used]
    table_metrics = [entry for entry in written if entry is not None]
    if table_metrics:
        table["metrics"] = table_metrics
    return _Table(table, len(facts), len(table_metrics))


def _base_table(qualified: str) -> dict[str, str]:
    """``database`` / ``schema`` (when the name is qualified) and ``table``."""
    parts = qualified.split(".")
    base: dict[str, str] = {}
    if len(parts) == 3:
        base["database"] = parts[0]
    if len(parts) >= 2:
        base["schema"] = parts[-2]
    base["table"] = parts[-1]
    return base


def _dimensions(lens: Lens, model: Model, dialect: str, lost: list[str]) -> list[Entry]:
    """The model's dimensions, plus the key columns relationships need as logical columns."""
    dimensions = [_column(c, dialect) for c in model.dimensions]
    keys = _key_columns(lens, model)
    if keys:  # relationships and primary keys must name logical columns
        dimensions += [{"name": k, "expr": k, "data_type": "string"} for k in keys]
        lost.append(
            f"models/{model.name}: key columns {', '.join(keys)} added as dimensions "
            "(Cortex relationships and primary keys name logical columns)"
        )
    return dimensions


def _facts(lens: Lens, model: Model, dialect: str) -> tuple[list[Entry], set[str]]:
    """The model's facts, and the metrics written as a fact's ``default_aggregation``."""
    used: set[str] = set()
    facts: list[Entry] = []
    for col in model.facts:
        entry = _column(col, dialect)
        metric = lens.metrics.get(col.name)
        agg = _fact_aggregation(metric, col, model, dialect) if metric else None
        if metric is not None and agg is not None:
            entry["default_aggregation"] = agg
            label = (metric.label or "").replace(" ", "_")
            if label.lower() == col.name and _IDENTIFIER.fullmatch(label):
                entry["name"] = label  # the label keeps the source spelling
            if metric.description and not col.description:
                entry["description"] = metric.description
            used.add(metric.name)
        facts.append(entry)
    return facts, used


def _key_columns(lens: Lens, model: Model) -> list[str]:
    """Primary-key and join columns of ``model`` that it does not declare, in first-use order."""
    wanted = list(model.primary_key)
    for join in model.joins:
        wanted += list(join.on)
    for other in lens.models.values():
        wanted += [right for j in other.joins if j.to == model.name for right in j.on.values()]
    declared = {c.name for c in model.columns()}
    return [k for k in dict.fromkeys(w.lower() for w in wanted) if k not in declared]


def _fact_aggregation(metric: Metric, col: Column, model: Model, dialect: str) -> str | None:
    """The Cortex ``default_aggregation`` when ``metric`` is exactly ``AGG(<col>)`` on its model."""
    if metric.model != model.name or metric.filters:
        return None
    try:
        tree = sqlglot.parse_one(metric.expression, read=dialect)
        operand = sqlglot.parse_one(col.sql, read=dialect)
    except SqlglotError:
        return None
    if isinstance(tree, exp.Count) and isinstance(tree.this, exp.Distinct):
        inner = tree.this.expressions
        return "count_distinct" if len(inner) == 1 and inner[0] == operand else None
    agg = _AGGREGATIONS.get(type(tree))
    return agg if agg is not None and tree.this == operand else None


def _table_metric(lens: Lens, metric: Metric, dialect: str, lost: list[str]) -> Entry | None:
    where = f"metrics/{metric.name}"
    try:
        trees = [sqlglot.parse_one(s, read=dialect) for s in (metric.expression, *metric.filters)]
    except SqlglotError:
        lost.append(f"{where}: does not parse; not exported")
        return None
    if any(c.table for t in trees for c in t.find_all(exp.Column)):
        lost.append(
            f"{where}: reads columns of a joined model; Cortex table metrics read one table"
        )
        return None
    try:
        folded = fold_filters(trees[0], [t.sql(dialect="duckdb") for t in trees[1:]])
    except Unmappable as exc:
        lost.append(f"{where}: {exc.reason}; not exported")
        return None
    if metric.filters:
        lost.append(f"{where}: filters moved inside the aggregates (Cortex metrics have none)")
    if metric.label and metric.label != metric.name.replace("_", " "):
        lost.append(f"{where}: label {metric.label!r} - Cortex metrics have no label")
    entry: Entry = {"name": metric.name, "expr": folded.sql(dialect=TARGET)}
    if metric.description:
        entry["description"] = metric.description
    if metric.synonyms:
        entry["synonyms"] = list(metric.synonyms)
    return entry


def _verified_query(lens: Lens, answer: Answer, dialect: str, lost: list[str]) -> Entry:
    tree = sqlglot.parse_one(answer.sql, read=dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    columns = {m.name: {c.name for c in m.columns()} for m in lens.models.values()}
    for sub in list(tree.find_all(exp.Subquery)):
        model = _compiled_from(sub, lens, columns)
        if model is not None:
            alias = sub.args.get("alias")
            ref = exp.to_table(f"__{model}")
            if alias is not None:
                ref.set("alias", alias.copy())
            sub.replace(ref)
    for ref in list(tree.find_all(exp.Table)):
        name = ref.name.lower()
        if name.startswith("__") or name in ctes or not isinstance(ref.this, exp.Identifier):
            continue
        owners = lens.models_for_table(name)
        if len(owners) != 1:
            lost.append(
                f"answers/{answer.id}: table {name} is read by {len(owners)} models; "
                "left as a physical name, which Cortex rejects"
            )
            continue
        alias = ref.args.get("alias") or exp.TableAlias(this=exp.to_identifier(ref.name))
        new = exp.to_table(f"__{owners[0].name}")
        new.set("alias", alias.copy())
        ref.replace(new)
    entry: Entry = {
        "name": answer.id,
        "question": answer.question,
        "sql": tree.sql(dialect=TARGET, pretty=True),
        "verified_by": answer.provenance.certified_by,
    }
    seconds = verified_seconds(answer.provenance.certified_at)
    if seconds is None:
        lost.append(
            f"answers/{answer.id}: certified_at {answer.provenance.certified_at!r} is not a "
            "date; exported without verified_at (a re-import makes it a draft)"
        )
    else:
        entry["verified_at"] = seconds
    return entry


def verified_seconds(certified_at: str) -> int | None:
    """``verified_at`` (unix seconds) for a ``certified_at`` value, or ``None``.

    A day (``YYYY-MM-DD``) is its midnight UTC; an ISO-8601 timestamp is its own
    instant (a naive one is read as UTC), so a certification stamped with a time
    survives the round trip instead of coming back as a draft. Anything the loader
    would not accept as a date (:func:`reconciler.provenance.certified_day`) is
    ``None``.
    """
    if certified_day(certified_at) is None:
        return None
    text = certified_at.strip()
    if len(text) == 10:
        day = date.fromisoformat(text)
        return int(datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp())
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def _compiled_from(sub: exp.Subquery, lens: Lens, columns: dict[str, set[str]]) -> str | None:
    """The model whose logical table the Cortex importer compiled into this derived table."""
    select = sub.this
    if not isinstance(select, exp.Select) or select.args.get("joins") or select.args.get("where"):
        return None
    source = select.args.get("from_") or select.args.get("from")
    table = source.this if isinstance(source, exp.From) else None
    if not isinstance(table, exp.Table):
        return None
    projections = {p.alias_or_name.lower(): p.unalias() for p in select.expressions}
    for model in lens.models_for_table(table.name):
        if set(projections) != columns[model.name]:
            continue
        dialect = lens.config.dialect
        same = all(
            projections[c.name].sql(dialect=dialect)
            == sqlglot.parse_one(c.sql, read=dialect).sql(dialect=dialect)
            for c in model.columns()
        )
        if same:  # compiling __<model> again gives this very derived table
            return model.name
    return None
