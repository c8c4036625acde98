"""Import a Snowflake Cortex Analyst semantic model as a lens.

Source format: the Cortex Analyst semantic model specification (Snowflake docs,
"Cortex Analyst semantic model specification" and "Verified Query Repository").
The mapping:

==============================  ==============================================
Cortex                          lens
==============================  ==============================================
model ``name``/``description``  ``lens.yaml`` description; ``eval_gate: block``
logical table                   ``models/<name lowercased>.yaml``, ``table`` =
                                ``base_table.table`` lowercased
dimensions / time_dimensions    model dimensions / time_dimensions, ``expr``
                                transpiled Snowflake → lens dialect
measures / facts                model facts, and ``metrics/<name>.yaml`` with
                                ``<default_aggregation>(<expr>)`` (SUM if absent)
table-level metrics             ``metrics/<name>.yaml`` over physical columns
relationships                   ``joins`` on the left table's model
verified_queries                ``answers/<slug of name>.yaml``, SQL compiled
                                once from logical to physical names
custom_instructions             ``skills/cortex_custom_instructions.md``
==============================  ==============================================

Names are lowercased (Snowflake folds unquoted identifiers to one case; DuckDB
matches them case-insensitively). Anything else the source declares is listed in
:attr:`~reconciler.interop.importers.ImportReport.unmapped` with the reason; verified
queries that cannot become active answers are written as drafts
(:mod:`reconciler.interop.importers.verified`). ``as_of`` is pinned when an answer
depends on the current date (:func:`~reconciler.interop.importers.verified.pin_as_of`).
With data, tables no seed creates, non-unique keys (dropped, with the joins through
them) and empty or relative-dated oracles are reported as
:attr:`~reconciler.interop.importers.ImportReport.problems` (:mod:`.checks`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from sqlglot import exp

from reconciler.errors import LensLoadError, UsageError
from reconciler.interop.importers import (
    Findings,
    ImportReport,
    LensSettings,
    OracleRunner,
    dump_yaml,
    scalar_text,
    write_lens,
    written_paths,
)
from reconciler.interop.importers.checks import oracles_through
from reconciler.interop.importers.cortex_seeds import check_data, seed_files
from reconciler.interop.importers.logical import (
    LogicalSqlError,
    LogicalTable,
    parse_column_expression,
)
from reconciler.interop.importers.verified import (
    SOURCE_DIALECT,
    VerifiedQuery,
    answer_yaml,
    check_oracles,
    draft_joins_through,
    pin_as_of,
    read_verified_queries,
)
from reconciler.lens import LENS_NAME_RE, Column, Join, Metric, Model, load_lens
from reconciler.loader import Document, load_yaml
from reconciler.schemas import with_schema_comment

__all__ = ["import_cortex", "write_lens"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Cortex default_aggregation → the aggregate applied to the fact's expression.
_AGGREGATIONS: dict[str, type[exp.AggFunc]] = {
    "sum": exp.Sum, "avg": exp.Avg, "mean": exp.Avg, "median": exp.Median,
    "min": exp.Min, "max": exp.Max, "count": exp.Count,
}  # fmt: skip
_TOP_KEYS = {"name", "description", "tables", "relationships", "verified_queries",
             "custom_instructions", "module_custom_instructions"}  # fmt: skip
_TABLE_KEYS = {"name", "description", "base_table", "primary_key", "dimensions",
               "time_dimensions", "measures", "facts", "metrics"}  # fmt: skip
_COLUMN_KEYS = {"name", "expr", "data_type", "description", "synonyms", "sample_values"}
_FACT_KEYS = _COLUMN_KEYS | {"default_aggregation"}
_METRIC_KEYS = {"name", "expr", "description", "synonyms"}
_RELATIONSHIP_KEYS = {"name", "left_table", "right_table", "relationship_columns",
                      "join_type", "relationship_type"}  # fmt: skip
_LOSSES = {
    "unique": "lens columns carry no uniqueness flag",
    "is_enum": "lens columns carry no enum flag (sample_values are kept)",
    "cortex_search_service_name": "dst has no Cortex Search; the column is kept without it",
    "cortex_search_service": "dst has no Cortex Search; the column is kept without it",
    "access_modifier": "lens columns have no access modifier; imported as an ordinary column",
    "synonyms": "lens models carry no synonyms (their columns and metrics do)",
    "filters": "lens models have no named filters",
    "metrics": "model-level (derived) metrics are not imported; table-level ones are",
}
_JOIN_KINDS: dict[str, Literal["many_to_one", "one_to_one", "one_to_many"]] = {
    "many_to_one": "many_to_one",
    "one_to_one": "one_to_one",
    "one_to_many": "one_to_many",
}


@dataclass
class _Table:
    """One Cortex logical table while it is mapped onto a model."""

    logical: str
    model: str
    table: str
    description: str
    primary_key: tuple[str, ...]
    groups: dict[str, list[Column]] = field(default_factory=dict)
    facts: list[tuple[Column, Mapping[str, Any]]] = field(default_factory=list)
    joins: list[Join] = field(default_factory=list)
    source_columns: dict[str, str] = field(default_factory=dict)

    def logical_table(self) -> LogicalTable:
        return LogicalTable(self.logical, self.table, dict(self.source_columns))


class _Ctx(Findings):
    """Findings plus the source document, for errors at a line."""

    def __init__(self, doc: Document) -> None:
        super().__init__()
        self.doc = doc

    def fail(self, at: tuple[str | int, ...], message: str, fix: str) -> LensLoadError:
        return LensLoadError(self.doc.path, message, line=self.doc.line_of(at), fix=fix)

    def extra_keys(self, data: Mapping[str, Any], known: set[str], where: str) -> None:
        self.unknown_keys(data, known, where, _LOSSES)


def import_cortex(
    model_yaml: bytes,
    *,
    model_path: str,
    lens: str,
    data_dir: Path | None,
    ddl: Sequence[bytes] = (),
    settings: LensSettings | None = None,
    run_oracles: OracleRunner | None = None,
) -> tuple[dict[str, bytes], ImportReport]:
    """Import a Cortex Analyst semantic model as a lens, writing nothing.

    Args:
        model_yaml: the semantic model file's bytes.
        model_path: its path, for messages and answer provenance
            (``source: cortex:<file name>``).
        lens: the lens name.
        data_dir: a directory of CSV files for ``seeds/`` (``None``: no seeds).
        ddl: SQL scripts whose ``CREATE TABLE`` statements give the physical
            column names and types the CSVs are mapped onto
            (:func:`~reconciler.interop.importers.seeds.build_seeds`).
        settings: the lens's ``as_of`` (by default derived from the verified
            queries, :func:`~reconciler.interop.importers.verified.pin_as_of`) and
            dialect (default ``duckdb``).
        run_oracles: executes the compiled oracles over the seeds; an oracle that
            fails or returns more than the row cap becomes a draft. ``None``
            compiles without executing (said in ``notes``).

    Returns:
        ``({lens-relative path: bytes}, report)``; the files load with
        :func:`reconciler.lens.load_lens`.

    Raises:
        UsageError: an invalid lens name or ``as_of``.
        LensLoadError: the model file is not YAML, or lacks what the
            specification requires (a ``tables`` list of named tables).
        InputError: a DDL script or CSV that cannot be read or mapped.

    Over 80 lines for this docstring and the import's steps read in order (validate,
    tables, relationships, metrics, seeds, verified queries, files, report); each
    step is its own function.
    """
    if not LENS_NAME_RE.match(lens):
        raise UsageError(
            f"lens name {lens!r} is not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_'",
        )
    settings = settings or LensSettings()
    as_of, dialect = settings.as_of, settings.dialect
    if as_of is not None and not _DATE_RE.match(as_of):
        raise UsageError(f"as_of {as_of!r} is not a date", fix="pass it as YYYY-MM-DD")
    ctx = _Ctx(load_yaml(model_path, model_yaml))
    root = ctx.doc.data
    if not isinstance(root, dict) or not isinstance(root.get("tables"), list):
        raise ctx.fail(
            ("tables",),
            "not a Cortex Analyst semantic model: no 'tables' list",
            "pass the semantic model YAML (name, tables, verified_queries)",
        )
    ctx.extra_keys(root, _TOP_KEYS, "model")
    source_name = PurePosixPath(model_path).name
    tables = _tables(ctx, root["tables"], dialect)
    _relationships(ctx, root.get("relationships"), tables)
    metrics = _metrics(ctx, root["tables"], tables, dialect)

    files, seed_rows = seed_files(ctx, tables, data_dir, ddl)
    logical = [t.logical_table() for t in tables.values()]
    queries = read_verified_queries(root.get("verified_queries"), logical, ctx, dialect=dialect)
    seeds = {table: files[f"seeds/{table}.csv"] for table in seed_rows}
    bad, day = check_data(ctx, tables, seeds, seed_rows, run_oracles, dialect=dialect)
    pinned = pin_as_of(queries, as_of, ctx, data_day=day)
    check_oracles(queries, pinned, seeds, run_oracles, ctx, dialect=dialect)
    through = oracles_through([(q.id, q.source_sql) for q in queries], bad, dialect=SOURCE_DIALECT)
    draft_joins_through(queries, through, ctx)

    files["lens.yaml"] = _lens_yaml(lens, root, source_name, dialect, pinned)
    files.update(_asset_files(tables, metrics, queries, source_name))
    skill = _instructions(ctx, root, source_name)
    if skill:
        files["skills/cortex_custom_instructions.md"] = skill.encode("utf-8")

    # Editors that read the modeline validate each file against schemas/ as it is typed.
    files = {rel: with_schema_comment(rel, data) for rel, data in files.items()}
    load_lens(lens, files)  # the importer's own contract: what it returns loads
    drafts = _report_drafts(ctx, queries)
    report = ImportReport(
        lens=lens,
        written=written_paths(lens, files),
        models=len(tables),
        metrics=len(metrics),
        answers=len(queries),
        seeds=seed_rows,
        unmapped=tuple(ctx.unmapped),
        drafts=len(drafts),
        as_of=pinned,
        notes=tuple(ctx.notes),
        problems=tuple(ctx.problems),
    )
    return files, report


def _asset_files(
    tables: Mapping[str, _Table],
    metrics: Sequence[Metric],
    queries: Sequence[VerifiedQuery],
    source_name: str,
) -> dict[str, bytes]:
    """``{models/…, metrics/…, answers/…: YAML bytes}`` of the mapped model."""
    files = {f"models/{table.model}.yaml": _model_yaml(table) for table in tables.values()}
    for metric in metrics:
        files[f"metrics/{metric.name}.yaml"] = dump_yaml(
            metric.model_dump(mode="json", exclude_defaults=True)
        )
    for query in queries:
        files[f"answers/{query.id}.yaml"] = answer_yaml(query, source_name)
    return files


def _report_drafts(ctx: _Ctx, queries: Sequence[VerifiedQuery]) -> list[VerifiedQuery]:
    """The verified queries written as drafts, each recorded in ``ctx`` with its problems."""
    drafts = [q for q in queries if q.problems]
    for query in drafts:
        ctx.lose(
            f"verified_queries[{query.name!r}]",
            f"written as draft answers/{query.id}.yaml - {'; '.join(query.problems)}",
        )
    return drafts


def _texts(value: Any) -> tuple[tuple[str, ...], int]:
    """Non-blank texts of a list, and how many blank ones were dropped."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    texts = [scalar_text(v).strip() for v in items]
    kept = tuple(t for t in texts if t)
    return kept, len(texts) - len(kept)


