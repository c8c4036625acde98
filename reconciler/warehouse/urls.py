"""What a warehouse URL says before anything connects: its sqlglot dialect, its password.

``dst init --warehouse URL`` writes the URL into ``dst.yaml``, so it has to know
the SQL dialect the scaffolded lens is written in, and whether the URL holds a
literal password (which would then be committed to git).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlglot.dialects.dialect import Dialect

from reconciler.warehouse.connection import _SQLGLOT_DIALECT

DEFAULT_DIALECT = "duckdb"


@dataclass(frozen=True)
class UrlFacts:
    """What a SQLAlchemy URL names, without connecting.

    Attributes:
        backend: SQLAlchemy's backend name (``postgresql``, ``duckdb`` …).
        dialect: the sqlglot dialect of that backend; ``duckdb`` when sqlglot has none.
        password: the password part as written (``None`` when there is none); it may be
            an environment reference such as ``${PGPASSWORD}``.
        database: the database part (a file path for DuckDB and SQLite, ``:memory:`` or
            ``""`` for an in-memory one); ``None`` when the URL has none.
    """

    backend: str
    dialect: str
    password: str | None
    database: str | None = None


def url_facts(url: str) -> UrlFacts:
    """Parse a SQLAlchemy URL (``dialect+driver://user:password@host/database``).

    Raises:
        ValueError: ``url`` is not a SQLAlchemy URL.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(str(exc)) from None
    backend = parsed.get_backend_name()
    dialect = _SQLGLOT_DIALECT.get(backend, backend)
    password = None if parsed.password is None else str(parsed.password)
    known = Dialect.get(dialect) is not None
    return UrlFacts(backend, dialect if known else DEFAULT_DIALECT, password, parsed.database)
