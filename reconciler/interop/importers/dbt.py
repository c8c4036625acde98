"""Import a dbt semantic layer (MetricFlow, or legacy dbt_metrics) as a lens.

Sources (:mod:`reconciler.interop.importers.dbt_source`): a dbt project's property files,
MetricFlow manifest YAML, or ``semantic_manifest.json``. The mapping:

==============================  ==============================================
dbt                             lens
==============================  ==============================================
semantic model                  ``models/<name>.yaml`` (:mod:`.dbt_models`)
entities                        ``primary_key`` and ``joins``
simple / ratio / derived metric ``metrics/<name>.yaml`` (:mod:`.dbt_metrics`)
measure ``create_metric: true`` ``metrics/<measure>.yaml`` (a simple metric)
legacy metric (dbt_metrics)     ``metrics/<name>.yaml`` over the documented
                                dbt model, which becomes a lens model
saved query                     ``exemplars/<name>.yaml`` (:mod:`.dbt_queries`)
seed CSV / MetricFlow table     ``seeds/<table>.csv`` for tables a model reads
snapshot
==============================  ==============================================

With data, a model whose table no data file fills is reported, and so is a
primary entity that is not unique over its seed: it is dropped, with the joins
that use it as their one side (:mod:`.checks`).

dbt holds no human-verified answers, so the lens has no certified answers; a
saved query is a named example, not a certification, and becomes an exemplar.
Everything the lens cannot hold — cumulative and conversion metrics, time
offsets, semi-additive measures, time spines, labels, tests — is listed in
:attr:`~reconciler.interop.importers.ImportReport.unmapped` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from sqlglot import exp

from reconciler import guard
from reconciler.errors import UnsafeSqlError, UsageError
from reconciler.interop.importers import (
    Findings,
    ImportReport,
    OracleRunner,
    dump_yaml,
    scalar_text,
    write_lens,
    written_paths,
)
from reconciler.interop.importers.checks import KeyedModel, check_keys, tables_not_held
from reconciler.interop.importers.dbt_metrics import DIALECT, Form, MeasureDef, Resolver, Unmappable
from reconciler.interop.importers.dbt_models import (
    NAME_RE,
    ModelDraft,
    entity_joins,
    legacy_model,
    semantic_model,
)
from reconciler.interop.importers.dbt_queries import compile_saved_query
from reconciler.interop.importers.dbt_source import (
    Item,
    Sources,
    SourceTable,
    read_sources,
    ref_name,
    table_snapshot,
)
from reconciler.lens import LENS_NAME_RE, Column, Exemplar, Metric, Model, load_lens
from reconciler.schemas import with_schema_comment

__all__ = ["import_dbt", "write_lens"]

_METRIC_KEYS = {"name", "description", "type", "type_params", "filter", "label",
                "time_granularity", "config", "meta", "metadata"}  # fmt: skip
_LEGACY_KEYS = {"name", "label", "model", "description", "calculation_method", "expression",
                "timestamp", "time_grains", "dimensions", "filters", "window", "config",
                "meta"}  # fmt: skip
_LEGACY_AGGS = {"sum", "average", "count", "count_distinct", "min", "max", "median"}
_SAVED_KEYS = {"name", "description", "label", "query_params", "exports", "config", "meta",
               "metadata", "tags"}  # fmt: skip
_LOSSES = {
    "label": "lens metrics keep no label of dbt's (the label is the name, spaced)",
    "config": "dbt config (meta, group, enabled) is not lens content",
    "meta": "dbt meta is not lens content",
    "exports": "saved-query exports write tables; a lens only reads",
    "tags": "dbt tags are not lens content",
    "time_grains": "lens metrics allow any time grain",
    "window": "a rolling window has no lens form",
}
_METRIC_CALL = re.compile(r"{{\s*metric\(\s*['\"](\w+)['\"]\s*\)\s*}}")


def import_dbt(
    sources: Mapping[str, bytes],
    *,
    source_name: str,
    lens: str,
    data: Mapping[str, bytes] | None = None,
    run_oracles: OracleRunner | None = None,
) -> tuple[dict[str, bytes], ImportReport]:
    """Import a dbt semantic layer as a lens, writing nothing.

    Args:
        sources: ``{display path: bytes}`` of the YAML / JSON property or manifest
            files (and ``.md`` docs files), in reading order.
        source_name: what the lens description names as its origin.
        lens: the lens name.
        data: ``{file name: bytes}`` of seed CSVs (table = file stem) and MetricFlow
            ``table_snapshot`` YAMLs; only tables a model reads become seeds.
        run_oracles: counts key values over the seeds: a primary key that is
            not unique there is dropped, with the joins that use it as their one
            side (:func:`~reconciler.interop.importers.checks.check_keys`);
            ``None`` skips the check (noted).

    Returns:
        ``({lens-relative path: bytes}, report)``; the files load with
        :func:`reconciler.lens.load_lens`.

    Raises:
        UsageError: an invalid lens name, or sources with no semantic model,
            metric or saved query.
        LensLoadError: a source file that does not parse or a semantic model
            without a name, at its file and line.
    """
    if not LENS_NAME_RE.match(lens):
        raise UsageError(
            f"lens name {lens!r} is not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_'",
        )
    found = read_sources(sources)
    items = found.items
    if not (items["semantic_model"] or items["metric"] or items["legacy_metric"]):
        raise UsageError(
            f"{source_name}: no semantic_models, metrics or saved_queries found",
            fix="pass a dbt project directory, MetricFlow manifest YAML, or semantic_manifest.json",
        )
    ctx = _source_findings(found)
    tables = _data_tables(data or {}, ctx)
    types = {name: dict(t.types) for name, t in tables.items()}

    measures: dict[str, MeasureDef] = {}
    drafts = _semantic_models(items, ctx, types, measures)
    entity_joins(drafts, ctx)
    raw_metrics = _metric_sources(items, ctx, measures, drafts)
    legacy = _legacy(items, found.docs, drafts, measures, raw_metrics, ctx)
    _unread_dbt_models(items, drafts, legacy, ctx)
    seed_files: dict[str, bytes] = {}
    seeds = _seeds(tables, {d.table for d in drafts.values()}, seed_files, ctx)
    if tables:
        held = {d.name: d.table for d in drafts.values()}
        tables_not_held(held, seeds, ctx, "the data given")
        _check_keys(drafts, seed_files, seeds, run_oracles, ctx)

    joins = {name: {j.to for j in d.joins} for name, d in drafts.items()}
    resolver = Resolver({n: d.info() for n, d in drafts.items()}, measures, raw_metrics, joins)
    forms, metrics = _metrics(raw_metrics, resolver, ctx)

    exemplars = _saved_queries(items["saved_query"], forms, resolver, drafts, ctx)
    files: dict[str, bytes] = {"lens.yaml": _lens_yaml(lens, source_name)}
    for draft in drafts.values():
        files[f"models/{draft.name}.yaml"] = _model_yaml(draft)
    for metric in metrics:
        files[f"metrics/{metric.name}.yaml"] = dump_yaml(
            metric.model_dump(mode="json", exclude_defaults=True)
        )
    for exemplar in exemplars:
        files[f"exemplars/{exemplar.name}.yaml"] = dump_yaml(exemplar.model_dump(mode="json"))
    files.update(seed_files)
    files = {rel: with_schema_comment(rel, body) for rel, body in files.items()}
    load_lens(lens, files)  # the importer's own contract: what it returns loads
    report = ImportReport(
        lens=lens,
        written=written_paths(lens, files),
        models=len(drafts),
        metrics=len(metrics),
        answers=0,
        seeds=seeds,
        unmapped=tuple(ctx.unmapped),
        notes=tuple(ctx.notes),
        exemplars=len(exemplars),
        problems=tuple(ctx.problems),
    )
    return files, report


def _check_keys(
    drafts: Mapping[str, ModelDraft],
    seed_files: Mapping[str, bytes],
    seeds: Mapping[str, int],
    runner: OracleRunner | None,
    ctx: Findings,
) -> None:
    """Drop primary keys the seeds show not unique, and the joins that rely on them."""
    keyed = [
        KeyedModel(
            d.name,
            d.table,
            d.primary_key,
            list(d.joins),
            {c.name: c.sql for c in d.dimensions + d.time_dimensions + d.facts},
        )
        for d in drafts.values()
    ]
    data = {table: seed_files[f"seeds/{table}.csv"] for table in seeds}
    check_keys(keyed, data, seeds, runner, ctx, dialect=DIALECT)
    for checked in keyed:
        drafts[checked.model].primary_key = checked.primary_key
        drafts[checked.model].joins[:] = checked.joins


def _source_findings(found: Sources) -> Findings:
    """The findings to start from: what reading the sources skipped, and time spines."""
    ctx = Findings()
    for where, reason in found.skipped:
        ctx.lose(where, reason)
    if found.time_spines:
        ctx.lose(
            "project_configuration.time_spines",
            f"{found.time_spines} time spine tables - lens time buckets use DATE_TRUNC, "
            "so metrics lose join_to_timespine gap filling",
        )
    return ctx


def _semantic_models(
    items: Mapping[str, list[Item]],
    ctx: Findings,
    types: Mapping[str, Mapping[str, str]],
    measures: dict[str, MeasureDef],
) -> dict[str, ModelDraft]:
    """A draft model per semantic model (their measures go into ``measures``).

    Raises:
        LensLoadError: two semantic models of one name.
    """
    drafts: dict[str, ModelDraft] = {}
    qualified: list[str] = []
    for item in items["semantic_model"]:
        draft = semantic_model(item, ctx, types, measures)
        if draft is None:
            continue
        if draft.name in drafts:
            raise item.fail(f"semantic model {item.name!r} is declared twice", "rename one", "name")
        relation = item.data.get("node_relation")
        if isinstance(relation, dict) and (relation.get("schema_name") or relation.get("database")):
            qualified.append(draft.name)
        drafts[draft.name] = draft
    if qualified:
        ctx.lose(
            f"semantic_models[{', '.join(qualified)}].node_relation",
            "schema_name/database dropped - lens models name the bare table "
            "(the warehouse connection picks database and schema)",
        )
    return drafts


def _unread_dbt_models(
    items: Mapping[str, list[Item]],
    drafts: Mapping[str, ModelDraft],
    legacy: set[str],
    ctx: Findings,
) -> None:
    """Report each documented dbt model no semantic model or metric is defined over."""
    for item in items["dbt_model"]:
        if item.name.lower() not in drafts and item.name not in legacy:
            used = any(ref_name(s.data.get("model")) == item.name for s in items["semantic_model"])
            if not used:
                ctx.lose(
                    f"models[{item.name}]",
                    "no semantic model or metric is defined over this dbt model; not imported",
                )


def _metrics(
    raw_metrics: Mapping[str, Mapping[str, object]], resolver: Resolver, ctx: Findings
) -> tuple[dict[str, Form], list[Metric]]:
    """Each metric the resolver can express: ``({name: form}, lens metrics)``."""
    forms: dict[str, Form] = {}
    metrics: list[Metric] = []
    for name, raw in raw_metrics.items():
        try:
            form = resolver.metric(name)
        except Unmappable as exc:
            ctx.lose(f"metrics[{name}]", f"{exc.reason}; not imported")
            continue
        if form.losses:
            ctx.lose(f"metrics[{name}]", "written without " + "; ".join(dict.fromkeys(form.losses)))
        forms[name] = form
        metrics.append(
            Metric(
                name=name,
                label=scalar_text(raw.get("label")).strip() or name.replace("_", " "),
                description=scalar_text(raw.get("description")).strip(),
                model=form.model,
                expression=form.expression.sql(dialect=DIALECT),
                filters=form.filters,
            )
        )
    return forms, metrics


def _seeds(
    tables: Mapping[str, SourceTable], read: set[str], files: dict[str, bytes], ctx: Findings
) -> dict[str, int]:
    """Add ``seeds/<table>.csv`` to ``files`` for each data table a model reads.

    Returns:
        ``{table: rows}`` of the seeds written.
    """
    seeds: dict[str, int] = {}
    for name, table in sorted(tables.items()):
        if name in read:
            files[f"seeds/{name}.csv"] = table.csv
            seeds[name] = table.rows
        else:
            ctx.note(f"{table.origin}: no model reads table {name}; not seeded")
    return seeds


def _data_tables(data: Mapping[str, bytes], ctx: Findings) -> dict[str, SourceTable]:
    tables: dict[str, SourceTable] = {}
    for path, content in data.items():
        stem = PurePosixPath(path).stem.lower()
        if path.lower().endswith(".csv"):
            text = content.decode("utf-8-sig", errors="replace")
            header, _, body = text.partition("\n")
            rows = sum(1 for line in body.splitlines() if line.strip())
            csv = (header.lower().rstrip("\r") + "\n" + body).encode("utf-8")
            table = SourceTable(stem, csv, rows, path)
        else:
            snap = table_snapshot(path, content)
            if snap is None:
                ctx.note(f"{path}: not a MetricFlow table_snapshot; ignored")
                continue
            table = snap
        if table.name in tables:
            ctx.lose(path, f"table {table.name} is already filled by {tables[table.name].origin}")
            continue
        tables[table.name] = table
    return tables


def _metric_sources(
    items: Mapping[str, list[Item]],
    ctx: Findings,
    measures: Mapping[str, MeasureDef],
    drafts: Mapping[str, ModelDraft],
) -> dict[str, Mapping[str, Any]]:
    """MetricFlow metrics by name, plus a simple metric for each ``create_metric`` measure."""
    raw: dict[str, Mapping[str, Any]] = {}
    for item in items["metric"]:
        name = item.name.lower()
        if not NAME_RE.match(name):
            raise item.fail("a metric needs a name that is an SQL identifier", "rename it", "name")
        if name in raw:
            ctx.lose(f"metrics[{name}]", "declared twice; the first is kept")
            continue
        where = f"metrics[{name}]"
        for key, value in item.data.items():
            if key not in _METRIC_KEYS and value not in (None, "", [], {}):
                ctx.lose(f"{where}.{key}", "not part of the lens format")
            elif key in ("config", "meta") and value:
                ctx.lose(f"{where}.{key}", _LOSSES[key])
        raw[name] = item.data
    for item in items["semantic_model"]:
        for measure in item.data.get("measures") or ():
            name = (
                scalar_text(measure.get("name")).strip().lower()
                if isinstance(measure, dict)
                else ""
            )
            if measure.get("create_metric") and name in measures and name not in raw:
                raw[name] = {"name": name, "type": "simple", "type_params": {"measure": name},
                             "description": scalar_text(measure.get("description"))}  # fmt: skip
    return raw


def _legacy(
    items: Mapping[str, list[Item]],
    docs: Mapping[str, str],
    drafts: dict[str, ModelDraft],
    measures: dict[str, MeasureDef],
    raw: dict[str, Mapping[str, Any]],
    ctx: Findings,
) -> set[str]:
    """Map legacy dbt_metrics metrics onto MetricFlow-shaped ones; returns the models they read."""
    documented = {i.name: i for i in items["dbt_model"]}
    by_model: dict[str, list[Item]] = {}
    for item in items["legacy_metric"]:
        name = item.name.lower()
        if not NAME_RE.match(name):
            raise item.fail("a metric needs a name that is an SQL identifier", "rename it", "name")
        model = ref_name(item.data.get("model"))
        by_model.setdefault(model or "", []).append(item)
    used: set[str] = set()
    for model, metrics in by_model.items():
        if model and model in documented and model.lower() not in drafts:
            times = {scalar_text(m.data.get("timestamp")).lower() for m in metrics} - {""}
            facts: set[str] = set()
            for m in metrics:
                try:
                    tree = guard.parse_expression(scalar_text(m.data.get("expression")), DIALECT)
                except UnsafeSqlError:
                    continue
                facts.update(c.name.lower() for c in tree.find_all(exp.Column))
            draft = legacy_model(documented[model], ctx, docs, times, facts - times)
            for column in sorted((times | facts) - draft.taken()):
                group = draft.time_dimensions if column in times else draft.facts
                group.append(Column(name=column, data_type="date" if column in times else "number"))
            draft.default_time = draft.default_time or next(iter(sorted(times)), None)
            drafts[draft.name] = draft
            used.add(model)
        elif model and model.lower() not in drafts:
            for m in metrics:
                ctx.lose(
                    f"metrics[{m.name}]",
                    f"model {model!r} is not documented in the project; not imported",
                )
            continue
        for m in metrics:
            _legacy_metric(m, model.lower(), measures, raw, ctx)
    return used


def _legacy_metric(
    item: Item,
    model: str,
    measures: dict[str, MeasureDef],
    raw: dict[str, Mapping[str, Any]],
    ctx: Findings,
) -> None:
    data, name = item.data, item.name.lower()
    where = f"metrics[{name}]"
    ctx.unknown_keys(data, _LEGACY_KEYS, where, _LOSSES)
    for key in ("time_grains", "window", "config", "meta"):
        if data.get(key):
            ctx.lose(f"{where}.{key}", _LOSSES[key])
    method = scalar_text(data.get("calculation_method")).strip().lower()
    filters = [
        " ".join(scalar_text(f.get(k)) for k in ("field", "operator", "value"))
        for f in data.get("filters") or ()
        if isinstance(f, dict)
    ]
    base = {"name": name, "description": data.get("description"), "label": data.get("label")}
    if method == "derived":
        expression = scalar_text(data.get("expression"))
        inputs = _METRIC_CALL.findall(expression)
        params = {
            "expr": _METRIC_CALL.sub(r"\1", expression),
            "metrics": [{"name": i} for i in dict.fromkeys(inputs)],
        }
        raw[name] = {**base, "type": "derived", "filter": filters, "type_params": params}
        return
    if method not in _LEGACY_AGGS or not model:
        reason = f"calculation_method {method!r} has no lens form" if model else "it names no model"
        ctx.lose(where, f"{reason}; not imported")
        return
    key = f"{name}__legacy"
    measures[key] = MeasureDef(key, model, scalar_text(data.get("expression")) or name, method)
    raw[name] = {**base, "type": "simple", "type_params": {"measure": key}, "filter": filters}


def _saved_queries(
    items: list[Item],
    forms: Mapping[str, Form],
    resolver: Resolver,
    drafts: Mapping[str, ModelDraft],
    ctx: Findings,
) -> list[Exemplar]:
    joins = {n: tuple(d.joins) for n, d in drafts.items()}
    tables = {n: d.table for n, d in drafts.items()}
    exemplars: list[Exemplar] = []
    for item in items:
        name = item.name.lower()
        where = f"saved_queries[{name}]"
        if not NAME_RE.match(name):
            ctx.lose(where, "a saved query needs an identifier name; not imported")
            continue
        ctx.unknown_keys(item.data, _SAVED_KEYS, where, _LOSSES)
        for key in ("exports", "config", "meta", "tags"):
            if item.data.get(key):
                ctx.lose(f"{where}.{key}", _LOSSES[key])
        try:
            exemplars.append(compile_saved_query(item.data, forms, resolver, joins, tables))
        except Unmappable as exc:
            ctx.lose(where, f"{exc.reason}; no exemplar written")
        except UnsafeSqlError as exc:
            ctx.lose(where, f"compiled SQL is refused ({exc.message}); no exemplar written")
    return exemplars


def _lens_yaml(lens: str, source_name: str) -> bytes:
    data = {
        "name": lens,
        "description": f"Imported from the dbt semantic layer {source_name!r}.",
        "eval_gate": "block",
        "dialect": DIALECT,
    }
    return dump_yaml(data, header=f"Imported from dbt {source_name} by `dst import dbt`.")


def _model_yaml(draft: ModelDraft) -> bytes:
    model = Model(
        name=draft.name,
        description=draft.description,
        table=draft.table,
        primary_key=draft.primary_key,
        dimensions=tuple(draft.dimensions),
        time_dimensions=tuple(draft.time_dimensions),
        facts=tuple(draft.facts),
        default_time_dimension=draft.default_time,
        joins=tuple(draft.joins),
    )
    data = model.model_dump(mode="json", exclude_defaults=True)
    if model.joins:  # spell the relationship out even where it is the default
        data["joins"] = [join.model_dump(mode="json") for join in model.joins]
    return dump_yaml(data)