def _tables(ctx: _Ctx, raw: list[Any], dialect: str) -> dict[str, _Table]:
    tables: dict[str, _Table] = {}
    qualifiers: dict[str, list[str]] = {}
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not _NAME_RE.match(scalar_text(entry.get("name"))):
            raise ctx.fail(
                ("tables", i),
                "a logical table needs a name that is an SQL identifier",
                "give every entry of tables a name like orders",
            )
        logical = scalar_text(entry["name"])
        where = f"tables[{logical}]"
        ctx.extra_keys(entry, _TABLE_KEYS, where)
        base = entry.get("base_table")
        base = base if isinstance(base, dict) else {}
        physical = scalar_text(base.get("table")).strip()
        if not physical:
            ctx.lose(where, "no base_table.table; the table is not imported")
            continue
        qualifier = ".".join(scalar_text(base[k]) for k in ("database", "schema") if base.get(k))
        if qualifier:
            qualifiers.setdefault(qualifier, []).append(logical)
        if logical.lower() in tables:
            raise ctx.fail(
                ("tables", i, "name"),
                f"logical table {logical!r} is declared twice",
                "rename one of the tables",
            )
        pk = entry.get("primary_key")
        pk_columns = pk.get("columns") if isinstance(pk, dict) else None
        table = _Table(
            logical,
            logical.lower(),
            physical.lower(),
            scalar_text(entry.get("description")).strip(),
            tuple(scalar_text(c).lower() for c in pk_columns or ()),
        )
        blanks = sum(_table_columns(ctx, entry, table, where, dialect))
        if blanks:
            ctx.lose(
                where,
                f"{blanks} blank synonyms/sample_values dropped "
                "(whitespace-only text says nothing)",
            )
        tables[table.model] = table
    for qualifier, names in qualifiers.items():
        ctx.lose(
            f"tables[{', '.join(names)}].base_table",
            f"database/schema {qualifier} dropped - lens models name the bare table "
            "(the warehouse connection picks database and schema)",
        )
    return tables


