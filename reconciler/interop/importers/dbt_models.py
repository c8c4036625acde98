"""dbt semantic models (and legacy metric models) → lens models and joins (pure).

==========================================  =====================================
dbt / MetricFlow                            lens
==========================================  =====================================
semantic model ``name``, ``description``    ``models/<name>.yaml``
``node_relation.alias`` / ``model: ref()``  ``table`` (schema and database dropped)
categorical dimension                       ``dimensions`` (``expr`` kept)
time dimension                              ``time_dimensions``; ``date`` when its
                                            granularity is a day or coarser
``defaults.agg_time_dimension``             ``default_time_dimension``
measure ``expr``                            a ``facts`` column (the bare column, or
                                            the measure's name for an expression)
primary / unique entity                     ``primary_key`` (a bare column)
foreign → primary/unique entity             ``joins`` (``many_to_one``)
primary/unique → primary/unique entity      ``joins`` (``one_to_one``)
==========================================  =====================================

A legacy ``dbt_metrics`` metric reads a documented dbt model (``models:``): that
model becomes a lens model whose ``timestamp`` columns are time dimensions, whose
columns named in a metric ``expression`` are facts and whose other documented
columns are dimensions. Everything else is reported by the caller's findings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlglot import exp

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.interop.importers import Findings, scalar_text
from reconciler.interop.importers.dbt_metrics import DIALECT, MeasureDef, ModelInfo
from reconciler.interop.importers.dbt_source import Item, mapping, ref_name, resolve_doc
from reconciler.lens import Column, Join

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COARSE = {"day", "week", "month", "quarter", "year"}
# MetricFlow table_snapshot column types -> lens data_type
_SNAPSHOT_TYPES = {"BOOLEAN": "boolean", "INT": "integer", "FLOAT": "double", "TIME": "timestamp"}
_MODEL_KEYS = {"name", "description", "node_relation", "model", "defaults", "dimensions",
               "measures", "entities", "primary_entity", "label", "config", "meta"}  # fmt: skip
_DIM_KEYS = {"name", "type", "expr", "type_params", "description", "label", "is_partition"}
_MEASURE_KEYS = {"name", "agg", "expr", "description", "label", "agg_params", "create_metric",
                 "agg_time_dimension", "non_additive_dimension"}  # fmt: skip
_ENTITY_KEYS = {"name", "type", "expr", "description", "label", "role"}
_LOSSES = {
    "label": "lens models and columns carry no label",
    "config": "dbt config (meta, group, enabled) is not lens content",
    "meta": "dbt meta is not lens content",
    "is_partition": "lens columns carry no partition flag",
    "role": "entity roles are not kept",
}
_ENTITY_TYPES = {"primary", "unique", "natural", "foreign"}


@dataclass
class ModelDraft:
    """One lens model while it is built, and the facts its metrics can read."""

    name: str
    table: str
    description: str = ""
    primary_key: tuple[str, ...] = ()
    dimensions: list[Column] = field(default_factory=list)
    time_dimensions: list[Column] = field(default_factory=list)
    facts: list[Column] = field(default_factory=list)
    default_time: str | None = None
    joins: list[Join] = field(default_factory=list)
    entities: dict[str, tuple[str, str]] = field(default_factory=dict)
    primary_entity: str | None = None

    def taken(self) -> set[str]:
        """Column names already declared."""
        return {c.name for c in self.dimensions + self.time_dimensions + self.facts}

    def info(self) -> ModelInfo:
        """What metric resolution needs of this model."""
        dims = {c.name: (c.sql, False) for c in self.dimensions}
        dims.update({c.name: (c.sql, True) for c in self.time_dimensions})
        return ModelInfo(
            self.name, dict(self.entities), dims, self.default_time, self.primary_entity
        )


def _expr(raw: Mapping[str, Any], name: str) -> str | None:
    """The item's SQL expression (defaults to ``name``), or ``None`` when it does not parse."""
    text = scalar_text(raw.get("expr")).strip() or name
    try:
        return guard.parse_expression(text, DIALECT).sql(dialect=DIALECT)
    except UnsafeSqlError:
        return None


