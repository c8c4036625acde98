"""Checks an import runs against the data it was given (``--data``), for every importer.

A source semantic layer states things about its data that the sample data may
contradict, and a lens that believes them gives confident wrong answers:

* a model's ``table`` that no seed creates (every query of it fails);
* a declared primary key with fewer distinct values than rows: as the "one"
  side of a many-to-one join it fans every row out;
* an oracle that joins on such a key (its certified result is fanned out too).

Each finding is an :class:`~reconciler.interop.importers.ImportProblem`; a
non-unique key is dropped from the model together with every join that would
use it (or any non-unique column set) as its "one" side. Uniqueness is counted
by the import's :data:`~reconciler.interop.importers.OracleRunner` over the seeds
(:mod:`reconciler.interop.keys` builds the queries), so the pure core stays free
of engines.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from reconciler.errors import UnsafeSqlError
from reconciler.interop.importers import (
    Findings,
    ImportProblem,
    OracleRunner,
    ProblemKind,
)
from reconciler.interop.importers.logical import parse_sql
from reconciler.interop.keys import distinct_keys_sql, duplicated_sql
from reconciler.lens import MAX_ROW_CAP, Join

_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")

KeySet = tuple[str, tuple[str, ...]]
"""``(model, key columns)``: a set of a model's columns that should be unique."""


@dataclass
class KeyedModel:
    """A model as the key checks see it; the checks rewrite ``primary_key`` and ``joins``.

    Attributes:
        model: the model's name (``models/<model>.yaml``).
        table: its physical table.
        primary_key: its declared key columns (model column names).
        joins: its joins (``on``: ``{this model's column: the other model's column}``).
        columns: ``{model column: SQL over the table, lens dialect}``; a key
            column missing here is read as the physical column of its name.
    """

    model: str
    table: str
    primary_key: tuple[str, ...]
    joins: list[Join] = field(default_factory=list)
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Count:
    distinct: int | None  # None: at least MAX_ROW_CAP
    rows: int

    def text(self) -> str:
        distinct = f"at least {MAX_ROW_CAP}" if self.distinct is None else str(self.distinct)
        return f"{distinct} distinct values over {self.rows} rows"


def tables_not_held(
    tables: Mapping[str, str], seeded: Mapping[str, int], findings: Findings, source: str
) -> None:
    """Report every model whose table no seed creates.

    Args:
        tables: ``{model: physical table}``.
        seeded: ``{table: rows}`` of the seeds the import writes.
        findings: where the problems go.
        source: what the seeds came from, for the message (``the data directory``).
    """
    for model, table in sorted(tables.items()):
        if table not in seeded:
            findings.problem(
                ImportProblem(
                    ProblemKind.TABLE_NOT_HELD,
                    f"models/{model}.yaml reads table {table}, which no seed from {source} "
                    "creates: add its CSV (named after the table), or correct the model's table",
                    model=model,
                    table=table,
                )
            )


def _one_sides(model: KeyedModel) -> list[KeySet]:
    """The column sets a model's joins rely on being unique (their "one" sides)."""
    sides: list[KeySet] = []
    for join in model.joins:
        if join.relationship in ("many_to_one", "one_to_one"):
            sides.append((join.to, tuple(join.on.values())))
        if join.relationship in ("one_to_many", "one_to_one"):
            sides.append((model.model, tuple(join.on.keys())))
    return sides


def check_keys(
    models: Sequence[KeyedModel],
    seeds: Mapping[str, bytes],
    seed_rows: Mapping[str, int],
    runner: OracleRunner | None,
    findings: Findings,
    *,
    dialect: str,
) -> dict[str, list[frozenset[str]]]:
    """Count distinct values of every primary key and join "one" side over the seeds.

    A non-unique primary key is removed from its model; a join whose "one" side
    is not unique is removed from its model; each is reported as a problem.
    Keys of tables without a seed are not checked (noted).

    Returns:
        ``{model: [column sets found not unique]}``, for checking oracles.
    """
    by_name = {m.model: m for m in models}
    wanted: list[KeySet] = []
    for model in models:
        for key in ([(model.model, model.primary_key)] if model.primary_key else []) + _one_sides(
            model
        ):
            owner = by_name.get(key[0])
            if owner is not None and owner.table in seeds and key not in wanted:
                wanted.append(key)
    if not wanted:
        return {}
    if runner is None:
        findings.note(f"{len(wanted)} declared keys not checked: no oracle runner was given")
        return {}
    counts = _count(wanted, by_name, seeds, seed_rows, runner, findings, dialect)
    _drop(models, counts, findings)
    bad: dict[str, list[frozenset[str]]] = {}
    for name, columns in counts:
        bad.setdefault(name, []).append(frozenset(columns))
    return bad


