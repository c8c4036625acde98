"""Check the example lenses: every file validates and every query runs.

For each lens under ``lenses/`` (or the ones named on the command line) this

1. loads the lens with :func:`reconciler.lens.load_lens`, so every file is
   validated exactly as dst validates it;
2. seeds one in-memory DuckDB with every lens's ``seeds/*.csv`` (a table per CSV,
   named by its stem, as the embedded warehouse does);
3. runs every certified answer's oracle and every exemplar and prints its row
   count, failing when a query errors or an active answer's oracle returns no
   rows or more than the lens's ``row_cap``.

Usage::

    python scripts/check_example_lenses.py [--root ROOT] [LENS ...]

Exit status: 0 when everything validates and runs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from reconciler.errors import DstError
from reconciler.lens import Lens, load_lens

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class QueryRun:
    """One executed query: its lens, kind (``answer``/``exemplar``), name, outcome."""

    lens: str
    kind: str
    name: str
    rows: int | None
    error: str | None = None
    gated: bool = False  # an active answer's oracle: must return 1..row_cap rows


def lens_files(lens_dir: Path) -> dict[str, bytes]:
    """Every file under ``lens_dir`` as ``{lens-relative posix path: bytes}``."""
    return {
        p.relative_to(lens_dir).as_posix(): p.read_bytes()
        for p in sorted(lens_dir.rglob("*"))
        if p.is_file()
    }


def load_lenses(root: Path, names: Sequence[str] = ()) -> dict[str, Lens]:
    """Load the named lenses (default: every directory under ``root/lenses``).

    Raises:
        LensLoadError: a lens file does not validate.
    """
    lenses_dir = root / "lenses"
    wanted = list(names) or sorted(p.name for p in lenses_dir.iterdir() if p.is_dir())
    return {
        name: load_lens(name, lens_files(lenses_dir / name), root=f"lenses/{name}")
        for name in wanted
    }


def seed_tables(root: Path) -> dict[str, Path]:
    """``{table name: csv path}`` over every lens's ``seeds/*.csv``.

    Raises:
        ValueError: two lenses seed a table of the same name.
    """
    tables: dict[str, Path] = {}
    for csv_path in sorted((root / "lenses").glob("*/seeds/*.csv")):
        table = csv_path.stem.lower()
        if table in tables:
            raise ValueError(f"table {table!r} is seeded twice: {tables[table]} and {csv_path}")
        tables[table] = csv_path
    return tables


def connect(tables: Mapping[str, Path]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding one table per seed CSV."""
    con = duckdb.connect(":memory:")
    for table, csv_path in tables.items():
        source = str(csv_path).replace("'", "''")
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv('{source}', header = true)")
    return con


def run_queries(lens: Lens, con: duckdb.DuckDBPyConnection) -> list[QueryRun]:
    """Run every answer oracle (sorted by id) and every exemplar of ``lens``."""
    jobs = [
        ("answer", a.id, a.sql, a.status == "active")
        for a in sorted(lens.answers.values(), key=lambda a: a.id)
    ]
    jobs += [
        ("exemplar", e.name, e.sql, False)
        for e in sorted(lens.exemplars.values(), key=lambda e: e.name)
    ]
    runs = []
    for kind, name, sql, gated in jobs:
        try:
            rows = len(con.execute(sql).fetchall())
        except duckdb.Error as exc:
            first_line = str(exc).splitlines()[0]
            runs.append(QueryRun(lens.name, kind, name, None, first_line, gated))
        else:
            runs.append(QueryRun(lens.name, kind, name, rows, None, gated))
    return runs


def problems(lens: Lens, runs: Sequence[QueryRun]) -> list[str]:
    """What is wrong with ``runs``: errors, and active oracles outside 1..row_cap rows."""
    found = []
    for run in runs:
        where = f"lenses/{run.lens} {run.kind} {run.name}"
        if run.rows is None:
            found.append(f"{where}: {run.error}")
        elif run.gated and not 1 <= run.rows <= lens.config.row_cap:
            found.append(f"{where}: {run.rows} rows, expected 1..{lens.config.row_cap}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Validate and run the example lenses; print row counts; 0 when all is well."""
    parser = argparse.ArgumentParser(description="Validate the example lenses and run their SQL.")
    parser.add_argument("lenses", nargs="*", help="lens names (default: every lens)")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    args = parser.parse_args(argv)
    try:
        lenses = load_lenses(args.root, args.lenses)
    except DstError as exc:
        print(f"error: {exc.render()}", file=sys.stderr)
        return 1
    con = connect(seed_tables(args.root))
    failures: list[str] = []
    for name, lens in lenses.items():
        active = len(lens.active_answers())
        print(
            f"lens {name}: {len(lens.models)} models, {len(lens.metrics)} metrics, "
            f"{active} active answers, {len(lens.exemplars)} exemplars, "
            f"{len(lens.cases)} cases"
        )
        runs = run_queries(lens, con)
        for run in runs:
            shown = f"{run.rows} rows" if run.error is None else f"ERROR {run.error}"
            print(f"  {run.kind:8} {run.name:40} {shown}")
        failures += problems(lens, runs)
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