def semantic_model(
    item: Item,
    findings: Findings,
    types: Mapping[str, Mapping[str, str]],
    measures: dict[str, MeasureDef],
) -> ModelDraft | None:
    """Map one semantic model; its measures are added to ``measures``.

    Args:
        item: the semantic model.
        findings: where losses go.
        types: ``{table: {column: snapshot type}}`` from source tables, to type columns.
        measures: every measure so far, by name (MetricFlow names them globally).

    Returns:
        The draft, or ``None`` when the model names no table.

    Raises:
        LensLoadError: the semantic model has no identifier name.
    """
    raw, name = item.data, item.name
    if not NAME_RE.match(name):
        raise item.fail(
            "a semantic model needs a name that is an SQL identifier",
            "name it like orders or fct_bookings",
            "name",
        )
    where = f"semantic_models[{name}]"
    findings.unknown_keys(raw, _MODEL_KEYS, where, _LOSSES)
    for key in ("label", "config", "meta"):
        if raw.get(key):
            findings.lose(f"{where}.{key}", _LOSSES[key])
    relation = mapping(raw.get("node_relation"))
    table = scalar_text(relation.get("alias")).strip() or ref_name(raw.get("model")) or ""
    if not table and relation.get("relation_name"):
        table = scalar_text(relation["relation_name"]).split(".")[-1].strip('"`[] ')
    if not NAME_RE.match(table):
        findings.lose(
            where, "names no table (node_relation.alias or model: ref(...)); not imported"
        )
        return None
    draft = ModelDraft(name.lower(), table.lower(), scalar_text(raw.get("description")).strip())
    draft.primary_entity = scalar_text(raw.get("primary_entity")).strip().lower() or None
    column_types = types.get(draft.table, {})
    defaults = mapping(raw.get("defaults"))
    draft.default_time = scalar_text(defaults.get("agg_time_dimension")).strip().lower() or None
    for i, dim in enumerate(raw.get("dimensions") or ()):
        _dimension(draft, dim, f"{where}.dimensions", i, findings, column_types)
    for i, ent in enumerate(raw.get("entities") or ()):
        _entity(draft, ent, f"{where}.entities", i, findings)
    keys = [e for e, (kind, _) in draft.entities.items() if kind in ("primary", "unique")]
    if keys and NAME_RE.match(draft.entities[keys[0]][1]):
        draft.primary_key = (draft.entities[keys[0]][1],)
    for i, raw_measure in enumerate(raw.get("measures") or ()):
        _measure(draft, raw_measure, f"{where}.measures", i, findings, column_types, measures)
    if draft.default_time and draft.default_time not in {c.name for c in draft.time_dimensions}:
        findings.lose(
            f"{where}.defaults.agg_time_dimension",
            f"{draft.default_time!r} is not one of its time dimensions; no default kept",
        )
        draft.default_time = None
    return draft


def _dimension(
    draft: ModelDraft,
    raw: Any,
    group: str,
    index: int,
    findings: Findings,
    column_types: Mapping[str, str],
) -> None:
    name = scalar_text(raw.get("name")).strip() if isinstance(raw, dict) else ""
    if not NAME_RE.match(name):
        findings.lose(f"{group}[{index}]", "a dimension needs an identifier name; not imported")
        return
    where = f"{group}[{name}]"
    findings.unknown_keys(raw, _DIM_KEYS, where, _LOSSES)
    for key in ("label", "is_partition"):
        if raw.get(key):
            findings.lose(f"{where}.{key}", _LOSSES[key])
    name = name.lower()
    sql = _expr(raw, name)
    if sql is None:
        findings.lose(where, f"expr {scalar_text(raw.get('expr'))!r} does not parse; not imported")
        return
    if name in draft.taken():
        findings.lose(where, "a column of that name is already declared; the first is kept")
        return
    kind = scalar_text(raw.get("type")).strip().lower()
    params = mapping(raw.get("type_params"))
    if params.get("validity_params"):
        findings.lose(
            f"{where}.type_params.validity_params",
            "SCD validity windows have no lens form; kept as a plain time dimension",
        )
    if kind == "time":
        grain = scalar_text(params.get("time_granularity")).strip().lower()
        data_type = "date" if grain in _COARSE or not grain else "timestamp"
    else:
        data_type = _SNAPSHOT_TYPES.get(column_types.get(sql.lower(), ""), "string")
    column = Column(
        name=name,
        expr=None if sql == name else sql,
        data_type=data_type,
        description=scalar_text(raw.get("description")).strip(),
    )
    (draft.time_dimensions if kind == "time" else draft.dimensions).append(column)


