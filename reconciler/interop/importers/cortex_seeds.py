"""Seeds for an imported Cortex Analyst model: its CSVs mapped onto the models' tables.

A Cortex model names physical tables; ``--data DIR`` supplies CSVs (DDL scripts
give their column names and types, load scripts which CSV fills which table).
This module turns them into the lens's ``seeds/<table>.csv``, reports a table no
CSV fills and a model column whose seed lacks the physical column it reads, and
runs the data checks of :mod:`reconciler.interop.importers.checks` on the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from sqlglot import exp

from reconciler.interop.importers import Findings, OracleRunner
from reconciler.interop.importers.checks import KeyedModel, check_keys, data_day, tables_not_held
from reconciler.interop.importers.logical import parse_column_expression
from reconciler.interop.importers.seeds import build_seeds, parse_ddl, parse_loads
from reconciler.interop.importers.verified import SOURCE_DIALECT
from reconciler.lens import Column, Join


class SeededTable(Protocol):
    """What seeding needs of a mapped Cortex table."""

    @property
    def model(self) -> str:
        """The model's name (``models/<model>.yaml``)."""

    @property
    def table(self) -> str:
        """The physical table a seed fills."""

    @property
    def source_columns(self) -> Mapping[str, str]:
        """``{model column: the physical SQL it reads}``."""


class CheckedTable(SeededTable, Protocol):
    """What the data checks need of a mapped Cortex table; they rewrite key and joins."""

    primary_key: tuple[str, ...]
    joins: list[Join]
    groups: dict[str, list[Column]]


def seed_files(
    findings: Findings,
    tables: Mapping[str, SeededTable],
    data_dir: Path | None,
    ddl: Sequence[bytes],
) -> tuple[dict[str, bytes], dict[str, int]]:
    """``({seeds/<table>.csv: bytes}, {table: rows})`` built from ``data_dir``'s CSVs.

    Nothing when ``data_dir`` is ``None``; what cannot be mapped is recorded in ``findings``.

    Raises:
        InputError: a DDL script or CSV that cannot be read or mapped.
    """
    files: dict[str, bytes] = {}
    seed_rows: dict[str, int] = {}
    if data_dir is None:
        return files, seed_rows
    wanted = {t.table: _physical_columns(t) for t in tables.values()}
    aliases = {m: t.table for m, t in tables.items()}
    plan = build_seeds(data_dir, parse_ddl(ddl), aliases, loads=parse_loads(ddl), wanted=wanted)
    findings.unmapped.extend(plan.unmapped)
    findings.notes.extend(plan.notes)
    for seed in plan.tables.values():
        files[f"seeds/{seed.table}.csv"] = seed.csv
        seed_rows[seed.table] = seed.rows
    held = {m: t.table for m, t in tables.items()}
    tables_not_held(held, seed_rows, findings, f"the data directory {data_dir.name}/")
    _check_seed_columns(findings, tables, {t: s.csv for t, s in plan.tables.items()})
    return files, seed_rows


def _physical_columns(table: SeededTable) -> set[str]:
    wanted: set[str] = set()
    for sql in table.source_columns.values():
        tree = parse_column_expression(sql, SOURCE_DIALECT)
        wanted.update(col.name for col in tree.find_all(exp.Column))
    return wanted


def check_data(
    findings: Findings,
    tables: Mapping[str, CheckedTable],
    seeds: Mapping[str, bytes],
    seed_rows: Mapping[str, int],
    runner: OracleRunner | None,
    *,
    dialect: str,
) -> tuple[dict[str, list[frozenset[str]]], tuple[str, str] | None]:
    """Check declared keys over the seeds and find the data's latest day.

    A non-unique primary key is removed from its table, and so is every join
    whose "one" side is not unique (:func:`~reconciler.interop.importers.checks.check_keys`).

    Returns:
        ``({model: [non-unique column sets]}, (latest day, "table.column") or None)``.
    """
    keyed = [
        KeyedModel(
            t.model,
            t.table,
            t.primary_key,
            list(t.joins),
            {c.name: c.sql for group in t.groups.values() for c in group},
        )
        for t in tables.values()
    ]
    bad = check_keys(keyed, seeds, seed_rows, runner, findings, dialect=dialect)
    for checked in keyed:
        table = tables[checked.model]
        table.primary_key = checked.primary_key
        table.joins[:] = checked.joins
    times = {
        t.table: [c.sql for c in t.groups.get("time_dimensions", ()) if c.sql.isidentifier()]
        for t in tables.values()
    }
    return bad, data_day(times, seeds)


def _check_seed_columns(
    findings: Findings, tables: Mapping[str, SeededTable], seeds: Mapping[str, bytes]
) -> None:
    """Report model columns that read a physical column its seed CSV lacks.

    Without DDL a CSV header is taken at its word, and COPY-style loaders ignore
    headers, so a header that does not name the physical columns shows up here.
    """
    for table in tables.values():
        if table.table not in seeds:
            continue
        first_line = seeds[table.table].split(b"\n", 1)[0].decode("utf-8")
        header = {name.strip().lower() for name in first_line.split(",")}
        absent = sorted(_physical_columns(table) - header)
        if absent:
            findings.lose(
                f"seeds/{table.table}.csv",
                f"has no column {', '.join(absent)}, which models/{table.model}.yaml reads; "
                "pass the table's DDL so CSV columns are named by position",
            )
