"""``dst seed``: build the embedded DuckDB warehouse (``.dst/``) from the lenses' seeds.

Each ``lenses/<L>/seeds/<t>.csv`` becomes table ``<t>`` in schema ``<L>``, a
repository-level ``seeds/`` folder loads into the default schema (DESIGN §2);
``--warehouse URL`` seeds that warehouse instead (a schema per lens, created in the
same transaction as the tables); ``--env E`` seeds the warehouse ``dst.yaml`` names for
environment ``E`` (its own ``warehouse:``, never ``DST_WAREHOUSE_URL``), as a CI job
does for an environment whose warehouse is a DuckDB file; without one it is a bare
``dst seed``.

A bare ``dst seed`` never writes into a configured warehouse, which may be
production: when every lens reads another warehouse (``DST_WAREHOUSE_URL``, a
lens's ``warehouse:``, ``dst.yaml``) it builds nothing and says how to seed that
one; when only some do, it builds the embedded file for the rest and names the
others on stderr.

Exit codes: 0 seeded; 2 bad input (a seed that does not load, an unreachable
warehouse, or a bare ``dst seed`` where no lens reads the embedded warehouse).
``--format json`` prints ``{"schema_version": 1, "command": "seed", "warehouse",
"tables": {"<schema>.<table>": rows}, "schemas": [...], "databases": [...] (MariaDB/MySQL
only: the database of each lens schema), "not_seeded": [{"warehouse",
"source", "lenses"}]}``; a table of the default schema has no ``<schema>.`` prefix.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.errors import UsageError


def _lenses(names: tuple[str, ...]) -> str:
    if not names:
        return "the repository"
    return ("lens " if len(names) == 1 else "lenses ") + ", ".join(names)


def _refuse(others: list[Any]) -> UsageError:
    where = "; ".join(f"{o.url} ({o.source}) for {_lenses(o.lenses)}" for o in others)
    return UsageError(
        f"dst seed builds only the embedded warehouse, and no lens reads it: {where}. "
        "Nothing was seeded; a configured warehouse is never written implicitly",
        fix="load the seeds there explicitly with `dst seed --warehouse URL` (a schema per "
        "lens; it replaces the tables the seeds name), or make sure that warehouse already "
        "holds the tables",
    )


def _environment_url(rt: Any, env: str) -> str | None:
    """Environment ``env``'s own ``warehouse:`` (variables expanded, a relative DuckDB file
    anchored at the repository root); ``None`` when it has none, so a bare seed follows."""
    # lazy: URL resolution loads SQLAlchemy
    from reconciler.warehouse.connection import resolve_url

    config = rt.environment_config()  # exit 2 naming the environments there are
    if config is None or config.warehouse is None:
        return None
    label = f"environment {env} warehouse:"
    url, _ = resolve_url(
        None,
        {**rt.env, "DST_WAREHOUSE_URL": ""},
        None,
        None,
        rt.root,
        environment_url=(label, config.warehouse),
    )
    return url


def seed(
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            help="Seed this SQLAlchemy URL (PostgreSQL, MariaDB/MySQL or DuckDB) instead of "
            "the embedded DuckDB file: a schema (on MariaDB/MySQL a database) per lens, "
            "replacing the tables the seeds name.",
        ),
    ] = None,
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="Seed the warehouse dst.yaml names for this environment "
            "(environments: <E>: warehouse:), e.g. a DuckDB file a CI job builds.",
        ),
    ] = None,
) -> int:
    """Build the embedded DuckDB warehouse (.dst/) from every lens's seeds/*.csv."""
    # lazy: seeding loads SQLAlchemy and DuckDB; `dst --help` does not need them
    from reconciler.history import seed as do_seed, seed_elsewhere

    rt = runtime(repo, environment=env)
    if warehouse is None and env is not None:
        warehouse = _environment_url(rt, env)
    others, embedded = ([], []) if warehouse is not None else seed_elsewhere(rt)
    if others and not embedded:
        raise _refuse(others)
    result = do_seed(rt, url=warehouse)
    for other in others:
        print(
            f"note: {_lenses(other.lenses)} read {other.url} ({other.source}), not the "
            "embedded warehouse; it was not seeded: `dst seed --warehouse URL` loads it",
            file=sys.stderr,
        )
    tables = {t.qualified: t.rows for t in result.tables}
    if not tables:
        print(
            "note: no seed files found (lenses/<lens>/seeds/*.csv, seeds/*.csv): nothing was "
            f"loaded into {result.target}; add CSV files there, or point the lenses at a "
            "warehouse that holds the tables",
            file=sys.stderr,
        )
    if fmt is Format.json:
        obj = {
            "schema_version": 1,
            "command": "seed",
            "warehouse": result.target,
            "tables": tables,
            "schemas": list(result.schemas),
            **({"databases": list(result.databases)} if result.databases else {}),
            "not_seeded": [
                {"warehouse": o.url, "source": o.source, "lenses": list(o.lenses)} for o in others
            ],
        }
        print(json.dumps(obj, indent=2))
    else:
        for table, rows in sorted(tables.items()):
            print(f"seeded {table}: {rows} rows")
        print(f"warehouse: {result.target}")
        if result.databases:
            print(f"lens databases: {', '.join(result.databases)}")
    return 0