def _table_columns(
    ctx: _Ctx, entry: Mapping[str, Any], table: _Table, where: str, dialect: str
) -> list[int]:
    """Map a table's column groups onto ``table``; returns blank-text counts."""
    blanks: list[int] = []
    for group in ("dimensions", "time_dimensions", "measures", "facts"):
        is_fact = group in ("measures", "facts")
        for j, raw in enumerate(entry.get(group) or ()):
            column, dropped = _column(ctx, raw, f"{where}.{group}", j, is_fact, dialect)
            blanks.append(dropped)
            if column is None:
                continue
            if column.name in table.source_columns:
                ctx.lose(
                    f"{where}.{group}[{column.name}]",
                    "a column of that name is already declared; the first one is kept",
                )
                continue
            table.source_columns[column.name] = scalar_text(raw.get("expr")) or column.name
            target = "facts" if is_fact else group
            table.groups.setdefault(target, []).append(column)
            if is_fact:
                table.facts.append((column, raw))
    return blanks


def _column(
    ctx: _Ctx, raw: Any, group: str, index: int, is_fact: bool, dialect: str
) -> tuple[Column | None, int]:
    if not isinstance(raw, dict) or not _NAME_RE.match(scalar_text(raw.get("name"))):
        ctx.lose(
            f"{group}[{index}]", "a column needs a name that is an SQL identifier; not imported"
        )
        return None, 0
    where = f"{group}[{raw['name']}]"
    ctx.extra_keys(raw, _FACT_KEYS if is_fact else _COLUMN_KEYS, where)
    name = scalar_text(raw["name"]).lower()
    source_expr = scalar_text(raw.get("expr")).strip() or name
    try:
        expr = parse_column_expression(source_expr, SOURCE_DIALECT).sql(dialect=dialect)
    except LogicalSqlError as exc:
        ctx.lose(where, f"expr {source_expr!r} does not parse ({exc.message}); not imported")
        return None, 0
    synonyms, blank_synonyms = _texts(raw.get("synonyms"))
    samples, blank_samples = _texts(raw.get("sample_values"))
    column = Column(
        name=name,
        expr=None if expr == name else expr,
        data_type=scalar_text(raw.get("data_type")).strip() or "string",
        description=scalar_text(raw.get("description")).strip(),
        synonyms=synonyms,
        sample_values=samples,
    )
    return column, blank_synonyms + blank_samples


