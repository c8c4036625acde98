"""Seeding a warehouse from lens ``seeds/*.csv`` (the one write path).

Seeds are per lens (DESIGN §2): ``lenses/<L>/seeds/<t>.csv`` is table ``<t>`` in
schema ``<L>``, a repository-level ``seeds/<t>.csv`` is ``<t>`` in the default
schema (``main`` in DuckDB, ``public`` in PostgreSQL).

Every CSV is read the same way whatever the target: DuckDB's ``read_csv`` builds
a fresh database file. For the embedded warehouse that file is swapped in with
``os.replace``; for a PostgreSQL (or another DuckDB) URL its schemas and tables
are copied out in one transaction. Either way a CSV that fails to
load leaves the previous warehouse intact, and seeding never shares a
connection or pool with the read-only :class:`~reconciler.warehouse.connection.Warehouse`.
"""

from __future__ import annotations

import os
import re
import secrets
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
from reconciler.warehouse import mysql
from reconciler.warehouse.connection import (
    EMBEDDED_DIR,
    EMBEDDED_FILE,
    Warehouse,
    _first_line,
    embedded_path,
    redact,
)
from reconciler.warehouse.readonly import missing_driver_fix, with_installed_driver

_SEED_TABLE = re.compile(r"^[a-z_][a-z0-9_]*$")
DEFAULT_SCHEMA = {"duckdb": "main", "postgresql": "public", "mysql": "", "mariadb": ""}


@dataclass(frozen=True)
class SeedFile:
    """One CSV to load.

    Attributes:
        schema: the lens whose ``seeds/`` holds it (its table lands in the schema named
            after the lens), or ``None`` for the repository-level ``seeds/`` folder
            (the default schema: ``main`` in DuckDB, ``public`` in PostgreSQL).
        table: the table name (the file's stem).
        source: repository-relative CSV path, for messages.
        data: the CSV bytes.
    """

    schema: str | None
    table: str
    source: str
    data: bytes


@dataclass(frozen=True)
class SeededTable:
    """One table written by :func:`seed`.

    Attributes:
        name: the table name (lowercase).
        source: repository-relative CSV path it came from.
        columns: column names (lowercased from the header row).
        rows: data rows loaded.
        schema: the lens schema it was written to; ``None`` for the default schema.
    """

    name: str
    source: str
    columns: tuple[str, ...]
    rows: int
    schema: str | None = None

    @property
    def qualified(self) -> str:
        """``<schema>.<table>``, or the bare table name in the default schema."""
        return self.name if self.schema is None else f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class SeedReport:
    """What :func:`seed` wrote.

    Attributes:
        path: the embedded warehouse file (the scratch build when ``url`` is set).
        tables: one entry per table, sorted by schema (default schema first), then name.
        url: the redacted URL of the warehouse seeded, when it is not the embedded one.
        schemas: the lens schemas created (one per lens, seeds or not).
        databases: on MariaDB/MySQL, the database holding each lens schema, in the order
            of ``schemas`` (``<URL database>__<lens>``, :func:`mysql.lens_database`).
    """

    path: Path
    tables: tuple[SeededTable, ...]
    url: str | None = None
    schemas: tuple[str, ...] = ()
    databases: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """Where the seeds went, for messages: the redacted URL or the file path."""
        return self.url if self.url is not None else str(self.path)

    @property
    def row_counts(self) -> dict[str, int]:
        """``{schema.table: rows}`` (a bare table name in the default schema)."""
        return {t.qualified: t.rows for t in self.tables}


