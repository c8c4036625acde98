"""Opening a warehouse without loading SQLAlchemy unless the URL needs it.

The embedded warehouse and every plain ``duckdb:///path`` URL are read by
DuckDB directly (:mod:`.duck`); only other URLs load SQLAlchemy and its
dialects (:mod:`.connection`). So ``dst ask`` on the embedded warehouse starts
without either. Each function here answers exactly as its namesake in
:mod:`.connection`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from reconciler.warehouse.duck import DuckWarehouse, plain_file

if TYPE_CHECKING:
    from reconciler.warehouse.connection import Warehouse

OpenWarehouse: TypeAlias = "Warehouse | DuckWarehouse"

_ENV_VAR = "DST_WAREHOUSE_URL"  # as connection.ENV_VAR, EMBEDDED_DIR and EMBEDDED_FILE
_EMBEDDED_DIR = ".dst"
_EMBEDDED_FILE = "warehouse.duckdb"


def open_warehouse(url: str, *, pool_size: int | None = None) -> OpenWarehouse:
    """:meth:`Warehouse.open <reconciler.warehouse.connection.Warehouse.open>`.

    Raises:
        WarehouseError: as ``Warehouse.open``.
    """
    if plain_file(url) is not None:
        return DuckWarehouse.open(url)
    # lazy: SQLAlchemy only for a URL DuckDB cannot open directly
    from reconciler.warehouse.connection import Warehouse

    return Warehouse.open(url, pool_size=pool_size)


def resolve_url(
    cli_url: str | None,
    env: Mapping[str, str],
    lens_url: str | None,
    repo_config_url: str | None,
    repo_root: Path,
    **sources: Any,
) -> tuple[str, str]:
    """:func:`reconciler.warehouse.connection.resolve_url` (DESIGN §7 precedence).

    Args:
        cli_url, env, lens_url, repo_config_url, repo_root: as ``connection.resolve_url``.
        sources: further keyword sources ``connection.resolve_url`` takes, passed on;
            any that is not ``None`` counts as naming a warehouse.

    Raises:
        UsageError: as ``connection.resolve_url``.
    """
    given = (cli_url, env.get(_ENV_VAR), lens_url, repo_config_url)
    unset = all(value is None or not value.strip() for value in given)
    if unset and all(value is None for value in sources.values()):
        path = repo_root / _EMBEDDED_DIR / _EMBEDDED_FILE
        return f"duckdb:///{path.as_posix()}", "embedded default"
    # lazy: SQLAlchemy parses a URL somebody wrote
    from reconciler.warehouse.connection import resolve_url as resolve

    resolved: tuple[str, str] = resolve(
        cli_url, env, lens_url, repo_config_url, repo_root, **sources
    )
    return resolved


def redact(url: str) -> str:
    """:func:`reconciler.warehouse.connection.redact`; a plain DuckDB URL holds no secret."""
    if plain_file(url) is not None:
        return url
    # lazy: SQLAlchemy parses a URL that may hold credentials
    from reconciler.warehouse.connection import redact as hide

    return hide(url)


def is_embedded(url: str) -> bool:
    """:func:`reconciler.warehouse.connection.is_embedded`."""
    database = plain_file(url)
    if database is None:
        # lazy: SQLAlchemy parses any other URL
        from reconciler.warehouse.connection import is_embedded as embedded

        return embedded(url)
    path = Path(database)
    return path.name == _EMBEDDED_FILE and path.parent.name == _EMBEDDED_DIR


def file_facts(url: str) -> tuple[str, str | None]:
    """``(backend, database)`` of a URL: ``("duckdb", "/path/w.duckdb")``, ``("postgresql", "db")``.

    Raises:
        ValueError: ``url`` is not a SQLAlchemy URL.
    """
    database = plain_file(url)
    if database is not None:
        return "duckdb", database
    # lazy: SQLAlchemy parses any other URL
    from reconciler.warehouse.urls import url_facts

    facts = url_facts(url)
    return facts.backend, facts.database
