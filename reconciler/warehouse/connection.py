"""The warehouse edge: resolve a URL, run guarded read-only queries, seed the embedded DuckDB.

Every statement passes two independent defences (DESIGN §4 step 1):

1. the statement-level guard (:func:`reconciler.guard.check_read_only`), and
2. a connection that cannot write, per backend:

   ====================  ==============================================================
   DuckDB                opened ``read_only`` with ``enable_external_access=false`` and
                         ``lock_configuration=true``; timeout by ``interrupt()``
   PostgreSQL            ``default_transaction_read_only=on`` in the startup packet
                         (checked with ``SHOW transaction_read_only`` on open), then
                         ``SET TRANSACTION READ ONLY`` and a query setting the local
                         ``statement_timeout`` first in every transaction (after a
                         query the mode can no longer be switched); results read
                         through a server-side cursor, which only admits queries; a
                         read-only role (README) stops what a read-only transaction
                         allows (file reads, signalling other sessions), and a login
                         that could write is refused for answer SQL (:mod:`.privilege`)
   MariaDB / MySQL       ``SET SESSION TRANSACTION READ ONLY`` on every new connection
                         (checked with ``@@transaction_read_only`` on open), then
                         ``START TRANSACTION READ ONLY`` with ``max_statement_time``
                         (MariaDB) or ``max_execution_time`` (MySQL) set first; a lens's
                         tables are named with their database (:mod:`.mysql`), and
                         an account that could write is refused for answer SQL
                         (:func:`.mysql.write_privilege`, through :mod:`.privilege`)
   SQLite                ``mode=ro`` URI, ``PRAGMA query_only``, no ATTACH (so no
                         ``VACUUM INTO``), only reporting PRAGMAs; timeout by
                         ``interrupt()``
   anything else         plain SQLAlchemy; only the guard, the always-rolled-back
                         transaction and the account's grants protect the data
   ====================  ==============================================================

Every transaction is rolled back, never committed. Results are never rewritten
with ``LIMIT``: ``row_cap + 1`` rows are fetched and the extra one only marks the
result as truncated.

Credentials never leave this module: every message shows :func:`redact`'s form
of the URL, and driver messages are scrubbed of the password.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlglot.dialects.dialect import Dialect

from reconciler.errors import UsageError, WarehouseError
from reconciler.resultset import ResultSet
from reconciler.warehouse import mysql, privilege, readonly, search_path as paths
from reconciler.warehouse.duck import DuckWarehouse, plain_file
from reconciler.warehouse.guarded import GuardedWarehouse
from reconciler.warehouse.timeouts import WATCHDOG, Alarm

ENV_VAR = "DST_WAREHOUSE_URL"
EMBEDDED_DIR = ".dst"
EMBEDDED_FILE = "warehouse.duckdb"

# SQLAlchemy backend name -> sqlglot dialect name, where they differ.
_SQLGLOT_DIALECT = {"postgresql": "postgres", "mssql": "tsql", "mariadb": "mysql",
                    "awsathena": "athena"}  # fmt: skip
_SECRET_KEY = re.compile(r"pass|secret|token|key|credential", re.IGNORECASE)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PG_QUERY_CANCELED = "57014"
_RAW_OPTIONS = {"no_parameters": True}  # no driver %-interpolation of the SQL text


def embedded_path(repo_root: Path) -> Path:
    """Where the embedded warehouse lives: ``<repo_root>/.dst/warehouse.duckdb``."""
    return repo_root / EMBEDDED_DIR / EMBEDDED_FILE


def is_embedded(url: str) -> bool:
    """Whether ``url`` is a DuckDB file ``dst seed`` builds (``…/.dst/warehouse.duckdb``)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return False
    if parsed.get_backend_name() != "duckdb" or not parsed.database:
        return False
    path = Path(parsed.database)
    return path.name == EMBEDDED_FILE and path.parent.name == EMBEDDED_DIR