def _count(
    wanted: Sequence[KeySet],
    by_name: Mapping[str, KeyedModel],
    seeds: Mapping[str, bytes],
    seed_rows: Mapping[str, int],
    runner: OracleRunner,
    findings: Findings,
    dialect: str,
) -> dict[KeySet, _Count]:
    """``{key set: its count}`` of the key sets that are not unique."""
    queries: list[str] = []
    for model, columns in wanted:
        owner = by_name[model]
        sql = [owner.columns.get(c, c) for c in columns]
        try:
            queries += [
                distinct_keys_sql(owner.table, sql, dialect=dialect),
                duplicated_sql(owner.table, sql, dialect=dialect),
            ]
        except UnsafeSqlError as exc:  # a column expression the guard refuses: no query
            findings.note(f"key {', '.join(columns)} of models/{model}.yaml not checked: {exc}")
            queries += ["SELECT 1 WHERE FALSE", "SELECT 1 WHERE FALSE"]
    runs = list(runner(seeds, queries))
    counts: dict[KeySet, _Count] = {}
    for index, key in enumerate(wanted):
        distinct, duplicated = runs[2 * index], runs[2 * index + 1]
        error = distinct.error or duplicated.error
        if error is not None:
            first = (error.strip().splitlines() or ["error"])[0]
            findings.note(f"key {', '.join(key[1])} of models/{key[0]}.yaml not checked: {first}")
        elif duplicated.rows:
            n = distinct.rows if distinct.rows is not None and distinct.rows < MAX_ROW_CAP else None
            counts[key] = _Count(n, seed_rows.get(by_name[key[0]].table, 0))
    return counts


def _drop(
    models: Sequence[KeyedModel], counts: Mapping[KeySet, _Count], findings: Findings
) -> None:
    tables = {m.model: m.table for m in models}
    for model in models:
        count = counts.get((model.model, model.primary_key))
        if model.primary_key and count is not None:
            findings.problem(
                ImportProblem(
                    ProblemKind.NON_UNIQUE_KEY,
                    f"primary key {', '.join(model.primary_key)} of model {model.model} has "
                    f"{count.text()} of table {model.table}; primary_key not written to "
                    f"models/{model.model}.yaml (a join through it would fan out)",
                    model=model.model,
                    table=model.table,
                )
            )
            model.primary_key = ()
        kept: list[Join] = []
        for join in model.joins:
            side = next((k for k in _one_sides(_alone(model, join)) if k in counts), None)
            if side is None:
                kept.append(join)
                continue
            on = ", ".join(f"{a} = {join.to}.{b}" for a, b in join.on.items())
            findings.problem(
                ImportProblem(
                    ProblemKind.JOIN_DROPPED,
                    f"join of models/{model.model}.yaml to {join.to} ({join.relationship} on "
                    f"{on}) not written: {', '.join(side[1])} of model {side[0]} has "
                    f"{counts[side].text()}, so it cannot be the join's one side",
                    model=model.model,
                    table=tables.get(side[0]),
                )
            )
        model.joins = kept


def _alone(model: KeyedModel, join: Join) -> KeyedModel:
    return KeyedModel(model.model, model.table, (), [join], model.columns)


def oracles_through(
    queries: Sequence[tuple[str, str]],
    bad: Mapping[str, Sequence[frozenset[str]]],
    *,
    dialect: str,
) -> dict[str, str]:
    """Which queries join a table on columns found not unique.

    Args:
        queries: ``(answer id, SQL)``; the SQL names tables by model name (a
            leading ``__`` is ignored, as Cortex writes logical tables).
        bad: :func:`check_keys`'s result.
        dialect: the SQL's dialect.

    Returns:
        ``{answer id: "table on columns"}`` for each query that joins so.
    """
    found: dict[str, str] = {}
    if not bad:
        return found
    for answer, sql in queries:
        tree = parse_sql(sql, dialect)
        if tree is None:
            continue
        hit = _join_through(tree, bad)
        if hit is not None:
            found[answer] = hit
    return found


def _join_through(tree: exp.Expr, bad: Mapping[str, Sequence[frozenset[str]]]) -> str | None:
    aliases: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        name = table.name.lower().removeprefix("__")
        aliases[(table.alias_or_name or table.name).lower()] = name
        aliases[table.name.lower()] = name
    for join in tree.find_all(exp.Join):
        used: dict[str, set[str]] = {}
        target = join.this
        using = join.args.get("using") or []
        if isinstance(target, exp.Table) and using:
            used[aliases.get(target.alias_or_name.lower(), "")] = {
                (c.name if isinstance(c, exp.Expr) else str(c)).lower() for c in using
            }
        on = join.args.get("on")
        for eq in on.find_all(exp.EQ) if isinstance(on, exp.Expr) else ():
            for column in (eq.this, eq.expression):
                if isinstance(column, exp.Column) and column.table:
                    model = aliases.get(column.table.lower(), "")
                    used.setdefault(model, set()).add(column.name.lower())
        for model, columns in used.items():
            if any(columns and columns <= key for key in bad.get(model, ())):
                return f"{model} on {', '.join(sorted(columns))}"
    return None


def data_day(
    time_columns: Mapping[str, Sequence[str]], seeds: Mapping[str, bytes]
) -> tuple[str, str] | None:
    """The latest calendar day the seeds hold in any time column.

    Args:
        time_columns: ``{table: physical column names of its time dimensions}``.
        seeds: ``{table: CSV bytes}`` (header of physical column names first).

    Returns:
        ``(YYYY-MM-DD, "table.column")`` of the latest day, or ``None`` when no
        time column holds a date.
    """
    latest: tuple[str, str] | None = None
    for table, columns in sorted(time_columns.items()):
        if table not in seeds or not columns:
            continue
        reader = csv.reader(io.StringIO(seeds[table].decode("utf-8"), newline=""))
        header = [h.strip().lower() for h in next(reader, [])]
        indexes = {c: header.index(c) for c in columns if c in header}
        for row in reader:
            for column, index in indexes.items():
                match = _DAY.match(row[index]) if index < len(row) else None
                if match and (latest is None or match.group(1) > latest[0]):
                    latest = (match.group(1), f"{table}.{column}")
    return latest
