"""Per-column value profiles of string dimensions, cached on disk by content hash.

Profile enrichment (DESIGN §1 "assembly"): the fast tier resolves a filter
literal ("in EMEA") against the distinct values a dimension holds in the
warehouse. A profile is read with two guarded read-only queries per column —
its distinct non-null values (at most ``limit``; none kept when there are more)
and its row and null counts — and cached under ``.dst/profiles/`` so a second
run reads no warehouse at all. The join-key facts of the join-grain gate
(:mod:`reconciler.assembly.grain`: is a join's "one" side unique on its key?) are
read with one bounded query each and cached the same way (:meth:`ProfileStore.key_fact`,
:func:`gather_facts`).

The cache key is a SHA-256 over the *redacted* warehouse URL, the table, the
column SQL, the value bound and a data version:

* a file warehouse (DuckDB, SQLite) is versioned by the file's size and
  ``mtime_ns`` (and its write-ahead log's, when one exists), so ``dst seed`` or
  any write invalidates every profile read from it;
* a server warehouse has no cheap version: its entries expire after
  ``DST_PROFILE_TTL_S`` seconds (default :data:`DEFAULT_TTL_S`), recorded in the entry;
* an in-memory warehouse is never cached.

Entries never hold credentials (only :func:`reconciler.warehouse.connection.redact`'s form
is hashed and recorded), are written atomically (a temporary file renamed into
place), and a corrupt or foreign entry is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from reconciler import guard
from reconciler.assembly.grain import (
    KeyFact,
    WarehouseFacts,
    duplicate_detail,
    duplicate_key_sql,
    one_sides,
)
from reconciler.assembly.lexicon import DimensionValues
from reconciler.errors import DstError, UnsafeSqlError
from reconciler.files import replace_file
from reconciler.lens import Lens
from reconciler.resultset import Executor

SCHEMA_VERSION = 1
DEFAULT_TTL_S = 3600.0
TTL_ENV = "DST_PROFILE_TTL_S"


ProfileExecutor = Executor  # what profiling needs from a warehouse


@dataclass(frozen=True)
class ColumnProfile:
    """What the warehouse holds in one column.

    Attributes:
        values: distinct non-null values as strings, warehouse order; ``()``
            when there are more than the bound (not worth indexing).
        row_count: rows in the table.
        null_count: rows where the column is NULL.
    """

    values: tuple[str, ...]
    row_count: int
    null_count: int

    def record(self) -> dict[str, Any]:
        """JSON-ready form (the cache entry's ``profile``)."""
        return {
            "values": list(self.values),
            "row_count": self.row_count,
            "null_count": self.null_count,
        }


def _count_sql(table: str, column_sql: str, dialect: str) -> str:
    column = guard.parse_expression(column_sql, dialect)
    try:
        source = exp.to_table(table, dialect=dialect)
    except (ParseError, ValueError):
        raise UnsafeSqlError(
            f"table {table!r} is not a table name",
            fix="write the model's table as [schema.]name",
        ) from None
    query = exp.select(
        exp.alias_(exp.Count(this=exp.Star()), "row_count"),
        exp.alias_(exp.Count(this=column), "non_null"),
    ).from_(source)
    return normalize_identifiers(query, dialect=dialect).sql(dialect=dialect, identify=True)


def read_profile(
    executor: ProfileExecutor,
    table: str,
    column_sql: str,
    *,
    limit: int,
    timeout_s: float,
    dialect: str,
) -> ColumnProfile:
    """Profile one column with two read-only queries (values, then counts).

    Raises:
        UnsafeSqlError: the table or column does not parse or is unsafe.
        WarehouseError: a query failed or timed out.
    """
    values = executor.distinct_values(table, column_sql, limit=limit, timeout_s=timeout_s)
    count_sql = _count_sql(table, column_sql, dialect)
    counts = executor.execute(count_sql, row_cap=1, timeout_s=timeout_s)
    rows, non_null = (int(counts.rows[0][0] or 0), int(counts.rows[0][1] or 0))
    return ColumnProfile(tuple(values), rows, rows - non_null)


def ttl_from_env(env: Mapping[str, str]) -> float:
    """``DST_PROFILE_TTL_S`` in seconds (default :data:`DEFAULT_TTL_S`).

    A value that is not a non-negative number keeps the default.
    """
    raw = env.get(TTL_ENV)
    try:
        ttl = float(raw) if raw is not None else DEFAULT_TTL_S
    except ValueError:
        return DEFAULT_TTL_S
    return ttl if ttl >= 0 else DEFAULT_TTL_S


def file_version(path: Path) -> str | None:
    """``size:mtime_ns`` of a warehouse file (plus its ``.wal``), or ``None`` if absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    version = f"{st.st_size}:{st.st_mtime_ns}"
    wal = path.with_name(path.name + ".wal")
    if wal.is_file():
        ws = wal.stat()
        version += f"+wal:{ws.st_size}:{ws.st_mtime_ns}"
    return version


@dataclass
class ProfileStore:
    """The on-disk profile cache for one warehouse.

    Attributes:
        directory: ``<repo>/.dst/profiles``.
        warehouse: the redacted warehouse URL (never one holding a password).
        data_version: ``file:<size>:<mtime_ns>`` for a file warehouse, ``None``
            for a server (then entries expire after ``ttl_s``).
        ttl_s: seconds a server warehouse's entry stays valid.
        now: the clock (seconds since the epoch).
        hits, misses: profile lookups answered from disk, and those that queried
            (key facts, :meth:`key_fact`, are not counted).
        writable: ``False`` for a reader that writes nothing (``dst mcp``): entries
            are read from disk and kept in memory, never written.
    """

    directory: Path
    warehouse: str
    data_version: str | None
    ttl_s: float = DEFAULT_TTL_S
    now: Callable[[], float] = time.time
    hits: int = 0
    misses: int = 0
    writable: bool = True
    _memo: dict[str, ColumnProfile] = field(default_factory=dict)
    _facts: dict[str, KeyFact] = field(default_factory=dict)

    def key(self, table: str, column_sql: str, limit: int, kind: str = "profile") -> str:
        """The content hash naming a column's entry (hex SHA-256); ``kind`` is
        ``profile`` (values and counts) or ``key_fact`` (join-key uniqueness)."""
        ident: dict[str, object] = {
            "schema_version": SCHEMA_VERSION,
            "warehouse": self.warehouse,
            "table": table,
            "column": column_sql,
            "limit": limit,
            "data_version": self.data_version or "ttl",
        }
        if kind != "profile":  # profile keys stay what they were before key facts
            ident["kind"] = kind
        text = json.dumps(ident, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        """The entry file for ``key``."""
        return self.directory / f"{key}.json"

    def get(self, table: str, column_sql: str, limit: int) -> ColumnProfile | None:
        """The cached profile, or ``None`` (absent, expired, corrupt or foreign)."""
        key = self.key(table, column_sql, limit)
        if key in self._memo:
            return self._memo[key]
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
            if entry.get("schema_version") != SCHEMA_VERSION or entry.get("key") != key:
                return None
            ttl = entry.get("ttl_s")
            if ttl is not None and self.now() - float(entry["fetched_at"]) > float(ttl):
                return None
            raw = entry["profile"]
            profile = ColumnProfile(
                tuple(str(v) for v in raw["values"]),
                int(raw["row_count"]),
                int(raw["null_count"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        self._memo[key] = profile
        return profile

    def put(self, table: str, column_sql: str, limit: int, profile: ColumnProfile) -> Path:
        """Write the entry atomically (temporary file, then rename); returns its path."""
        key = self.key(table, column_sql, limit)
        entry = {
            "schema_version": SCHEMA_VERSION,
            "key": key,
            "warehouse": self.warehouse,
            "table": table,
            "column": column_sql,
            "limit": limit,
            "data_version": self.data_version,
            "ttl_s": None if self.data_version else self.ttl_s,
            "fetched_at": self.now(),
            "profile": profile.record(),
        }
        replace_file(self.path(key), json.dumps(entry, sort_keys=True, indent=1).encode())
        self._memo[key] = profile
        return self.path(key)

    def profile(
        self,
        executor: ProfileExecutor,
        table: str,
        column_sql: str,
        *,
        limit: int,
        timeout_s: float,
        dialect: str,
    ) -> ColumnProfile:
        """The cached profile, else one read from the warehouse and cached.

        Raises:
            UnsafeSqlError, WarehouseError: as :func:`read_profile` (nothing is cached).
        """
        cached = self.get(table, column_sql, limit)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        fresh = read_profile(
            executor, table, column_sql, limit=limit, timeout_s=timeout_s, dialect=dialect
        )
        if not self.writable:
            self._memo[self.key(table, column_sql, limit)] = fresh
            return fresh
        # A read-only checkout still answers; it just profiles again next run.
        with contextlib.suppress(OSError):
            self.put(table, column_sql, limit, fresh)
        return fresh

    def key_fact(
        self,
        executor: ProfileExecutor,
        model: str,
        table: str,
        columns: tuple[str, ...],
        *,
        timeout_s: float,
        dialect: str,
    ) -> KeyFact:
        """Whether ``table`` is unique on ``columns``: cached, else read and cached.

        Same directory, key and data-version rules as :meth:`profile`; a fact the
        warehouse could not establish (``unique is None``) is never cached.
        """
        key = self.key(table, ",".join(columns), 1, kind="key_fact")
        cached = self._facts.get(key) or self._cached_fact(key, model, columns)
        if cached is not None:
            self._facts[key] = cached
            return cached
        fresh = read_key_fact(executor, model, table, columns, timeout_s=timeout_s, dialect=dialect)
        if fresh.unique is not None:
            entry = {
                "schema_version": SCHEMA_VERSION,
                "key": key,
                "kind": "key_fact",
                "warehouse": self.warehouse,
                "table": table,
                "columns": list(columns),
                "data_version": self.data_version,
                "ttl_s": None if self.data_version else self.ttl_s,
                "fetched_at": self.now(),
                "key_fact": fresh.record(),
            }
            if self.writable:
                with contextlib.suppress(OSError):
                    replace_file(
                        self.path(key), json.dumps(entry, sort_keys=True, indent=1).encode()
                    )
            self._facts[key] = fresh
        return fresh

    def _cached_fact(self, key: str, model: str, columns: tuple[str, ...]) -> KeyFact | None:
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
            if entry.get("schema_version") != SCHEMA_VERSION or entry.get("key") != key:
                return None
            ttl = entry.get("ttl_s")
            if ttl is not None and self.now() - float(entry["fetched_at"]) > float(ttl):
                return None
            raw = entry["key_fact"]
            if not isinstance(raw["unique"], bool):
                return None
            return KeyFact(model, columns, raw["unique"], str(raw["detail"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


def read_key_fact(
    executor: ProfileExecutor,
    model: str,
    table: str,
    columns: tuple[str, ...],
    *,
    timeout_s: float,
    dialect: str,
) -> KeyFact:
    """One guarded read-only query (:func:`~reconciler.assembly.grain.duplicate_key_sql`):
    is ``table`` unique on ``columns``? A failed query gives ``unique=None`` with
    the warehouse's message, never an exception."""
    try:
        sql = duplicate_key_sql(table, columns, dialect)
        found = executor.execute(sql, row_cap=1, timeout_s=timeout_s)
    except DstError as exc:
        return KeyFact(model, columns, None, exc.message)
    if not found.rows:
        return KeyFact(model, columns, True)
    return KeyFact(model, columns, False, duplicate_detail(columns, tuple(found.rows[0])))


def gather_facts(
    lens: Lens,
    values: DimensionValues,
    executor: ProfileExecutor,
    store: ProfileStore | None,
    *,
    timeout_s: float,
    dialect: str,
) -> WarehouseFacts:
    """``values`` with the key fact of every join's "one" side of ``lens``
    (:func:`~reconciler.assembly.grain.one_sides`), from ``store`` when given."""
    keys: dict[tuple[str, tuple[str, ...]], KeyFact] = {}
    for model, columns in one_sides(lens):
        table = lens.models[model].table
        if store is None:
            keys[(model, columns)] = read_key_fact(
                executor, model, table, columns, timeout_s=timeout_s, dialect=dialect
            )
        else:
            keys[(model, columns)] = store.key_fact(
                executor, model, table, columns, timeout_s=timeout_s, dialect=dialect
            )
    return WarehouseFacts(values, keys)
