"""``dst seed``: build the embedded DuckDB warehouse (``.dst/``) from the lenses' seeds.

Each ``lenses/<L>/seeds/<t>.csv`` becomes table ``<t>`` in schema ``<L>``, a
repository-level ``seeds/`` folder loads into the default schema (DESIGN §2);
``--warehouse URL`` seeds that warehouse instead. Exit codes: 0 seeded; 2 bad
input (a seed that does not load, an unreachable warehouse).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt


def seed(
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            help="Seed this SQLAlchemy URL instead of the embedded DuckDB file; "
            "the tables the seeds name are replaced there.",
        ),
    ] = None,
) -> int:
    """Build the embedded DuckDB warehouse (.dst/) from every lens's seeds/*.csv."""
    # lazy: seeding loads SQLAlchemy and DuckDB; `dst --help` does not need them
    from reconciler.history import seed as do_seed

    result = do_seed(runtime(repo), url=warehouse)
    tables = {t.name: t.rows for t in result.tables}
    if fmt is Format.json:
        obj = {
            "schema_version": 1,
            "command": "seed",
            "warehouse": result.target,
            "tables": tables,
        }
        print(json.dumps(obj, indent=2))
    else:
        for table, rows in sorted(tables.items()):
            print(f"seeded {table}: {rows} rows")
        print(f"warehouse: {result.target}")
    return 0
