"""Seeds for an imported Cortex Analyst model: its CSVs mapped onto the models' tables.

A Cortex model names physical tables; ``--data DIR`` supplies CSVs (and DDL
scripts give their column names and types). This module turns them into the
lens's ``seeds/<table>.csv`` and reports, as findings, a table no CSV fills and a
model column whose seed lacks the physical column it reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from sqlglot import exp

from reconciler.interop.importers import Findings
from reconciler.interop.importers.logical import parse_column_expression
from reconciler.interop.importers.seeds import build_seeds, parse_ddl
from reconciler.interop.importers.verified import SOURCE_DIALECT


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
    plan = build_seeds(data_dir, parse_ddl(ddl), {m: t.table for m, t in tables.items()})
    findings.unmapped.extend(plan.unmapped)
    findings.notes.extend(plan.notes)
    for seed in plan.tables.values():
        files[f"seeds/{seed.table}.csv"] = seed.csv
        seed_rows[seed.table] = seed.rows
    for missing in sorted({t.table for t in tables.values()} - set(plan.tables)):
        findings.note(f"no CSV in the data directory fills table {missing}")
    _check_seed_columns(findings, tables, {t: s.csv for t, s in plan.tables.items()})
    return files, seed_rows


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
        wanted: set[str] = set()
        for sql in table.source_columns.values():
            tree = parse_column_expression(sql, SOURCE_DIALECT)
            wanted.update(col.name for col in tree.find_all(exp.Column))
        absent = sorted(wanted - header)
        if absent:
            findings.lose(
                f"seeds/{table.table}.csv",
                f"has no column {', '.join(absent)}, which models/{table.model}.yaml reads; "
                "pass the table's DDL so CSV columns are named by position",
            )