def resolve_url(
    cli_url: str | None,
    env: Mapping[str, str],
    lens_url: str | None,
    repo_config_url: str | None,
    repo_root: Path,
    *,
    environment_url: tuple[str, str | None] | None = None,
) -> tuple[str, str]:
    """Pick the warehouse URL by the precedence of DESIGN §7.

    ``--warehouse`` > ``DST_WAREHOUSE_URL`` > the environment's ``warehouse:`` (with
    ``--env``) > the lens's ``warehouse:`` >
    ``dst.yaml``'s ``warehouse:`` > the embedded DuckDB file. Empty values count
    as unset. URLs read from repository files may reference environment
    variables as ``${NAME}`` (so passwords stay out of git), and a relative
    DuckDB/SQLite file path in them is taken relative to ``repo_root``.

    Args:
        cli_url: the ``--warehouse`` option.
        env: the process environment (``os.environ``).
        lens_url: ``warehouse:`` from ``lens.yaml``.
        repo_config_url: ``warehouse:`` from ``dst.yaml`` at the repository root.
        repo_root: the repository's working directory.
        environment_url: ``(label, url)`` of the named environment's ``warehouse:``
            in ``dst.yaml`` (the label names it in messages), or ``None``.

    Returns:
        ``(url, source)``; ``source`` names where it came from for messages:
        ``--warehouse``, ``DST_WAREHOUSE_URL``, ``lens warehouse:``,
        ``dst.yaml warehouse:`` or ``embedded default``. Show the URL only
        through :func:`redact`.

    Raises:
        UsageError: the chosen value is not a SQLAlchemy URL, or references an
            unset environment variable.
    """
    candidates = (
        (cli_url, "--warehouse", False),
        (env.get(ENV_VAR), ENV_VAR, False),
        *(((environment_url[1], environment_url[0], True),) if environment_url else ()),
        (lens_url, "lens warehouse:", True),
        (repo_config_url, "dst.yaml warehouse:", True),
    )
    for value, source, from_repo in candidates:
        if value is None or not value.strip():
            continue
        url = value.strip()
        if from_repo:
            url = _expand_env(url, env, source)
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError):
            raise UsageError(
                f"{source} is not a SQLAlchemy URL",
                fix="write it as dialect+driver://user@host/database, e.g. "
                "postgresql://analyst@db:5432/sales or duckdb:///path/to/file.duckdb",
            ) from None
        if from_repo:
            url = _anchor_file(parsed, repo_root) or url
        return url, source
    return f"duckdb:///{embedded_path(repo_root).as_posix()}", "embedded default"


