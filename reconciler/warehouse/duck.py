"""A DuckDB file or in-memory database, opened read-only through DuckDB itself.

The embedded warehouse (``.dst/warehouse.duckdb``) and any plain ``duckdb:///path``
URL skip SQLAlchemy: a suite of small statements would otherwise spend more time
in the engine's connection checkout and transaction bookkeeping than in DuckDB,
and ``dst ask`` would import SQLAlchemy (and, through duckdb-engine, its
PostgreSQL dialect) to run one query. The defences are the same as on the
SQLAlchemy path (:mod:`reconciler.warehouse.connection`):

* every statement passes the guard (memoized by text, :func:`guard.checked_query`);
* the database opens ``read_only`` with ``enable_external_access=false`` and
  ``lock_configuration=true`` (an in-memory database cannot open read-only: it is
  empty and cut off from files);
* every statement runs in a transaction that is rolled back, never committed;
* the statement timeout interrupts the connection from the shared timer thread
  (:mod:`reconciler.warehouse.timeouts`), and an interrupted connection is dropped;
* ``row_cap + 1`` rows are fetched, the extra one only marks the result truncated.

A URL with a query string, a user or percent-escapes goes through SQLAlchemy.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
from sqlglot import exp

from reconciler.errors import WarehouseError
from reconciler.resultset import ResultSet
from reconciler.warehouse import privilege
from reconciler.warehouse.guarded import GuardedWarehouse
from reconciler.warehouse.timeouts import WATCHDOG

_PREFIX = "duckdb:///"
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/._~-]+")
_MEMORY = ":memory:"
_CONFIG = {"enable_external_access": False, "lock_configuration": True}
_SCHEMAS_SQL = (
    "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = current_database()"
)


def plain_file(url: str) -> str | None:
    """The database of a ``duckdb:///<path>`` URL that needs no URL parser, else ``None``.

    ``duckdb:///rel.db`` gives ``rel.db``, ``duckdb:////abs/w.duckdb`` gives
    ``/abs/w.duckdb``. Only a path of letters, digits and ``/ . _ - ~`` qualifies
    (SQLAlchemy reads and prints it unchanged); every other URL (another backend,
    a query string, ``:memory:``, escapes) is SQLAlchemy's to parse.
    """
    if not url.startswith(_PREFIX):
        return None
    database = url[len(_PREFIX) :]
    return database if _PLAIN_PATH.fullmatch(database) else None


def search_path_setting(search_path: Sequence[str]) -> str:
    """The ``SET``/``RESET search_path`` statement giving ``search_path`` then ``main``."""
    if not search_path:
        return "RESET search_path"
    # DuckDB reads a space after the comma as part of the next name.
    names = ",".join(exp.to_identifier(n, quoted=True).sql("duckdb") for n in search_path)
    return f"SET search_path = {exp.Literal.string(names + ',main').sql('duckdb')}"


class _Session:
    """One DuckDB connection and the search path it was last given."""

    __slots__ = ("conn", "path")

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn = conn
        self.path: tuple[str, ...] = ()


class DuckWarehouse(GuardedWarehouse):
    """Read-only DuckDB warehouse without SQLAlchemy; the interface of ``Warehouse``.

    Attributes:
        dialect: ``duckdb``.
        display_url: the URL as given (a plain DuckDB URL holds no credentials).
        warnings: always ``()`` (kept for the callers of ``Warehouse``).
        write_access: why the connection could write (a file attached read-write), read
            once on open (:func:`reconciler.warehouse.privilege.write_access`); ``()`` for
            a file opened read-only and for an in-memory database.
    """

    dialect = "duckdb"

    def __init__(self, database: str, display_url: str) -> None:
        self._database = database
        self.display_url = display_url
        self.warnings: tuple[str, ...] = ()
        self._lock = threading.Lock()
        self._idle: list[_Session] = []
        self._schemas: frozenset[str] | None = None
        memory = database == _MEMORY
        if not memory and not database.startswith("md:") and not Path(database).is_file():
            raise WarehouseError(
                f"warehouse {display_url}: the DuckDB file does not exist",
                fix="run `dst seed` to build the embedded warehouse from the lenses' seeds/, "
                "or point --warehouse at an existing database",
            )
        try:
            self._base = duckdb.connect(database, read_only=not memory, config=dict(_CONFIG))
        except duckdb.Error as exc:
            raise WarehouseError(
                f"warehouse {display_url} is not reachable: {_first_line(exc)}",
                fix="check the URL and that no other process holds the file open for writing",
            ) from None
        try:
            self.write_access = privilege.write_access(self.dialect, self._rows)
        except duckdb.Error as exc:
            self._base.close()
            raise WarehouseError(
                f"warehouse {display_url}: its databases cannot be listed: {_first_line(exc)}",
                fix="open a DuckDB file that this DuckDB version reads",
            ) from None

    def _rows(self, sql: str) -> list[tuple[object, ...]]:
        """The rows of ``sql`` on the base connection (the open-time privilege check)."""
        rows: list[tuple[object, ...]] = self._base.execute(sql).fetchall()
        return rows

    @classmethod
    def open(cls, url: str) -> DuckWarehouse:
        """Open a URL :func:`plain_file` accepts.

        Raises:
            WarehouseError: the file does not exist (fix: ``dst seed``) or DuckDB
                cannot open it; ``url`` is not a plain DuckDB URL.
        """
        database = plain_file(url)
        if database is None:
            raise WarehouseError(
                f"warehouse {url}: not a plain DuckDB URL",
                fix="write it as duckdb:///path/to/file.duckdb",
            )
        return cls(database, url)

    def __enter__(self) -> DuckWarehouse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection. Idempotent."""
        with self._lock:
            sessions, self._idle = self._idle, []
        for session in sessions:
            with suppress(duckdb.Error):
                session.conn.close()
        with suppress(duckdb.Error):
            self._base.close()

    def schemas(self) -> frozenset[str]:
        """The schema names of the database, read once.

        Raises:
            WarehouseError: the catalog query failed.
        """
        if self._schemas is None:
            result = self._execute_raw(_SCHEMAS_SQL, row_cap=100_000, timeout_s=30.0)
            self._schemas = frozenset(str(row[0]) for row in result.rows)
        return self._schemas

    def _execute_raw(
        self, sql: str, *, row_cap: int, timeout_s: float, search_path: Sequence[str] = ()
    ) -> ResultSet:
        """Run ``sql`` on a read-only connection without the guard (tests call this)."""
        if row_cap < 0:
            raise ValueError(f"row_cap must be >= 0, got {row_cap}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        started = time.monotonic()
        with self._session(tuple(search_path)) as session:
            conn = session.conn
            fired = _Interrupt(conn, timeout_s)
            try:
                conn.begin()
                try:
                    conn.execute(sql)
                    description = conn.description
                    fetched = conn.fetchmany(row_cap + 1) if description is not None else []
                finally:
                    fired.disarm()
                    conn.rollback()
            except duckdb.Error as exc:
                if fired.is_set() or isinstance(exc, duckdb.InterruptException):
                    raise WarehouseError(
                        f"query timed out after {timeout_s:g} s on {self.display_url}",
                        fix="make the query cheaper, or raise statement_timeout_s in lens.yaml",
                    ) from None
                raise WarehouseError(
                    f"query failed on {self.display_url}: {_first_line(exc)}",
                    fix="check the SQL against the warehouse's tables and its duckdb dialect",
                ) from None
            if fired.is_set():
                raise WarehouseError(
                    f"query timed out after {timeout_s:g} s on {self.display_url}",
                    fix="make the query cheaper, or raise statement_timeout_s in lens.yaml",
                )
        if description is None:
            return ResultSet((), (), False, time.monotonic() - started)
        columns = tuple(str(d[0]) for d in description)
        rows = tuple(tuple(row) for row in fetched[:row_cap])
        return ResultSet(columns, rows, len(fetched) > row_cap, time.monotonic() - started)

    @contextmanager
    def _session(self, search_path: tuple[str, ...]) -> Iterator[_Session]:
        """A connection of the pool with ``search_path`` set; dropped when it failed."""
        with self._lock:  # a DuckDB connection object is not shared between threads
            if self._idle:
                session = self._idle.pop()
            else:
                session = _Session(self._base.cursor())
                session.path = ("\x00",)  # unknown: the first statement sets it
        healthy = False
        try:
            if session.path != search_path:
                session.conn.execute(search_path_setting(search_path))
                session.path = search_path
            yield session
            healthy = True
        finally:
            if healthy:
                with self._lock:
                    self._idle.append(session)
            else:
                # An interrupt may linger on an idle connection, and a failed one may
                # be mid-transaction: never reuse it.
                with suppress(duckdb.Error):
                    session.conn.close()


class _Interrupt:
    """Interrupts ``conn`` once ``timeout_s`` passes, unless disarmed first."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._done = False
        self._fired = False
        # One shared timer thread, not a thread per statement (reconciler.warehouse.timeouts).
        self._alarm = WATCHDOG.schedule(timeout_s, self._fire)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return  # the statement ended first: never interrupt an idle connection
            self._fired = True
            self._conn.interrupt()

    def disarm(self) -> None:
        with self._lock:
            self._done = True
        self._alarm.cancel()

    def is_set(self) -> bool:
        return self._fired


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