def _relationships(ctx: _Ctx, raw: Any, tables: dict[str, _Table]) -> None:
    for i, rel in enumerate(raw or ()):
        if not isinstance(rel, dict):
            ctx.lose(f"relationships[{i}]", "not a mapping; ignored")
            continue
        where = f"relationships[{scalar_text(rel.get('name')) or i}]"
        ctx.extra_keys(rel, _RELATIONSHIP_KEYS, where)
        left = tables.get(scalar_text(rel.get("left_table")).lower())
        right = tables.get(scalar_text(rel.get("right_table")).lower())
        kind_text = scalar_text(rel.get("relationship_type")).strip().lower() or "many_to_one"
        kind = _JOIN_KINDS.get(kind_text)
        on = {
            scalar_text(p.get("left_column")).lower(): scalar_text(p.get("right_column")).lower()
            for p in rel.get("relationship_columns") or ()
            if isinstance(p, dict)
        }
        if left is None or right is None:
            ctx.lose(where, "joins a table that was not imported; no join written")
            continue
        if kind is None or not on:
            ctx.lose(
                where,
                f"relationship_type {kind_text!r} (or no relationship_columns) cannot "
                "be a lens join; no join written",
            )
            continue
        left.joins.append(Join(to=right.model, relationship=kind, on=on))
        lost = ["the relationship name"]
        if rel.get("join_type"):
            lost.insert(0, f"join_type {scalar_text(rel['join_type'])!r}")
        ctx.lose(
            where,
            f"{' and '.join(lost)} not kept - lens joins carry neither "
            f"(the join itself is in models/{left.model}.yaml)",
        )


