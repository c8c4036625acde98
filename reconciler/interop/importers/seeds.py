"""Seeds for an imported lens: CSV files mapped onto physical tables.

Warehouse loaders such as Snowflake's ``COPY INTO`` read CSV columns by
*position* and skip the header, so a CSV's header may not name the columns it
fills (``region.csv`` says ``Region`` where the table says ``sales_region``).
When the table's DDL is known it is the authority: the header is replaced by the
DDL's column names, position by position. Without DDL the header, lowercased,
is all there is.

Shapes: ``{table: PhysicalTable}`` from DDL, ``{table: SeedTable}`` out; every
name is lowercase, because unquoted identifiers fold to one case in Snowflake
and are case-insensitive in DuckDB.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from reconciler.errors import InputError

# A timestamp's text where the table wants a DATE: keep the calendar day.
_TIMESTAMP_TEXT = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T]\d")


@dataclass(frozen=True)
class PhysicalTable:
    """A table as its DDL declares it.

    Attributes:
        name: unqualified table name, lowercase.
        columns: ``(column name, sqlglot type name)`` in declaration order,
            names lowercase (``("date", "DATE")``, ``("amount", "DECIMAL")``).
    """

    name: str
    columns: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SeedTable:
    """One ``seeds/<table>.csv`` to write.

    Attributes:
        table: the physical table it fills, lowercase.
        csv: the file's bytes: a header of physical column names, then the rows.
        rows: data rows (header excluded).
        source: the CSV file name it came from.
    """

    table: str
    csv: bytes
    rows: int
    source: str


@dataclass(frozen=True)
class SeedPlan:
    """Seeds built from a data directory.

    Attributes:
        tables: ``{table: SeedTable}``.
        unmapped: what was dropped, with the reason.
        notes: decisions that lose nothing (renamed columns, truncated timestamps).
    """

    tables: Mapping[str, SeedTable]
    unmapped: tuple[str, ...]
    notes: tuple[str, ...]


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    # Setup scripts are full of GRANT/USE statements sqlglot only keeps as commands
    # and logs a warning for; those statements are skipped on purpose here.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse_ddl(scripts: Sequence[bytes], *, dialect: str = "snowflake") -> dict[str, PhysicalTable]:
    """Collect the ``CREATE TABLE`` statements of SQL scripts.

    Other statements (roles, grants, stages, ``USE`` …) are skipped; a statement
    that does not parse is skipped too, as long as the script tokenizes.

    Args:
        scripts: the scripts' bytes (UTF-8).
        dialect: the sqlglot dialect they are written in.

    Returns:
        ``{table name: PhysicalTable}``; a later definition of a table replaces
        an earlier one, as ``CREATE OR REPLACE`` would.

    Raises:
        InputError: a script is not UTF-8 or does not tokenize.
    """
    tables: dict[str, PhysicalTable] = {}
    for index, script in enumerate(scripts, start=1):
        try:
            text = script.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(
                f"DDL script #{index} is not UTF-8", fix="save the .sql file as UTF-8"
            ) from None
        try:
            with _quiet_sqlglot():
                statements = sqlglot.parse(text, read=dialect, error_level=ErrorLevel.IGNORE)
        except SqlglotError as exc:
            raise InputError(
                f"DDL script #{index} does not tokenize as {dialect}: {exc}",
                fix="pass only SQL scripts as DDL",
            ) from None
        for statement in statements:
            table = _table_of(statement)
            if table is not None:
                tables[table.name] = table
    return tables


_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_COPY = re.compile(
    r"\bCOPY\s+INTO\s+(?P<table>[\w.$\"]+).*?\bFROM\s+(?P<source>\S+)", re.IGNORECASE | re.DOTALL
)
_FILES = re.compile(r"\bFILES\s*=\s*\((?P<files>[^)]*)\)", re.IGNORECASE)


def parse_loads(scripts: Sequence[bytes]) -> dict[str, str]:
    """Which CSV file each ``COPY INTO <table>`` statement of load scripts fills.

    A statement names its files in ``FILES = ('a.csv', …)`` or at the end of its
    ``FROM @stage/path/a.csv``; statements naming neither (a ``PATTERN``, a whole
    stage) say nothing about a file and are skipped. Non-UTF-8 scripts are skipped
    (:func:`parse_ddl` reports them).

    Returns:
        ``{CSV file stem, normalized: table name, lowercase, unqualified}``.
    """
    loads: dict[str, str] = {}
    for script in scripts:
        try:
            text = _COMMENTS.sub(" ", script.decode("utf-8-sig"))
        except UnicodeDecodeError:
            continue
        for statement in text.split(";"):
            match = _COPY.search(statement)
            if match is None:
                continue
            table = match.group("table").split(".")[-1].strip('"').lower()
            listed = _FILES.search(statement)
            names = listed.group("files").split(",") if listed else [match.group("source")]
            for name in names:
                file_name = name.strip().strip("'\"").rsplit("/", 1)[-1]
                if file_name.lower().endswith((".csv", ".csv.gz")):
                    loads[_norm(file_name.split(".", 1)[0])] = table
    return loads


def _table_of(statement: exp.Expr | None) -> PhysicalTable | None:
    if not isinstance(statement, exp.Create) or str(statement.args.get("kind")).upper() != "TABLE":
        return None
    schema = statement.this
    if not isinstance(schema, exp.Schema) or not isinstance(schema.this, exp.Table):
        return None  # CREATE TABLE … AS SELECT / LIKE: no column list to map onto
    columns: list[tuple[str, str]] = []
    for col in schema.expressions:
        if isinstance(col, exp.ColumnDef) and col.name:
            kind = col.args.get("kind")
            type_name = kind.this.name if isinstance(kind, exp.DataType) else "UNKNOWN"
            columns.append((col.name.lower(), type_name))
    if not columns or not schema.this.name:
        return None
    return PhysicalTable(schema.this.name.lower(), tuple(columns))


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _identifier(name: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_]+", "_", name.strip().lower()).strip("_")
    return cleaned if cleaned and not cleaned[0].isdigit() else f"c_{cleaned}"


def build_seeds(
    data_dir: Path,
    ddl: Mapping[str, PhysicalTable],
    aliases: Mapping[str, str],
    *,
    loads: Mapping[str, str] | None = None,
    wanted: Mapping[str, set[str]] | None = None,
) -> SeedPlan:
    """Map every ``*.csv`` in ``data_dir`` onto a physical table.

    A CSV goes to the table a load script copies it into (``loads``), else to
    the DDL table whose name matches its file stem, else to the table behind the
    logical table of that name (``aliases``), else to the DDL table sharing most
    of its header's column names (at least half). Its header is then replaced by
    the table's columns positionally; surplus CSV columns are dropped (and
    reported), and a DATE column holding timestamps keeps the day. Without a DDL
    match the CSV header, lowercased, names the columns, and a CSV no name maps
    goes to the table of ``wanted`` whose columns its header holds (the one
    reading most columns, unless two tie).

    Args:
        data_dir: the directory holding the CSV files (not searched recursively).
        ddl: physical tables from :func:`parse_ddl` (may be empty).
        aliases: ``{logical table name, lowercase: physical table, lowercase}``.
        loads: ``{CSV stem, normalized: table}`` from :func:`parse_loads`.
        wanted: ``{table: physical columns the models read}``.

    Returns:
        The seeds, and what was dropped or decided along the way.

    Raises:
        InputError: ``data_dir`` is missing or holds no CSV; a CSV that is
            unreadable, empty, ragged, or has fewer columns than its table; or
            two CSVs for the same table.
    """
    tables: dict[str, SeedTable] = {}
    unmapped: list[str] = []
    notes: list[str] = []
    by_norm = {_norm(name): name for name in ddl}
    alias_norm = {_norm(logical): physical for logical, physical in aliases.items()}
    if not data_dir.is_dir():
        raise InputError(
            f"data directory {data_dir} does not exist",
            fix="pass the folder that holds the model's CSV files",
        )
    csv_files = sorted(p for p in data_dir.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
    if not csv_files:
        raise InputError(
            f"data directory {data_dir} holds no .csv files",
            fix="pass the folder that holds the model's CSV files, or no data folder",
        )
    loaded = dict(loads or {})
    # Tables some CSV fills by name; matching by columns never takes one of them.
    stems = [_norm(p.stem) for p in csv_files]
    claimed = {_norm(loaded.get(k) or alias_norm.get(k) or k) for k in stems}
    for path in csv_files:
        header, rows = _read_csv(path)
        target = loaded.get(_norm(path.stem))
        if target is not None and _norm(target) != _norm(path.stem):
            notes.append(f"{path.name} fills table {target}: a load script copies it there")
        key = _norm(target) if target is not None else _norm(path.stem)
        table = _match_table(key, header, ddl, by_norm, alias_norm)
        if table is not None:
            names, rows = _fit_to_ddl(path.name, header, rows, table, unmapped, notes)
            name = table.name
        else:
            names = [_identifier(h) for h in header]
            free = {
                t: c
                for t, c in (wanted or {}).items()
                if _norm(t) not in claimed and t not in tables
            }
            name = (
                target
                or alias_norm.get(key)
                or _by_columns(path.name, names, free, notes)
                or _identifier(path.stem)
            )
            if ddl:
                unmapped.append(
                    f"{path.name}: no CREATE TABLE matches it; seeded as {name} "
                    f"with its header lowercased"
                )
        if name in tables:
            raise InputError(
                f"{path.name} and {tables[name].source} both fill table {name!r}",
                fix="keep one CSV per table in the data directory",
            )
        tables[name] = SeedTable(name, _write_csv(names, rows), len(rows), path.name)
    return SeedPlan(tables, tuple(unmapped), tuple(notes))


def _by_columns(
    file_name: str, header: Sequence[str], wanted: Mapping[str, set[str]] | None, notes: list[str]
) -> str | None:
    """The wanted table whose columns ``header`` holds, the one reading most columns.

    ``None`` when no table fits or two fit equally well (a guess is no mapping).
    """
    fits = sorted(
        ((len(cols), t) for t, cols in (wanted or {}).items() if cols and cols <= set(header)),
        reverse=True,
    )
    if not fits or (len(fits) > 1 and fits[1][0] == fits[0][0]):
        return None
    table = fits[0][1]
    notes.append(f"{file_name} fills table {table}: its header holds every column the model reads")
    return table


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path.name} is not UTF-8", fix="save the CSV as UTF-8") from None
    records = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    if not records:
        raise InputError(f"{path.name} is empty", fix="add a header row, or remove the file")
    header, rows = records[0], records[1:]
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InputError(
                f"{path.name}:{number}: {len(row)} fields, header has {len(header)}",
                fix="make every row as wide as the header",
            )
    return header, rows


def _match_table(
    stem: str,
    header: Sequence[str],
    ddl: Mapping[str, PhysicalTable],
    by_norm: Mapping[str, str],
    alias_norm: Mapping[str, str],
) -> PhysicalTable | None:
    key = _norm(stem)
    if key in by_norm:
        return ddl[by_norm[key]]
    if alias_norm.get(key) in ddl:
        return ddl[alias_norm[key]]
    wanted = {_norm(h) for h in header}
    scored = sorted(
        ((len(wanted & {_norm(c) for c, _ in t.columns}), t.name) for t in ddl.values()),
        reverse=True,
    )
    if scored and scored[0][0] * 2 >= max(len(wanted), 1) and scored[0][0] > 0:
        if len(scored) > 1 and scored[1][0] == scored[0][0]:
            return None  # a tie is a guess; fall back to the header
        return ddl[scored[0][1]]
    return None


def _fit_to_ddl(
    file_name: str,
    header: Sequence[str],
    rows: list[list[str]],
    table: PhysicalTable,
    unmapped: list[str],
    notes: list[str],
) -> tuple[list[str], list[list[str]]]:
    width = len(table.columns)
    if len(header) < width:
        raise InputError(
            f"{file_name} has {len(header)} columns, but table {table.name} declares {width}",
            fix="add the missing columns to the CSV, or check which table it belongs to",
        )
    names = [name for name, _ in table.columns]
    if len(header) > width:
        unmapped.append(
            f"{file_name}: columns {', '.join(header[width:])} dropped - table "
            f"{table.name} declares only {width} columns"
        )
    renamed = [f"{h}→{n}" for h, n in zip(header, names, strict=False) if _norm(h) != _norm(n)]
    if renamed:
        notes.append(
            f"seeds/{table.name}.csv from {file_name}: columns renamed by position "
            f"to the DDL's ({', '.join(renamed)})"
        )
    fitted = [row[:width] for row in rows]
    for index, (name, type_name) in enumerate(table.columns):
        if type_name != "DATE":
            continue
        truncated = 0
        for row in fitted:
            match = _TIMESTAMP_TEXT.match(row[index])
            if match:
                row[index] = match.group(1)
                truncated += 1
        if truncated:
            notes.append(
                f"seeds/{table.name}.csv: {truncated} timestamps in DATE column "
                f"{name} cut to their day"
            )
    return names, fitted


def _write_csv(header: Sequence[str], rows: Sequence[Sequence[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")