def _expand_env(url: str, env: Mapping[str, str], source: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise UsageError(
                f"{source} references ${{{name}}}, which is not set",
                fix=f"export {name}, or pass --warehouse / set {ENV_VAR}",
            )
        return env[name]

    return _ENV_REF.sub(value, url)


def _anchor_file(parsed: URL, repo_root: Path) -> str | None:
    """The URL with a relative DuckDB/SQLite file made absolute under ``repo_root``."""
    database = parsed.database
    if parsed.get_backend_name() not in ("duckdb", "sqlite") or not database:
        return None
    if database == ":memory:" or database.startswith(("file:", "md:")):
        return None
    if Path(database).is_absolute():
        return None
    anchored = parsed.set(database=(repo_root / database).as_posix())
    return anchored.render_as_string(hide_password=False)


def redact(url: str) -> str:
    """A URL safe to print: password and secret-looking query values become ``***``.

    Args:
        url: a SQLAlchemy URL.

    Returns:
        The URL with credentials hidden, or ``<unparseable warehouse URL>``
        (never the raw text, which may hold a password).
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "<unparseable warehouse URL>"
    # A placeholder that survives URL escaping, swapped for *** once rendered.
    mark = "dstREDACTEDdst"
    hidden = {k: (mark if _SECRET_KEY.search(k) else v) for k, v in parsed.query.items()}
    return parsed.set(query=hidden).render_as_string(hide_password=True).replace(mark, "***")


def _engine_options(parsed: URL, shown: str, pool_size: int | None) -> tuple[URL, dict[str, Any]]:
    """The URL as the backend's driver should get it, and ``create_engine`` options."""
    backend = parsed.get_backend_name()
    options: dict[str, Any] = {}
    if backend == "duckdb":
        parsed, options = readonly.duckdb_options(parsed, shown)
    elif backend == "sqlite":
        parsed = readonly.sqlite_url(parsed)
    elif backend == "postgresql" and parsed.get_driver_name() in ("psycopg2", "psycopg"):
        parsed, options["connect_args"] = readonly.postgres_options(parsed)
    elif backend in mysql.BACKENDS:
        parsed, options["connect_args"] = mysql.connect_args(parsed)
    if backend not in ("duckdb", "sqlite"):
        options["pool_pre_ping"] = True
    else:
        # Every statement's transaction is ended by _read_only (rollback, or the
        # connection is invalidated), so the pool's rollback on check-in would be a
        # second one per statement: on a local database, a measurable share of a query.
        options["pool_reset_on_return"] = None
    if pool_size is not None and pool_size > 5:
        options["pool_size"] = pool_size  # one pooled connection per suite worker
    return parsed, options


def _first_line(exc: BaseException | None, secret: str | None) -> str:
    text = str(exc).strip() if exc is not None else ""
    line = text.splitlines()[0] if text else type(exc).__name__
    return line.replace(secret, "***") if secret else line


class Warehouse(GuardedWarehouse):
    """A pool of read-only connections to one warehouse.

    Open with :meth:`open`; close with :meth:`close` or use as a context manager.

    Attributes:
        dialect: the sqlglot dialect name of the backend (``duckdb``,
            ``postgres``, ``sqlite``, ``mysql``, ``tsql`` …).
        display_url: the redacted URL, for messages.
        warnings: lines worth printing once about the connection (none today; kept for
            the callers of both warehouse kinds).
        write_access: why the login could write, one phrase each, read once when the
            warehouse opens (:func:`reconciler.warehouse.privilege.write_access`); ``()``
            when it cannot. The caller refuses answer SQL on such a connection.
    """

    def __init__(
        self, engine: Engine, *, dialect: str, display_url: str, secret: str | None
    ) -> None:
        self._engine = engine
        self._secret = secret
        self.dialect = dialect
        self.display_url = display_url
        self._backend = engine.dialect.name
        self._schemas: frozenset[str] | None = None
        self._database = engine.url.database or None
        self._tables: dict[str, dict[str, str]] | None = None
        self.warnings: tuple[str, ...] = ()
        self.write_access: tuple[str, ...] = ()

    @classmethod
    def open(cls, url: str, *, pool_size: int | None = None) -> Warehouse | DuckWarehouse:
        """Connect to ``url`` read-only and check that it answers.

        A bare ``postgresql://`` URL uses psycopg (3) when installed, else psycopg2.

        Args:
            url: a SQLAlchemy URL (see :func:`resolve_url`).
            pool_size: connections kept open for concurrent suite workers (``--jobs``);
                ``None`` keeps SQLAlchemy's default of 5.

        Returns:
            An open warehouse; :attr:`write_access` says whether its login could
            write (the caller decides what to do with it). A plain ``duckdb:///path``
            URL opens DuckDB directly (:class:`~reconciler.warehouse.duck.DuckWarehouse`).

        Raises:
            WarehouseError: the URL does not parse, its driver is not installed,
                its dialect has no sqlglot equivalent, a DuckDB file does not
                exist (fix: ``dst seed``), or the first connection fails. The
                message shows the redacted URL only.
        """
        if plain_file(url) is not None:
            return DuckWarehouse.open(url)
        shown = redact(url)
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError):
            raise WarehouseError(
                "the warehouse URL is not a SQLAlchemy URL",
                fix="write it as dialect+driver://user@host/database",
            ) from None
        parsed = readonly.with_installed_driver(parsed)
        backend = parsed.get_backend_name()
        dialect = _SQLGLOT_DIALECT.get(backend, backend)
        if Dialect.get(dialect) is None:
            raise WarehouseError(
                f"warehouse {shown}: SQLAlchemy dialect {backend!r} has no sqlglot equivalent",
                fix="use a warehouse whose SQL dialect sqlglot supports",
            )
        parsed, options = _engine_options(parsed, shown, pool_size)
        try:
            engine = sa.create_engine(parsed, **options)
        except (NoSuchModuleError, ImportError) as exc:
            raise WarehouseError(
                f"warehouse {shown}: no driver installed ({_first_line(exc, parsed.password)})",
                fix=readonly.missing_driver_fix(backend),
            ) from None
        if backend == "sqlite":
            sa.event.listen(engine, "connect", readonly.lock_down_sqlite)
        elif backend in mysql.BACKENDS:
            sa.event.listen(engine, "connect", mysql.lock_down)
        secret = str(parsed.password) if parsed.password else None
        warehouse = cls(engine, dialect=dialect, display_url=shown, secret=secret)
        try:
            with engine.connect() as conn:
                if backend == "postgresql":
                    readonly.check_postgres_session(conn, shown)
                elif backend in mysql.BACKENDS:
                    mysql.check_session(conn, shown)
                warehouse.write_access = privilege.write_access(dialect, _rows_of(conn))
                conn.rollback()
        except SQLAlchemyError as exc:
            engine.dispose()
            cause = exc.orig if isinstance(exc, DBAPIError) else exc
            raise WarehouseError(
                f"warehouse {shown} is not reachable: {_first_line(cause, secret)}",
                fix="check the URL, the network and the credentials (--warehouse, "
                f"{ENV_VAR}, the lens's or dst.yaml's warehouse:)",
            ) from None
        except WarehouseError:
            engine.dispose()
            raise
        return warehouse

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every pooled connection. Idempotent."""
        self._engine.dispose()

    def schemas(self) -> frozenset[str]:
        """The schema names the warehouse holds, read once (as stored).

        Returns:
            The names; ``frozenset()`` for a backend without a search path (SQLite …).

        Raises:
            WarehouseError: the catalog query failed.
        """
        if self._schemas is None:
            if self._backend == "postgresql":
                sql = "SELECT nspname FROM pg_catalog.pg_namespace"
            elif self._backend in mysql.BACKENDS:
                with self._read_only(30.0) as conn:
                    held = mysql.databases(conn)
                lenses = (mysql.lens_of(self._database, name) for name in held)
                self._schemas = frozenset(name for name in lenses if name)
                return self._schemas
            elif self._backend == "duckdb":
                sql = (
                    "SELECT schema_name FROM information_schema.schemata "
                    "WHERE catalog_name = current_database()"
                )
            else:
                self._schemas = frozenset()
                return self._schemas
            result = self._execute_raw(sql, row_cap=100_000, timeout_s=30.0)
            self._schemas = frozenset(str(row[0]) for row in result.rows)
        return self._schemas

    def _execute_raw(
        self, sql: str, *, row_cap: int, timeout_s: float, search_path: Sequence[str] = ()
    ) -> ResultSet:
        """Run ``sql`` on a read-only connection without the guard (tests call this)."""
        if row_cap < 0:
            raise ValueError(f"row_cap must be >= 0, got {row_cap}")
        started = time.monotonic()
        if search_path and self._backend in mysql.BACKENDS:
            sql = self._qualified(sql, search_path)
        with self._read_only(timeout_s, search_path) as conn:
            options = dict(_RAW_OPTIONS)
            if self._backend in ("postgresql", *mysql.BACKENDS):
                options["stream_results"] = True  # server-side cursor: fetch only cap + 1
            result = conn.exec_driver_sql(sql, execution_options=options)
            if not result.returns_rows:
                return ResultSet((), (), False, time.monotonic() - started)
            columns = tuple(map(str, result.keys()))
            fetched = result.fetchmany(row_cap + 1)
            result.close()
        rows = tuple(tuple(row) for row in fetched[:row_cap])
        return ResultSet(columns, rows, len(fetched) > row_cap, time.monotonic() - started)

    def _qualified(self, sql: str, search_path: Sequence[str]) -> str:
        """MySQL has no search path: name each table's database (:func:`mysql.qualify`)."""
        path = [mysql.lens_database(self._database, name) for name in search_path]
        path += [self._database] if self._database else []
        if self._tables is None:
            with self._read_only(30.0) as conn:
                held = mysql.databases(conn)
                mine = {d for d in held if mysql.lens_of(self._database, d) or d in path}
                self._tables = mysql.tables(conn, mine)
        return mysql.qualify(sql, path, self._tables)

    @contextmanager
    def _read_only(self, timeout_s: float, search_path: Sequence[str] = ()) -> Iterator[Connection]:
        """A connection inside a read-only transaction with the timeout and search path set."""
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        interrupt = _Interrupt()
        try:
            with self._engine.connect() as conn:
                try:
                    if self._backend == "postgresql":
                        ms = max(1, round(timeout_s * 1000))
                        conn.exec_driver_sql("SET TRANSACTION READ ONLY", _RAW_OPTIONS)
                        # A query (not SET LOCAL): once one has run, PostgreSQL refuses to
                        # switch the transaction back to read-write, even from a
                        # multi-statement string that begins `SET transaction_read_only = off`.
                        settings = f"set_config('statement_timeout', '{ms}', true)"
                        if search_path:
                            settings += f", {paths.postgres_search_path(search_path)}"
                        conn.exec_driver_sql(f"SELECT {settings}", _RAW_OPTIONS)
                    elif self._backend in mysql.BACKENDS:
                        mysql.begin(conn, timeout_s)
                    else:
                        if self._backend == "duckdb":
                            paths.set_duckdb_search_path(conn, search_path)
                        interrupt.arm(conn, timeout_s)
                    yield conn
                finally:
                    interrupt.disarm()
                    if interrupt.fired:
                        # An interrupt may linger on an idle connection; never reuse it.
                        conn.invalidate()
                    else:
                        try:
                            conn.rollback()
                        except SQLAlchemyError:
                            conn.invalidate()
        except DBAPIError as exc:
            if (
                interrupt.fired
                or _sqlstate(exc.orig) == _PG_QUERY_CANCELED
                or (self._backend in mysql.BACKENDS and mysql.is_timeout(exc.orig))
            ):
                raise WarehouseError(
                    f"query timed out after {timeout_s:g} s on {self.display_url}",
                    fix="make the query cheaper, or raise statement_timeout_s in lens.yaml",
                ) from None
            raise WarehouseError(
                f"query failed on {self.display_url}: {_first_line(exc.orig, self._secret)}",
                fix=f"check the SQL against the warehouse's tables and its {self.dialect} dialect",
            ) from None