def _entity(draft: ModelDraft, raw: Any, group: str, index: int, findings: Findings) -> None:
    name = scalar_text(raw.get("name")).strip().lower() if isinstance(raw, dict) else ""
    kind = scalar_text(raw.get("type")).strip().lower() if isinstance(raw, dict) else ""
    if not NAME_RE.match(name) or kind not in _ENTITY_TYPES:
        findings.lose(f"{group}[{index}]", "an entity needs a name and a known type; not imported")
        return
    findings.unknown_keys(raw, _ENTITY_KEYS, f"{group}[{name}]", _LOSSES)
    sql = _expr(raw, name)
    if sql is None:
        findings.lose(f"{group}[{name}]", "expr does not parse; not imported")
        return
    draft.entities[name] = (kind, sql)


def _measure(
    draft: ModelDraft,
    raw: Any,
    group: str,
    index: int,
    findings: Findings,
    column_types: Mapping[str, str],
    measures: dict[str, MeasureDef],
) -> None:
    name = scalar_text(raw.get("name")).strip().lower() if isinstance(raw, dict) else ""
    if not NAME_RE.match(name):
        findings.lose(f"{group}[{index}]", "a measure needs an identifier name; not imported")
        return
    where = f"{group}[{name}]"
    findings.unknown_keys(raw, _MEASURE_KEYS, where, _LOSSES)
    if raw.get("label"):
        findings.lose(f"{where}.label", _LOSSES["label"])
    sql = _expr(raw, name)
    if sql is None:
        findings.lose(where, "expr does not parse; not imported")
        return
    if name in measures:
        findings.lose(where, f"measure {name!r} is already defined by {measures[name].model}")
        return
    agg_time = scalar_text(raw.get("agg_time_dimension")).strip().lower() or None
    measures[name] = MeasureDef(
        name=name,
        model=draft.name,
        expr=sql,
        agg=scalar_text(raw.get("agg")).strip().lower(),
        params=mapping(raw.get("agg_params")),
        non_additive=bool(raw.get("non_additive_dimension")),
        agg_time=agg_time,
    )
    tree = guard.parse_expression(sql, DIALECT)
    if not list(tree.find_all(exp.Column)):
        return  # a constant (``1`` for counting rows) is no column
    fact_name = tree.name.lower() if isinstance(tree, exp.Column) and not tree.table else name
    if fact_name in draft.taken():
        return
    numeric = _SNAPSHOT_TYPES.get(column_types.get(sql.lower(), ""), "number")
    draft.facts.append(
        Column(
            name=fact_name,
            expr=None if sql == fact_name else sql,
            data_type=numeric if numeric != "timestamp" else "number",
            description=scalar_text(raw.get("description")).strip(),
        )
    )


