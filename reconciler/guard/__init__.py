"""The read-only guard: SQL is exactly one query and nothing else (pure, sqlglot).

This is the statement-level half of the read-only defence; the connection-level
half (read-only DuckDB with external access disabled, PostgreSQL read-only
transactions, SQLite ``mode=ro``) lives in ``warehouse``. The guard is an
allow-list at the root and for functions, and a deny-list below it:

* the root must be a query: ``SELECT`` (DuckDB's ``FROM t`` included),
  ``WITH … SELECT``, a set operation (``UNION``/``INTERSECT``/``EXCEPT``) or a
  parenthesised query. Everything else — DML, DDL, ``COPY``, ``ATTACH``,
  ``PRAGMA``, ``SET``, transaction control, and whatever sqlglot could only
  parse as a generic ``Command`` (``CALL``, ``LOAD``, ``EXPLAIN``, ``VACUUM`` …)
  — is refused, as is text that does not parse (``EXPORT DATABASE``);
* the whole tree is walked, so a write hidden in a CTE (PostgreSQL's
  ``WITH x AS (DELETE … RETURNING *)``), ``SELECT … INTO``, row locks
  (``FOR UPDATE``/``FOR SHARE``), MySQL ``@@settings`` and ``@variables`` and calls to
  functions that reach outside the warehouse (``read_csv``, ``*_scan``, ``glob``,
  ``pg_read_file``, ``dblink`` …) or have side effects (``set_config``, ``nextval`` …)
  are refused too; every other call must be on the dialect's allow-list
  (:mod:`reconciler.guard.calls`), its name read as the warehouse reads it;
* comments MySQL would run (``/*! … */``) are refused (:mod:`reconciler.guard.comments`);
* a table named like a file or URL (DuckDB's replacement scan,
  ``FROM 'data.csv'``) is refused;
* validation is bounded: text over :data:`MAX_SQL_CHARS` characters or nesting
  brackets deeper than :data:`MAX_NESTING` is refused before parsing.

Comments never decide anything: ``/* SELECT */ DELETE …`` is parsed, and it is
a DELETE. A lens may allow-list a denied function by name; never a write.

Clock reads (``CURRENT_DATE``, ``NOW()``, ``GETDATE()``, SQLite's
``date('now')`` …) are found by :func:`reads_current_date` and replaced by a
literal by :func:`pin_current_date`, so a certified question with a relative
date runs at the lens's pinned ``as_of`` (DESIGN §4 step 4).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, UnsupportedError

from reconciler.errors import UnsafeSqlError, UsageError
from reconciler.guard.bounds import (
    MAX_NESTING as MAX_NESTING,
    MAX_SQL_CHARS as MAX_SQL_CHARS,
    SIZE_FIX,
    check_bounds as check_bounds,
)
from reconciler.guard.calls import check_call
from reconciler.guard.comments import check_comments
from reconciler.guard.denied import (
    FORBIDDEN_FUNCTIONS,
    FORBIDDEN_PREFIXES,
    FORBIDDEN_SUFFIXES,
    check_escapes,
)
from reconciler.guard.mysql import fill_gaps as fill_mysql_gaps
from reconciler.guard.postgres import fill_gaps as fill_postgres_gaps
from reconciler.guard.system import check_table
from reconciler.guard.variables import VARIABLE_NODES, refuse_variable

_FIX = (
    "certified and exemplar SQL must be a single SELECT (WITH … SELECT, UNION …) and nothing else"
)
_FILE_FIX = "query the warehouse's tables; load files into the embedded warehouse with `dst seed`"


def _classes(*names: str) -> tuple[type[exp.Expr], ...]:
    # sqlglot adds expression classes over releases; take the ones this version has.
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


_NO_STATEMENT = _classes("Semicolon")
_QUERY_ROOTS = _classes("Select", "SetOperation", "Union", "Intersect", "Except", "Subquery")
_FORBIDDEN_NODES = _classes(
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Copy",
    "Attach", "Detach", "Pragma", "Set", "Transaction", "Commit", "Rollback", "Use", "Into",
    "Lock", "TruncateTable", "LoadData", "Grant", "Revoke", "Describe", "Install", "Export",
    "Analyze", "Cache", "Uncache", "Refresh", "Kill", "Summarize", "Show", "Execute",
    "Declare", "Comment",
)  # fmt: skip


# A table reference DuckDB would resolve as a file or URL ("replacement scan").
_FILE_SUFFIXES = (
    ".csv", ".tsv", ".txt", ".parquet", ".json", ".jsonl", ".ndjson", ".gz", ".zst", ".xlsx",
    ".arrow", ".avro", ".db", ".duckdb", ".sqlite", ".sqlite3",
)  # fmt: skip

ClockKind = Literal["date", "time", "timestamp"]

_CLOCK_NODES: tuple[tuple[tuple[type[exp.Expr], ...], ClockKind], ...] = (
    (_classes("CurrentDate", "UtcDate"), "date"),
    (_classes("CurrentTime", "Localtime", "UtcTime"), "time"),
    (
        _classes(
            "CurrentTimestamp",
            "CurrentDatetime",
            "Localtimestamp",
            "CurrentTimestampLTZ",
            "Systimestamp",
            "UtcTimestamp",
        ),
        "timestamp",
    ),
)
# Clock functions sqlglot leaves as Anonymous in some dialects (lowercase names).
_CLOCK_FUNCTIONS: dict[str, ClockKind] = {
    "today": "date", "curdate": "date", "current_date": "date", "utc_date": "date",
    "curtime": "time", "current_time": "time", "get_current_time": "time",
    "localtime": "time", "utc_time": "time",
    "now": "timestamp", "getdate": "timestamp", "getutcdate": "timestamp",
    "sysdate": "timestamp", "systimestamp": "timestamp", "sysdatetime": "timestamp",
    "sysutcdatetime": "timestamp", "sysdatetimeoffset": "timestamp",
    "current_timestamp": "timestamp", "get_current_timestamp": "timestamp",
    "current_localtimestamp": "timestamp", "localtimestamp": "timestamp",
    "transaction_timestamp": "timestamp", "statement_timestamp": "timestamp",
    "clock_timestamp": "timestamp", "utc_timestamp": "timestamp", "timeofday": "timestamp",
}  # fmt: skip
# Called with no argument, these read the clock (MySQL, DuckDB's epoch helpers).
_CLOCK_WHEN_NULLARY = frozenset({"unix_timestamp"})
# PostgreSQL special date/time input strings ('now'::date, DATE 'today'); SQLite's
# date('now'), strftime('%Y', 'now') …; value → day offset from as_of.
_CLOCK_STRINGS = {"now": 0, "today": 0, "yesterday": -1, "tomorrow": 1}


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    # sqlglot logs a warning whenever it falls back to a generic Command; the guard
    # refuses Commands with its own message, so that log line is only noise.
    def drop(record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()

    logger = logging.getLogger("sqlglot")
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def parse_query(sql: str, dialect: str) -> exp.Expr:
    """Parse SQL that must be exactly one statement.

    Args:
        sql: the statement text; a trailing ``;`` and comments are fine.
        dialect: a sqlglot dialect name.

    Returns:
        The statement's syntax tree (not yet checked for safety).

    Raises:
        UnsafeSqlError: it is longer than :data:`MAX_SQL_CHARS` characters, nests
            brackets deeper than :data:`MAX_NESTING`, does not parse, or holds
            zero or several statements.
    """
    # Callers may change the tree they get; the memo keeps its own.
    return shared_query(sql, dialect).copy()


def shared_query(sql: str, dialect: str) -> exp.Expr:
    """:func:`parse_query`'s tree itself, parsed once per text and dialect: read, never change.

    The comparator's ORDER BY reading, the probes and the gates only read a
    statement, and a suite reads the same oracle and generated statements many
    times over: they share the one tree the memo keeps (4,096 texts) instead of
    each taking a deep copy. A caller that changes a tree (``set``, ``replace``,
    making a node another's child) must use :func:`parse_query`, or ``copy()``.

    Raises:
        UnsafeSqlError: as :func:`parse_query` (a fresh error each time).
    """
    check_bounds(sql)  # first: an oversized text is never kept
    parsed = _parsed(sql, dialect)
    if isinstance(parsed, tuple):
        raise UnsafeSqlError(parsed[0], fix=parsed[1])
    return parsed


# The suite parses each oracle several times: copying a kept tree costs less than a parse.
@functools.lru_cache(maxsize=4096)
def _parsed(sql: str, dialect: str) -> exp.Expr | tuple[str, str]:
    try:
        with _quiet_sqlglot():
            # a comment after the last `;` parses as an empty Semicolon statement
            statements = [
                s
                for s in sqlglot.parse(sql, read=dialect)
                if s is not None and not isinstance(s, _NO_STATEMENT)
            ]
    except ParseError as exc:
        first = exc.errors[0]["description"] if exc.errors else str(exc)
        return f"SQL does not parse as {dialect}: {first}", _FIX
    except RecursionError:
        return "SQL is nested too deeply to validate", SIZE_FIX
    if len(statements) != 1:
        return f"expected exactly one statement, found {len(statements)}", _FIX
    return statements[0]


def check_read_only(sql: str, dialect: str, *, allow_functions: Collection[str] = ()) -> exp.Expr:
    """Accept exactly one read-only query.

    Comments and statement order never decide: the text is parsed and every
    statement and node is judged (``/* SELECT */ DELETE …`` is a DELETE).

    Args:
        sql: the statement text, at most :data:`MAX_SQL_CHARS` characters.
        dialect: a sqlglot dialect name (``duckdb``, ``postgres``, ``sqlite`` …).
        allow_functions: lowercase names of otherwise denied functions to accept
            (a lens that needs, say, ``nextval`` names it); nodes that write are
            never allowed.

    Returns:
        The parsed query.

    Raises:
        UnsafeSqlError: several statements, a root that is not a query, or
            anywhere in the tree a node that writes, loads, attaches, locks or
            configures, a call to a function that reads files/URLs/other
            databases or has side effects, or a table named like a file.
    """
    tree = parse_query(sql, dialect)  # first: it bounds the text before it is read again
    check_escapes(sql, dialect)
    check_comments(sql, dialect)
    if not isinstance(tree, _QUERY_ROOTS):
        # A generic Command keeps its leading keyword (CALL, LOAD, VACUUM …) in `this`;
        # an unknown bare keyword (CHECKPOINT, ABORT) parses as a column or alias.
        if isinstance(tree, exp.Command):
            kind = str(tree.this)
        elif isinstance(tree, (exp.Column, exp.Alias, exp.Identifier, exp.Literal)):
            kind = (tree.sql(dialect=dialect).split() or ["expression"])[0]
        else:
            kind = tree.key
        raise UnsafeSqlError(f"{kind.upper()} statement is not a query", fix=_FIX)
    allowed = frozenset(f.lower() for f in allow_functions)
    _check_nodes(tree, what="query", allowed=allowed, sql=sql, dialect=dialect)
    return tree


def parse_expression(sql: str, dialect: str, *, allow_functions: Collection[str] = ()) -> exp.Expr:
    """Parse a SQL expression (a metric, a filter, a column ``expr``).

    Args:
        sql: the expression text, e.g. ``sum(amount) filter (where not refunded)``.
        dialect: a sqlglot dialect name.
        allow_functions: lowercase names of otherwise denied functions to accept
            (a lens's ``allow_functions``).

    Returns:
        The parsed expression.

    Raises:
        UnsafeSqlError: it does not parse, or holds a subquery, a write or a
            forbidden function.
    """
    fix = "write a SQL expression over the model's columns"
    check_escapes(sql, dialect)
    check_comments(sql, dialect)
    try:
        with _quiet_sqlglot():
            tree = sqlglot.parse_one(sql, read=dialect, into=exp.Condition)
    except ParseError as exc:
        first = exc.errors[0]["description"] if exc.errors else str(exc)
        raise UnsafeSqlError(f"expression {sql!r} does not parse: {first}", fix=fix) from None
    for node in tree.walk():
        if isinstance(node, (*_FORBIDDEN_NODES, exp.Select)):
            raise UnsafeSqlError(
                f"expression {sql!r} may not contain a {node.key.upper()}", fix=fix
            )
    allowed = frozenset(f.lower() for f in allow_functions)
    _check_nodes(tree, what=f"expression {sql!r}", allowed=allowed, sql=sql, dialect=dialect)
    return tree


# Loading a lens checks every expression and query it holds, and a plan loads two
# versions of a lens (serving and candidate) that share nearly all of that text:
# the verdicts are pure in (sql, dialect), so they are memoized by text.
@functools.lru_cache(maxsize=8192)
def expression_problem(
    sql: str, dialect: str, allow_functions: tuple[str, ...] = ()
) -> tuple[str, str | None] | None:
    """Why :func:`parse_expression` refuses ``sql``: ``(message, fix)``, else ``None``."""
    try:
        parse_expression(sql, dialect, allow_functions=allow_functions)
    except UnsafeSqlError as exc:
        return exc.message, exc.fix
    return None


@functools.lru_cache(maxsize=8192)
def query_problem(
    sql: str, dialect: str, allow_functions: tuple[str, ...] = ()
) -> tuple[str, str | None] | None:
    """Why :func:`check_read_only` refuses ``sql``: ``(message, fix)``, else ``None``."""
    try:
        check_read_only(sql, dialect, allow_functions=allow_functions)
    except UnsafeSqlError as exc:
        return exc.message, exc.fix
    return None


# A suite runs the same statements run after run: a kept verdict costs a look-up, not a parse.
@functools.lru_cache(maxsize=4096)
def _verdict(sql: str, dialect: str, allowed: frozenset[str]) -> exp.Expr | tuple[str, str | None]:
    try:
        return check_read_only(sql, dialect, allow_functions=allowed)
    except UnsafeSqlError as exc:
        return exc.message, exc.fix


def checked_query(sql: str, dialect: str, *, allow_functions: Collection[str] = ()) -> exp.Expr:
    """:func:`check_read_only`, its verdict kept by text, dialect and allow-list (4,096 kept).

    Returns:
        The parsed query, shared between callers: ``copy()`` it before changing it.

    Raises:
        UnsafeSqlError: as :func:`check_read_only` (a fresh error each time).
    """
    verdict = _verdict(sql, dialect, frozenset(f.lower() for f in allow_functions))
    if isinstance(verdict, tuple):
        raise UnsafeSqlError(verdict[0], fix=verdict[1])
    return verdict


def _check_nodes(
    tree: exp.Expr, *, what: str, allowed: frozenset[str], sql: str, dialect: str
) -> None:
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise UnsafeSqlError(
                f"{what} contains a {node.key.upper()} clause, which is not read-only", fix=_FIX
            )
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise UnsafeSqlError(f"{what} takes row locks (FOR UPDATE/SHARE)", fix=_FIX)
        if isinstance(node, VARIABLE_NODES):
            raise refuse_variable(node, what=what, dialect=dialect)
        if isinstance(node, exp.Func):
            name = function_name(node)
            if name not in allowed and (
                name in FORBIDDEN_FUNCTIONS
                or name.startswith(FORBIDDEN_PREFIXES)
                or name.endswith(FORBIDDEN_SUFFIXES)
            ):
                raise UnsafeSqlError(
                    f"{what} calls {name}(), which reaches outside the warehouse, "
                    "runs SQL text or has side effects",
                    fix=_FILE_FIX,
                )
            check_call(node, sql, dialect, allowed=allowed, what=what)  # the allow-list
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            check_table(node, dialect, what=what)
            table = node.this.name.lower()
            if any(c in table for c in "/\\:") or table.endswith(_FILE_SUFFIXES):
                raise UnsafeSqlError(
                    f"{what} reads {node.this.name!r}, which names a file or URL, not a table",
                    fix=_FILE_FIX,
                )


def function_name(node: exp.Func) -> str:
    """The lowercase SQL name of a function call (``read_csv``, ``now``, ``sum``)."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return node.sql_name().lower()


def tables_read(sql: str, dialect: str) -> frozenset[str]:
    """Physical tables a query reads (lowercase, unqualified), CTE names excluded."""
    tree = parse_query(sql, dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return frozenset(
        t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes
    )


def _clock_kind(node: exp.Expr) -> ClockKind | None:
    for classes, kind in _CLOCK_NODES:
        if isinstance(node, classes):
            return kind
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name in _CLOCK_FUNCTIONS:
            return _CLOCK_FUNCTIONS[name]
        if name in _CLOCK_WHEN_NULLARY and not node.expressions:
            return "timestamp"
    return None


def _clock_string(node: exp.Expr) -> int | None:
    """Day offset of a clock-reading string literal ('now', 'today' …), else None.

    Only a literal cast to a type (``'now'::date``, ``DATE 'today'``) or passed to
    a function (SQLite's ``date('now')``) counts; ``WHERE status = 'now'`` does not.
    """
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    offset = _CLOCK_STRINGS.get(node.this.strip().lower())
    if offset is None:
        return None
    parent = node.parent
    if isinstance(parent, (exp.Cast, exp.TryCast)):
        return offset
    if isinstance(parent, exp.Func) and node.this.strip().lower() == "now":
        return offset
    return None


def reads_current_date(sql: str | exp.Expr, dialect: str) -> bool:
    """Whether a query reads the clock.

    Detects CURRENT_DATE/TIME/TIMESTAMP, LOCALTIME[STAMP], NOW(), TODAY(),
    GETDATE(), SYSDATE, SYSDATETIME(), transaction/statement/clock_timestamp(),
    nullary UNIX_TIMESTAMP(), PostgreSQL's ``'now'::date``/``DATE 'today'`` and
    SQLite's ``date('now')``.

    Args:
        sql: the query text, or its already parsed tree.
        dialect: a sqlglot dialect name (used when ``sql`` is text).

    Raises:
        UnsafeSqlError: ``sql`` is text that does not parse as one statement.
    """
    tree = parse_query(sql, dialect) if isinstance(sql, str) else sql
    return any(
        _clock_kind(node) is not None or _clock_string(node) is not None for node in tree.walk()
    )


def pin_current_date(
    tree_or_sql: str | exp.Expr, as_of: str, dialect: str, *, parsed: exp.Expr | None = None
) -> str:
    """Replace every clock read with a literal of the pinned day.

    The clock is taken to read the *start* of the ``as_of`` day, so results do
    not depend on the hour a suite runs:

    * date reads (CURRENT_DATE, TODAY(), CURDATE() …) → ``CAST('YYYY-MM-DD' AS DATE)``
    * timestamp reads (CURRENT_TIMESTAMP, NOW(), GETDATE(), SYSDATE …) →
      ``CAST('YYYY-MM-DD 00:00:00' AS TIMESTAMP)`` (a zone-less timestamp, even
      where the original returned ``timestamptz``)
    * time reads (CURRENT_TIME, LOCALTIME …) → ``CAST('00:00:00' AS TIME)``
    * nullary UNIX_TIMESTAMP() → UNIX_TIMESTAMP(the pinned timestamp)
    * clock strings: ``'now'``/``'today'`` → ``'YYYY-MM-DD'`` under a DATE cast,
      else ``'YYYY-MM-DD 00:00:00'``; ``'yesterday'``/``'tomorrow'`` shift a day.

    Each dialect's generator spells the casts its own way (SQLite: ``DATE('…')``).

    Args:
        tree_or_sql: the query text or its parsed tree (not modified).
        as_of: the pinned day, ``YYYY-MM-DD``.
        dialect: the sqlglot dialect to parse (text) and generate.
        parsed: the text's tree as :func:`parse_query` (or :func:`check_read_only`)
            already returned it, so the text is not parsed a second time.

    Returns:
        SQL in ``dialect``. Text without a clock read is returned unchanged.

    Raises:
        UsageError: ``as_of`` is not a calendar date.
        UnsafeSqlError: text that does not parse as one statement.
    """
    try:
        day = dt.date.fromisoformat(as_of)
    except ValueError:
        raise UsageError(
            f"as_of {as_of!r} is not a calendar date", fix='write as_of: "YYYY-MM-DD"'
        ) from None
    if isinstance(tree_or_sql, str):
        tree = parsed if parsed is not None else parse_query(tree_or_sql, dialect)
        if not reads_current_date(tree, dialect):
            return tree_or_sql
    else:
        tree = tree_or_sql

    def stamp(offset: int = 0) -> str:
        return f"{(day + dt.timedelta(days=offset)).isoformat()} 00:00:00"

    def replace(node: exp.Expr) -> exp.Expr:
        offset = _clock_string(node)
        if offset is not None:
            cast = node.parent
            to_date = isinstance(cast, (exp.Cast, exp.TryCast)) and cast.to.is_type("date")
            text = stamp(offset)[:10] if to_date else stamp(offset)
            return exp.Literal.string(text)
        kind = _clock_kind(node)
        if kind is None:
            return node
        if isinstance(node, exp.Anonymous) and node.name.lower() in _CLOCK_WHEN_NULLARY:
            pinned = exp.cast(exp.Literal.string(stamp()), exp.DataType.build("timestamp"))
            return exp.Anonymous(this=node.name, expressions=[pinned])
        if kind == "date":
            return exp.cast(exp.Literal.string(day.isoformat()), exp.DataType.build("date"))
        if kind == "time":
            return exp.cast(exp.Literal.string("00:00:00"), exp.DataType.build("time"))
        return exp.cast(exp.Literal.string(stamp()), exp.DataType.build("timestamp"))

    pinned_tree = tree.transform(replace)
    return pinned_tree.sql(dialect=dialect)


_TRANSPILE_FIX = (
    "write the statement so it means the same in both dialects, or set `dialect:` in "
    "lens.yaml to the warehouse's dialect"
)


def transpile(sql: str, source: str, target: str, *, expression: bool = False) -> str:
    """Carry one statement (or expression) from the lens's dialect to the warehouse's.

    DESIGN §2 "Dialect": a lens's SQL is written in its ``dialect:``; on a
    warehouse of another dialect it runs transpiled. sqlglot generates with
    ``ErrorLevel.RAISE``, so a construct it cannot express in ``target`` is an
    error rather than SQL that silently means something else.

    Args:
        sql: one query (or, with ``expression``, one SQL expression) in ``source``.
        source: the sqlglot dialect the text is written in (the lens's).
        target: the sqlglot dialect of the warehouse.
        expression: parse ``sql`` as an expression (a dimension's column SQL).

    Returns:
        The text in ``target``; unchanged when both dialects are the same.

    Raises:
        UnsafeSqlError: the text does not parse in ``source`` (as one statement), or
            sqlglot cannot carry it over to ``target`` ("cannot transpile …").
    """
    if source == target:
        return sql
    try:
        with _quiet_sqlglot():
            tree: exp.Expr
            if expression:
                tree = sqlglot.parse_one(sql, read=source, into=exp.Condition)
            else:
                tree = parse_query(sql, source)
            tree = _fill_gaps(tree, target)
            return tree.sql(dialect=target, unsupported_level=ErrorLevel.RAISE)
    except (UnsupportedError, ParseError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsafeSqlError(
            f"cannot transpile SQL from {source} to {target}: {first}", fix=_TRANSPILE_FIX
        ) from None


def _fill_gaps(tree: exp.Expr, target: str) -> exp.Expr:
    """Rewrite what sqlglot parses but generates wrongly for ``target``
    (:mod:`reconciler.guard.mysql`, :mod:`reconciler.guard.postgres`)."""
    if target == "mysql":
        return fill_mysql_gaps(tree)
    if target in ("postgres", "redshift"):
        return fill_postgres_gaps(tree)
    return tree
