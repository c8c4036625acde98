"""Seeding a warehouse from lens ``seeds/*.csv`` (the one write path).

Every CSV is read the same way whatever the target: DuckDB's ``read_csv`` builds
a fresh database file. For the embedded warehouse that file is swapped in with
``os.replace``; for any other SQLAlchemy URL (a PostgreSQL test warehouse, say)
its tables are copied out in one transaction. Either way a CSV that fails to
load leaves the previous warehouse intact, and seeding never shares a
connection or pool with the read-only :class:`~reconciler.warehouse.connection.Warehouse`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlglot import exp

from reconciler.errors import LensLoadError, UnsafeSqlError, UsageError, WarehouseError
from reconciler.interop.importers import OracleRun
from reconciler.warehouse.connection import (
    EMBEDDED_DIR,
    EMBEDDED_FILE,
    Warehouse,
    _first_line,
    embedded_path,
    redact,
)
from reconciler.warehouse.readonly import with_installed_driver

_SEED_TABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class SeededTable:
    """One table written by :func:`seed`.

    Attributes:
        name: the table name (lowercase).
        source: repository-relative CSV path it came from.
        columns: column names (lowercased from the header row).
        rows: data rows loaded.
    """

    name: str
    source: str
    columns: tuple[str, ...]
    rows: int


@dataclass(frozen=True)
class SeedReport:
    """What :func:`seed` wrote.

    Attributes:
        path: the embedded warehouse file (the scratch build when ``url`` is set).
        tables: one entry per table, sorted by name.
        url: the redacted URL of the warehouse seeded, when it is not the embedded one.
    """

    path: Path
    tables: tuple[SeededTable, ...]
    url: str | None = None

    @property
    def target(self) -> str:
        """Where the seeds went, for messages: the redacted URL or the file path."""
        return self.url if self.url is not None else str(self.path)

    @property
    def row_counts(self) -> dict[str, int]:
        """``{table: rows}``."""
        return {t.name: t.rows for t in self.tables}


def seed(
    repo_root: Path, seeds: Sequence[tuple[str, str, bytes]], *, url: str | None = None
) -> SeedReport:
    """Rebuild the embedded DuckDB warehouse (or the one at ``url``) from seed CSVs, atomically.

    The database is built in a temporary directory under ``.dst/`` and moved
    over ``.dst/warehouse.duckdb`` with :func:`os.replace`, so a failure leaves
    the previous warehouse intact and readers never see a half-built file.
    Each CSV is read by DuckDB's ``read_csv`` as RFC 4180 (comma, double quote,
    header row, no skipped lines) with auto-detected column types; column names
    are lowercased. ``.dst/.gitignore`` (``*``) keeps the folder out of git.
    Close any :class:`Warehouse` on the file in this process before seeding:
    DuckDB shares open database instances per path.

    Args:
        repo_root: the repository's working directory.
        seeds: ``(table name, repository-relative CSV path, CSV bytes)``; the
            same table from two files is fine when the bytes are identical.
        url: a SQLAlchemy URL to seed instead of the embedded file. The CSVs are
            built into a scratch DuckDB file as usual, then each table is dropped
            if it exists, created with the types DuckDB detected and filled, all
            in one transaction on a write engine of its own. Tables the seeds do
            not name are left alone.

    Returns:
        The file written and the tables with their row counts.

    Raises:
        WarehouseError: ``url`` does not parse, has no driver, or the copy fails
            (the driver's first line; nothing is committed).
        UsageError: a table name is not a plain lowercase identifier, or one
            table comes from two files with different contents (both named).
        LensLoadError: a CSV is empty, does not parse, or has two columns that
            differ only in case (naming the CSV).
    """
    chosen: dict[str, tuple[str, bytes]] = {}
    for table, source, data in seeds:
        name = table.lower()
        if not _SEED_TABLE.match(name):
            raise UsageError(
                f"{source}: seed table name {table!r} is not a plain identifier",
                fix="name the CSV with lowercase letters, digits and underscores",
            )
        if name in chosen and chosen[name][1] != data:
            raise UsageError(
                f"seed table {name!r} comes from two different files: "
                f"{chosen[name][0]} and {source}",
                fix="rename one of the CSVs, or make their contents identical",
            )
        chosen.setdefault(name, (source, data))
    folder = repo_root / EMBEDDED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.is_file() or ignore.read_text(encoding="utf-8") != "*\n":
        ignore.write_text("*\n", encoding="utf-8")
    target = embedded_path(repo_root)
    work = Path(tempfile.mkdtemp(prefix=".seed-", dir=folder))
    try:
        built = work / EMBEDDED_FILE
        tables = _build(built, work, chosen)
        if url is not None:
            _copy_out(built, url, tables)
            return SeedReport(target, tables, redact(url))
        # A write-ahead log left by a crashed writer would be replayed onto the new file.
        Path(f"{target}.wal").unlink(missing_ok=True)
        os.replace(built, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return SeedReport(target, tables)


def _build(
    database: Path, work: Path, chosen: Mapping[str, tuple[str, bytes]]
) -> tuple[SeededTable, ...]:
    tables: list[SeededTable] = []
    con = duckdb.connect(str(database))
    try:
        for index, (name, (source, data)) in enumerate(sorted(chosen.items())):
            if not data.strip():
                raise LensLoadError(
                    source,
                    "seed CSV is empty",
                    fix="add a header row naming the columns, then the data",
                )
            csv_path = work / f"{index}.csv"
            csv_path.write_bytes(data)
            options = "skip = 0, delim = ',', quote = '\"', escape = '\"'"
            path = exp.Literal.string(csv_path.as_posix()).sql("duckdb")
            reader = f"read_csv({path}, header = true, {options})"
            try:
                described = con.execute(f"SELECT * FROM {reader} LIMIT 0").description or []
                header = [str(d[0]) for d in described]
                # DuckDB renames duplicate headers (a, a_1); read the raw row to catch them.
                raw_reader = f"read_csv({path}, header = false, all_varchar = true, {options})"
                raw = con.execute(f"SELECT * FROM {raw_reader} LIMIT 1").fetchone() or ()
                lowered = [str(h or "").strip().lower() for h in raw]
                _check_header(source, lowered)
                select = ", ".join(
                    f"{_quote(h)} AS {_quote(low)}" for h, low in zip(header, lowered, strict=True)
                )
                con.execute(f"CREATE TABLE {_quote(name)} AS SELECT {select} FROM {reader}")
                count = con.execute(f"SELECT count(*) FROM {_quote(name)}").fetchone()
            except duckdb.Error as exc:
                message, line = _csv_problem(str(exc).replace(csv_path.as_posix(), source))
                raise LensLoadError(
                    source,
                    f"seed CSV does not load: {message}",
                    line=line,
                    fix="save it as UTF-8 CSV with a header row and the same number of "
                    "comma-separated fields on every line",
                ) from None
            rows = int(count[0]) if count else 0
            tables.append(SeededTable(name, source, tuple(lowered), rows))
    finally:
        con.close()
    return tuple(tables)


def _copy_out(built: Path, url: str, tables: Sequence[SeededTable]) -> None:
    shown = redact(url)
    try:
        engine = sa.create_engine(with_installed_driver(make_url(url)))
    except (ArgumentError, ValueError, ImportError) as exc:
        raise WarehouseError(
            f"cannot seed {shown}: {_first_line(exc, None)}",
            fix="pass a SQLAlchemy URL whose driver is installed",
        ) from None
    source = duckdb.connect(str(built), read_only=True)
    try:
        with engine.begin() as conn:  # all tables or none
            for seeded in tables:
                quoted = _quote(seeded.name)
                described = source.execute(f"DESCRIBE {quoted}").fetchall()
                table = sa.Table(
                    seeded.name,
                    sa.MetaData(),
                    *(sa.Column(str(d[0]), _column_type(str(d[1]))) for d in described),
                )
                table.drop(conn, checkfirst=True)
                table.create(conn)
                rows = source.execute(f"SELECT * FROM {quoted}").fetchall()
                if rows:
                    conn.execute(
                        table.insert(), [dict(zip(seeded.columns, r, strict=True)) for r in rows]
                    )
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        password = make_url(url).password
        raise WarehouseError(
            f"seeding {shown} failed: {_first_line(cause, str(password) if password else None)}",
            fix="check that the account may create tables there, and that no view depends "
            "on a seeded table",
        ) from None
    finally:
        source.close()
        engine.dispose()


_TYPES: dict[str, sa.types.TypeEngine[Any]] = {
    "BOOLEAN": sa.Boolean(),
    "TINYINT": sa.SmallInteger(),
    "SMALLINT": sa.SmallInteger(),
    "INTEGER": sa.Integer(),
    "BIGINT": sa.BigInteger(),
    "HUGEINT": sa.Numeric(38, 0),
    "FLOAT": sa.Float(),
    "DOUBLE": sa.Double(),
    "DATE": sa.Date(),
    "TIME": sa.Time(),
    "TIMESTAMP": sa.DateTime(),
    "TIMESTAMP WITH TIME ZONE": sa.DateTime(timezone=True),
    "VARCHAR": sa.Text(),
}


def _column_type(duckdb_type: str) -> sa.types.TypeEngine[Any]:
    """The SQLAlchemy type for a column type ``read_csv`` detected."""
    decimal = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", duckdb_type)
    if decimal:
        return sa.Numeric(int(decimal.group(1)), int(decimal.group(2)))
    return _TYPES.get(duckdb_type, sa.Text())


def _csv_problem(text: str) -> tuple[str, int | None]:
    """DuckDB's CSV error as one line, and the file line it names, if any."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else "unknown error"
    at = re.search(r"CSV Error on Line: (\d+)", first)
    if at is None:
        return first, None
    # DuckDB puts the reason after the "Original Line:" echo of the row.
    reason = next((ln for ln in lines[1:] if not ln.startswith("Original Line")), "")
    return (reason or first), int(at.group(1))


def _check_header(source: str, names: Sequence[str]) -> None:
    twice = sorted({n for n in names if names.count(n) > 1})
    if "" in names or twice:
        what = f"column {twice[0]!r} twice (ignoring case)" if twice else "a column with no name"
        raise LensLoadError(
            source, f"header row has {what}", line=1, fix="give every column a distinct name"
        )


def _quote(identifier: str) -> str:
    return exp.to_identifier(identifier, quoted=True).sql("duckdb")


def run_on_seeds(seeds: Mapping[str, bytes], queries: Sequence[str]) -> list[OracleRun]:
    """Execute queries over seed CSVs in a scratch embedded warehouse (for importers).

    Args:
        seeds: ``{table name: CSV bytes}``.
        queries: read-only queries in the DuckDB dialect, clock reads already pinned.

    Returns:
        One :class:`~reconciler.interop.importers.OracleRun` per query, in order; a query
        that fails (or is refused by the guard) carries the error text instead of rows.
    """
    with tempfile.TemporaryDirectory(prefix="dst-import-") as scratch:
        root = Path(scratch)
        seed(root, [(table, f"seeds/{table}.csv", raw) for table, raw in sorted(seeds.items())])
        runs: list[OracleRun] = []
        with Warehouse.open(f"duckdb:///{embedded_path(root)}") as wh:
            for sql in queries:
                try:
                    result = wh.execute(sql, row_cap=1000, timeout_s=30.0)
                except (WarehouseError, UnsafeSqlError) as exc:
                    runs.append(OracleRun(rows=None, error=exc.message))
                else:
                    runs.append(OracleRun(rows=len(result.rows), error=None))
        return runs