def entity_joins(drafts: Mapping[str, ModelDraft], findings: Findings) -> None:
    """Add a join for every entity a model shares with a model that owns it (primary/unique).

    MetricFlow joins ``foreign → primary/unique`` (many to one) and
    ``primary/unique → primary/unique`` (one to one); natural keys join SCD tables
    inside a validity window, which a lens join (an equality) cannot express.
    """
    for model in drafts.values():
        for entity, (kind, sql) in model.entities.items():
            for other in drafts.values():
                if other is model or entity not in other.entities:
                    continue
                other_kind, other_sql = other.entities[entity]
                where = f"semantic_models[{model.name}].entities[{entity}]"
                if other_kind == "natural" and kind != "natural":
                    findings.lose(
                        f"{where} → {other.name}",
                        "a natural-key join needs an SCD validity window; no join written",
                    )
                    continue
                if other_kind not in ("primary", "unique") or kind == "natural":
                    continue
                if not (NAME_RE.match(sql) and NAME_RE.match(other_sql)):
                    findings.lose(
                        f"{where} → {other.name}",
                        "the entity is an expression, not a column; no join written",
                    )
                    continue
                if any(j.to == other.name for j in model.joins):
                    findings.lose(
                        f"{where} → {other.name}",
                        "a join to that model already exists; lens joins are one per pair",
                    )
                    continue
                relationship: Literal["many_to_one", "one_to_one"] = (
                    "many_to_one" if kind == "foreign" else "one_to_one"
                )
                model.joins.append(
                    Join(to=other.name, relationship=relationship, on={sql: other_sql})
                )


_LEGACY_COLUMN_KEYS = {"name", "description", "tests", "data_tests", "data_type", "meta",
                       "quote", "tags", "constraints", "config"}  # fmt: skip


def legacy_model(
    item: Item,
    findings: Findings,
    docs: Mapping[str, str],
    times: set[str],
    facts: set[str],
) -> ModelDraft:
    """A documented dbt model that legacy metrics read, as a lens model.

    Args:
        item: the ``models:`` entry.
        findings: where losses go.
        docs: ``{% docs %}`` blocks for ``{{ doc() }}`` descriptions.
        times: columns the metrics use as ``timestamp``.
        facts: columns the metrics aggregate.
    """
    name = item.name.lower()
    draft = ModelDraft(name, name, _description(item.data, docs, f"models[{name}]", findings))
    tests: dict[str, int] = {}
    for i, raw in enumerate(item.data.get("columns") or ()):
        column = scalar_text(raw.get("name")).strip().lower() if isinstance(raw, dict) else ""
        where = f"models[{name}].columns[{column or i}]"
        if not NAME_RE.match(column):
            findings.lose(where, "a column needs an identifier name; not imported")
            continue
        if column in draft.taken():
            findings.lose(where, "the column is documented twice; the first entry is kept")
            continue
        findings.unknown_keys(raw, _LEGACY_COLUMN_KEYS, where, _LOSSES)
        samples: tuple[str, ...] = ()
        for test in (raw.get("tests") or []) + (raw.get("data_tests") or []):
            test_name = next(iter(test)) if isinstance(test, dict) else scalar_text(test)
            if test_name == "accepted_values" and isinstance(test, dict):
                values = (test[test_name] or {}).get("values") or []
                samples = tuple(scalar_text(v) for v in values)
            else:
                tests[test_name] = tests.get(test_name, 0) + 1
        col = Column(
            name=column,
            data_type="date" if column in times else "number" if column in facts else "string",
            description=_description(raw, docs, where, findings),
            sample_values=samples,
        )
        group = (
            draft.time_dimensions
            if column in times
            else draft.facts
            if column in facts
            else draft.dimensions
        )
        group.append(col)
    if tests:
        listed = ", ".join(f"{k} ×{v}" for k, v in sorted(tests.items()))
        findings.lose(f"models[{name}] column tests", f"{listed} - a lens holds no data tests")
    if draft.time_dimensions:
        draft.default_time = draft.time_dimensions[0].name
    return draft


def _description(
    raw: Mapping[str, Any], docs: Mapping[str, str], where: str, findings: Findings
) -> str:
    text, missing = resolve_doc(scalar_text(raw.get("description")), docs)
    if missing:
        findings.lose(
            f"{where}.description", f"docs block {missing!r} is not in the project; left out"
        )
    return text