def _metrics(ctx: _Ctx, raw: list[Any], tables: dict[str, _Table], dialect: str) -> list[Metric]:
    metrics: list[Metric] = []
    taken: set[str] = set()
    summed: list[str] = []

    def claim(metric: Metric, where: str) -> None:
        for name in (metric.name, f"{metric.model}_{metric.name}"):
            if name not in taken:
                taken.add(name)
                metrics.append(metric.model_copy(update={"name": name}))
                return
        ctx.lose(where, f"metric name {metric.name!r} is taken twice over; no metric written")

    for table in tables.values():
        for column, source in table.facts:
            where = f"tables[{table.logical}].facts[{source.get('name')}]"
            agg = scalar_text(source.get("default_aggregation")).strip().lower()
            if not agg and not _is_numeric(column.data_type):
                ctx.lose(
                    where,
                    f"no default_aggregation for {column.data_type} data; "
                    "kept as a model fact, no metric written",
                )
                continue
            expression = _aggregate(column.sql, agg or "sum", dialect)
            if expression is None:
                ctx.lose(where, f"default_aggregation {agg!r} is unknown; no metric written")
                continue
            if not agg:
                summed.append(column.name)
            claim(
                Metric(
                    name=column.name,
                    label=scalar_text(source.get("name")).replace("_", " "),
                    description=column.description,
                    synonyms=column.synonyms,
                    model=table.model,
                    expression=expression,
                ),
                where,
            )
    for entry in raw:
        owner = tables.get(scalar_text(entry.get("name")).lower())  # _tables checked entry
        if owner is None:
            continue
        for j, source in enumerate(entry.get("metrics") or ()):
            where = f"tables[{owner.logical}].metrics[{j}]"
            metric = _table_metric(ctx, source, owner, where, dialect)
            if metric is not None:
                claim(metric, where)
    if summed:
        ctx.note(
            f"metrics of numeric facts without default_aggregation use SUM: {', '.join(summed)}"
        )
    return metrics