def seed(
    repo_root: Path,
    seeds: Sequence[SeedFile],
    *,
    url: str | None = None,
    schemas: Sequence[str] = (),
) -> SeedReport:
    """Rebuild the embedded DuckDB warehouse (or the one at ``url``) from seed CSVs, atomically.

    Seeds are per lens (DESIGN §2): a lens's ``seeds/<t>.csv`` is table ``<t>`` in
    schema ``<lens>``, a repository-level one is ``<t>`` in the default schema, so
    two lenses may each have a ``products`` table.

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
        seeds: the CSVs; one (schema, table) from two files is refused.
        url: a SQLAlchemy URL (DuckDB, PostgreSQL, MariaDB/MySQL) to seed instead of the
            embedded file. The CSVs are built into a scratch DuckDB file as usual, then, all
            in one transaction on a write engine of its own, each lens schema is created
            if missing and each table dropped if it exists, created with the types
            DuckDB detected and filled. Tables the seeds do not name are left alone.
            MariaDB/MySQL has no schemas and commits DDL at once: each lens gets a
            database ``<URL database>__<lens>`` (binary collation, so strings compare
            as on DuckDB), every table is loaded under a scratch name, and one
            ``RENAME TABLE`` swaps them all in.
        schemas: lens names whose schema must exist afterwards even without seeds
            (every lens of the repository), so a query of such a lens finds its schema.

    Returns:
        The file written, the tables with their row counts and the schemas created.

    Raises:
        WarehouseError: ``url`` does not parse, has no driver, or the copy fails
            (the driver's first line; nothing is committed).
        UsageError: a table name is not a plain lowercase identifier, one table of a
            schema comes from two files (both named), ``url`` names a database
            without schemas, or a MariaDB/MySQL URL names no database for the
            repository-level seeds.
        LensLoadError: a CSV is empty, does not parse, or has two columns that
            differ only in case (naming the CSV).
    """
    chosen: dict[tuple[str, str], SeedFile] = {}
    for item in seeds:
        name = item.table.lower()
        if not _SEED_TABLE.match(name):
            raise UsageError(
                f"{item.source}: seed table name {item.table!r} is not a plain identifier",
                fix="name the CSV with lowercase letters, digits and underscores",
            )
        key = (item.schema or "", name)
        if key in chosen and chosen[key].data != item.data:
            raise UsageError(
                f"seed table {name!r} comes from two different files: "
                f"{chosen[key].source} and {item.source}",
                fix="rename one of the CSVs, or make their contents identical",
            )
        chosen.setdefault(key, SeedFile(item.schema, name, item.source, item.data))
    lens_schemas = tuple(sorted({*schemas, *(s for s, _ in chosen if s)}))
    if url is not None:
        _check_target(url, lens_schemas, flat=any(not s for s, _ in chosen))
    folder = repo_root / EMBEDDED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.is_file() or ignore.read_text(encoding="utf-8") != "*\n":
        ignore.write_text("*\n", encoding="utf-8")
    target = embedded_path(repo_root)
    work = Path(tempfile.mkdtemp(prefix=".seed-", dir=folder))
    try:
        built = work / EMBEDDED_FILE
        tables = _build(built, work, [chosen[k] for k in sorted(chosen)], lens_schemas)
        if url is not None:
            databases = _copy_out(built, url, tables, lens_schemas)
            return SeedReport(target, tables, redact(url), lens_schemas, databases)
        # A write-ahead log left by a crashed writer would be replayed onto the new file.
        Path(f"{target}.wal").unlink(missing_ok=True)
        os.replace(built, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return SeedReport(target, tables, schemas=lens_schemas)


def _check_target(url: str, lens_schemas: Sequence[str], *, flat: bool) -> None:
    """Refuse, before building anything, a URL that cannot hold lens schemas."""
    try:
        parsed = with_installed_driver(make_url(url))
        backend = parsed.get_backend_name()
    except (ArgumentError, ValueError):
        raise WarehouseError(
            "cannot seed <unparseable warehouse URL>: not a SQLAlchemy URL",
            fix="write it as dialect+driver://user@host/database",
        ) from None
    if lens_schemas and backend not in DEFAULT_SCHEMA:
        raise UsageError(
            f"cannot seed {redact(url)}: lens seeds load into a schema per lens "
            f"({', '.join(lens_schemas)}), and {backend} has no schemas",
            fix="seed a PostgreSQL, MariaDB/MySQL or DuckDB warehouse, or load the tables yourself",
        )
    if flat and backend in mysql.BACKENDS and not parsed.database:
        raise UsageError(
            f"cannot seed {redact(url)}: the repository-level seeds/ load into the URL's "
            "database, and it names none",
            fix="name the database in the URL: mysql+pymysql://user@host:3306/analytics",
        )


def _build(
    database: Path, work: Path, chosen: Sequence[SeedFile], lens_schemas: Sequence[str]
) -> tuple[SeededTable, ...]:
    tables: list[SeededTable] = []
    con = duckdb.connect(str(database))
    try:
        for schema in lens_schemas:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
        for index, item in enumerate(chosen):
            if not item.data.strip():
                raise LensLoadError(
                    item.source,
                    "seed CSV is empty",
                    fix="add a header row naming the columns, then the data",
                )
            csv_path = work / f"{index}.csv"
            csv_path.write_bytes(item.data)
            qualified = _qualified(item.schema, item.table)
            try:
                lowered, rows = _load_csv(con, csv_path, item.source, qualified)
            except duckdb.Error as exc:
                message, line = _csv_problem(str(exc).replace(csv_path.as_posix(), item.source))
                raise LensLoadError(
                    item.source,
                    f"seed CSV does not load: {message}",
                    line=line,
                    fix="save it as UTF-8 CSV with a header row and the same number of "
                    "comma-separated fields on every line",
                ) from None
            tables.append(SeededTable(item.table, item.source, lowered, rows, item.schema))
    finally:
        con.close()
    return tuple(tables)


def _load_csv(
    con: duckdb.DuckDBPyConnection, csv_path: Path, source: str, qualified: str
) -> tuple[tuple[str, ...], int]:
    """Create ``qualified`` from one CSV: ``(lowercased columns, rows)``."""
    options = "skip = 0, delim = ',', quote = '\"', escape = '\"'"
    path = exp.Literal.string(csv_path.as_posix()).sql("duckdb")
    reader = f"read_csv({path}, header = true, {options})"
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
    con.execute(f"CREATE TABLE {qualified} AS SELECT {select} FROM {reader}")
    count = con.execute(f"SELECT count(*) FROM {qualified}").fetchone()
    return tuple(lowered), int(count[0]) if count else 0


def _copy_out(
    built: Path, url: str, tables: Sequence[SeededTable], lens_schemas: Sequence[str]
) -> tuple[str, ...]:
    """Copy the scratch build into ``url``: the MariaDB/MySQL databases used, else ``()``."""
    shown = redact(url)
    parsed = with_installed_driver(make_url(url))
    backend = parsed.get_backend_name()
    try:
        engine = sa.create_engine(parsed)
    except (ArgumentError, ValueError, ImportError) as exc:  # no such dialect or driver
        fix = missing_driver_fix(backend)
        if backend in mysql.BACKENDS:
            fix = "pip install -e '.[mysql]' (PyMySQL), and write the URL as mysql+pymysql://"
        raise WarehouseError(
            f"cannot seed {shown}: no driver installed ({_first_line(exc, None)})", fix=fix
        ) from None
    source = duckdb.connect(str(built), read_only=True)
    databases: tuple[str, ...] = ()
    try:
        if backend in mysql.BACKENDS:
            default = parsed.database or None
            databases = tuple(mysql.lens_database(default, s) for s in lens_schemas)
            _copy_mysql(engine, source, tables, dict(zip(lens_schemas, databases, strict=True)))
            return databases
        with engine.begin() as conn:  # all schemas and tables or none
            for schema in lens_schemas:
                conn.execute(sa.schema.CreateSchema(schema, if_not_exists=True))
            for seeded in tables:
                qualified = _qualified(seeded.schema, seeded.name)
                table = _described_table(source, seeded, seeded.name, schema=seeded.schema)
                table.drop(conn, checkfirst=True)
                table.create(conn)
                rows = source.execute(f"SELECT * FROM {qualified}").fetchall()
                if rows:
                    conn.execute(
                        table.insert(), [dict(zip(seeded.columns, r, strict=True)) for r in rows]
                    )
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        password = make_url(url).password
        raise WarehouseError(
            f"seeding {shown} failed: {_first_line(cause, str(password) if password else None)}",
            fix="check that the account may create schemas and tables there, and that no "
            "view depends on a seeded table",
        ) from None
    finally:
        source.close()
        engine.dispose()
    return databases


def _described_table(
    source: duckdb.DuckDBPyConnection, seeded: SeededTable, name: str, **options: Any
) -> sa.Table:
    """The seeded table's columns, with the types DuckDB detected, as table ``name``."""
    described = source.execute(f"DESCRIBE {_qualified(seeded.schema, seeded.name)}").fetchall()
    columns = (sa.Column(str(d[0]), _column_type(str(d[1]))) for d in described)
    return sa.Table(name, sa.MetaData(), *columns, **options)


def _copy_mysql(
    engine: sa.Engine,
    source: duckdb.DuckDBPyConnection,
    tables: Sequence[SeededTable],
    databases: Mapping[str, str],
) -> None:
    """Load every table under a scratch name, then swap all in with one ``RENAME TABLE``.

    MySQL commits each DDL statement at once, so a transaction cannot make the copy
    all or nothing; a multi-table ``RENAME TABLE`` is atomic, so readers see either
    every old table or every new one, and a failure before it drops the scratch
    tables and leaves the old ones serving.
    """
    tag = secrets.token_hex(4)
    staged: list[tuple[str, str, str]] = []  # (database, scratch name, final name)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        default = conn.exec_driver_sql("SELECT DATABASE()").scalar()
        collation = mysql.binary_collation(conn)
        charset = {"mysql_charset": "utf8mb4", "mysql_collate": collation} if collation else {}
        for database in databases.values():
            conn.execute(sa.schema.CreateSchema(database, if_not_exists=True))
            if collation:
                quoted = _mysql_quote(database)
                conn.exec_driver_sql(
                    f"ALTER DATABASE {quoted} CHARACTER SET utf8mb4 COLLATE {collation}"
                )
        try:
            for seeded in tables:
                database = str(default) if seeded.schema is None else databases[seeded.schema]
                scratch = f"{seeded.name[:40]}__dst_{tag}"
                table = _described_table(source, seeded, scratch, schema=database, **charset)
                staged.append((str(database), scratch, seeded.name))
                table.create(conn)
                rows = source.execute(
                    f"SELECT * FROM {_qualified(seeded.schema, seeded.name)}"
                ).fetchall()
                if rows:  # autocommitted; a failure drops the scratch table
                    conn.execute(
                        table.insert(), [dict(zip(seeded.columns, r, strict=True)) for r in rows]
                    )
            held = {
                (str(s), str(t))
                for s, t in conn.exec_driver_sql(
                    "SELECT table_schema, table_name FROM information_schema.tables"
                )
            }
            pairs: list[str] = []
            for database, scratch, final in staged:
                at = f"{_mysql_quote(database)}.{_mysql_quote(final)}"
                if (database, final) in held:
                    old = f"{_mysql_quote(database)}.{_mysql_quote(_retired(final, tag))}"
                    pairs.append(f"{at} TO {old}")
                pairs.append(f"{_mysql_quote(database)}.{_mysql_quote(scratch)} TO {at}")
            if pairs:
                conn.exec_driver_sql(f"RENAME TABLE {', '.join(pairs)}")
            # Swapped in: what is left to drop is the tables they replaced.
            staged = [(d, _retired(f, tag), f) for d, _, f in staged if (d, f) in held]
        finally:
            for database, scratch, _ in staged:
                conn.exec_driver_sql(
                    f"DROP TABLE IF EXISTS {_mysql_quote(database)}.{_mysql_quote(scratch)}"
                )


def _retired(table: str, tag: str) -> str:
    return f"{table[:40]}__dst_old_{tag}"


def _mysql_quote(identifier: str) -> str:
    return exp.to_identifier(identifier, quoted=True).sql("mysql")


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


def _qualified(schema: str | None, table: str) -> str:
    return _quote(table) if schema is None else f"{_quote(schema)}.{_quote(table)}"


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
        files = [SeedFile(None, t, f"seeds/{t}.csv", raw) for t, raw in sorted(seeds.items())]
        seed(root, files)
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