class _Interrupt:
    """A timer that interrupts a DuckDB/SQLite connection once the timeout passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._alarm: Alarm | None = None
        self._done = False
        self.fired = False

    def arm(self, conn: Connection, timeout_s: float) -> None:
        target = getattr(conn.connection.dbapi_connection, "interrupt", None)
        if target is None:
            return  # this driver cannot be interrupted; the guard and grants remain

        def fire() -> None:
            with self._lock:
                if self._done:
                    return
                self.fired = True
                # Runs on the timer thread; an exception here would only be printed.
                with suppress(Exception):
                    target()

        # One shared timer thread, not a thread per statement (reconciler.warehouse.timeouts).
        self._alarm = WATCHDOG.schedule(timeout_s, fire)

    def disarm(self) -> None:
        with self._lock:
            self._done = True
        if self._alarm is not None:
            self._alarm.cancel()


def _rows_of(conn: Connection) -> privilege.Query:
    """A :data:`~reconciler.warehouse.privilege.Query` on ``conn`` (no driver interpolation)."""

    def rows(sql: str) -> Sequence[Sequence[object]]:
        return conn.exec_driver_sql(sql, execution_options=_RAW_OPTIONS).fetchall()

    return rows


def _sqlstate(orig: BaseException | None) -> str | None:
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    return code if isinstance(code, str) else None


# Kept for callers of the former private name.
_with_installed_driver = readonly.with_installed_driver