def _table_metric(ctx: _Ctx, raw: Any, table: _Table, where: str, dialect: str) -> Metric | None:
    """A table-level Cortex metric, its logical column names replaced by their expressions."""
    if not isinstance(raw, dict) or not _NAME_RE.match(scalar_text(raw.get("name"))):
        ctx.lose(where, "a metric needs a name that is an SQL identifier; not imported")
        return None
    ctx.unknown_keys(raw, _METRIC_KEYS, where, _LOSSES)
    try:
        tree = parse_column_expression(scalar_text(raw.get("expr")), SOURCE_DIALECT)
        columns = {
            name: parse_column_expression(sql, SOURCE_DIALECT)
            for name, sql in table.source_columns.items()
        }
    except LogicalSqlError as exc:
        ctx.lose(where, f"expr does not parse ({exc.message}); not imported")
        return None

    def physical(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in columns:
            return exp.paren(columns[node.name].copy(), copy=False)
        return node

    synonyms, _ = _texts(raw.get("synonyms"))
    return Metric(
        name=scalar_text(raw["name"]).lower(),
        label=scalar_text(raw["name"]).replace("_", " "),
        description=scalar_text(raw.get("description")).strip(),
        synonyms=synonyms,
        model=table.model,
        expression=tree.transform(physical).sql(dialect=dialect),
    )


def _is_numeric(data_type: str) -> bool:
    try:
        built = exp.DataType.build(data_type, dialect=SOURCE_DIALECT)
    except Exception:  # an unknown type name is simply not known to be numeric
        return False
    return built.is_type(*exp.DataType.NUMERIC_TYPES)


def _aggregate(sql: str, agg: str, dialect: str) -> str | None:
    operand = parse_column_expression(sql, dialect)
    if agg == "count_distinct":
        return exp.Count(this=exp.Distinct(expressions=[operand])).sql(dialect=dialect)
    func = _AGGREGATIONS.get(agg)
    return None if func is None else func(this=operand).sql(dialect=dialect)


def _lens_yaml(
    lens: str, root: Mapping[str, Any], source_name: str, dialect: str, as_of: str | None
) -> bytes:
    title = scalar_text(root.get("name")) or source_name
    origin = f"Imported from the Cortex Analyst semantic model {title!r} ({source_name})."
    description = scalar_text(root.get("description")).strip()
    data: dict[str, Any] = {
        "name": lens,
        "description": f"{description}\n{origin}" if description else origin,
        "eval_gate": "block",
        "dialect": dialect,
    }
    header = f"Imported from Cortex Analyst {source_name} by `dst import cortex`."
    if as_of is not None:
        data["as_of"] = as_of
        header += (
            "\nas_of fixes the day relative-date answers are evaluated on: unless the import"
            "\nwas given one, the day the latest of them was verified by a human."
        )
    return dump_yaml(data, header=header)


def _model_yaml(table: _Table) -> bytes:
    model = Model(
        name=table.model,
        description=table.description,
        table=table.table,
        primary_key=table.primary_key,
        dimensions=tuple(table.groups.get("dimensions", ())),
        time_dimensions=tuple(table.groups.get("time_dimensions", ())),
        facts=tuple(table.groups.get("facts", ())),
        joins=tuple(table.joins),
    )
    data = model.model_dump(mode="json", exclude_defaults=True)
    if model.joins:  # spell the relationship out even where it is the default
        data["joins"] = [join.model_dump(mode="json") for join in model.joins]
    return dump_yaml(data)


def _instructions(ctx: _Ctx, root: Mapping[str, Any], source_name: str) -> str:
    parts: list[str] = []
    general = scalar_text(root.get("custom_instructions")).strip()
    if general:
        parts.append(general)
    module = root.get("module_custom_instructions")
    if isinstance(module, dict):
        for key, value in module.items():
            if key == "sql_generation" and scalar_text(value).strip():
                parts.append(scalar_text(value).strip())
            else:
                ctx.lose(
                    f"model.module_custom_instructions.{key}",
                    "only sql_generation instructions feed the lens's generation",
                )
    if not parts:
        return ""
    body = "\n\n".join(parts)
    return f"# Custom instructions\n\nImported from Cortex Analyst {source_name}.\n\n{body}\n"
