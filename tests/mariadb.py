"""A MariaDB (or MySQL) server for tests, when one is reachable: scratch databases and users.

``DST_TEST_MYSQL_URL`` names an account that may create databases and users (default
the local server, ``mysql+pymysql://root@127.0.0.1:3306``). Tests that need it call
:func:`admin_or_skip`, which skips with the reason printed when no server answers or
``DST_TEST_SERVERS=0`` (:mod:`tests.servers`). Every database and user made here is
named ``dst_test_…`` and dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from reconciler.warehouse.connection import redact
from reconciler.warehouse.mysql import binary_collation
from tests import servers

DEFAULT_URL = "mysql+pymysql://root@127.0.0.1:3306"


def admin_url() -> str:
    """The URL of the account tests use to create and drop scratch databases and users."""
    return os.environ.get("DST_TEST_MYSQL_URL", DEFAULT_URL)


def engine(url: str, **options: object) -> sa.Engine:
    """A writable SQLAlchemy engine (setup only, never the warehouse under test)."""
    return sa.create_engine(make_url(url), connect_args={"connect_timeout": 2}, **options)


def admin_or_skip() -> sa.Engine:
    """An AUTOCOMMIT admin engine, or ``pytest.skip`` naming why there is none."""
    servers.skip_when_off("MariaDB")
    admin = engine(admin_url(), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect():
            pass
    except (sa.exc.SQLAlchemyError, ImportError) as exc:
        admin.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        pytest.skip(f"MariaDB not reachable at {redact(admin_url())}: {reason}")
    return admin


@dataclass(frozen=True)
class Scratch:
    """A fresh database and a least-privilege user.

    Attributes:
        database: the database name (``dst_test_<label>_<random>``); lens databases are
            ``<database>__<lens>``, so they share the prefix.
        owner_url: the admin account's URL on the database (setup and inspection).
        reader: the user's name.
        reader_url: URL logging in as the user, password included.
    """

    database: str
    owner_url: str
    reader: str
    reader_url: str


def run(conn: sa.Connection, sql: str) -> sa.CursorResult[Any]:
    """Execute ``sql`` as written (PyMySQL would read ``%`` as a parameter marker)."""
    return conn.exec_driver_sql(sql, execution_options={"no_parameters": True})


def quote(name: str) -> str:
    """A MySQL identifier in backticks."""
    return "`" + name.replace("`", "``") + "`"


@contextmanager
def scratch_database(label: str) -> Iterator[Scratch]:
    """Create ``dst_test_<label>_<random>`` and a reader user; drop them and every lens database.

    The database uses the server's binary collation (strings compare byte for byte, as
    on DuckDB), as ``dst seed --warehouse`` gives the lens databases it creates. The
    user is the README's read-only account: it gets ``SELECT`` on the database and its
    lens databases from :func:`grant_reader`, once they exist.
    """
    admin = admin_or_skip()
    database = servers.scratch_name(label)
    reader, password = servers.scratch_name(f"{label}_r"), secrets.token_hex(12)
    base = make_url(admin_url())
    owner_url = base.set(database=database).render_as_string(hide_password=False)
    reader_url = base.set(database=database, username=reader, password=password)
    try:  # a failure half way through set-up still drops what was made
        with admin.connect() as conn:
            collation = binary_collation(conn)
            suffix = f" CHARACTER SET utf8mb4 COLLATE {collation}" if collation else ""
            run(conn, f"CREATE DATABASE {quote(database)}{suffix}")
            run(conn, f"CREATE USER {quote(reader)}@'%' IDENTIFIED BY '{password}'")
        yield Scratch(database, owner_url, reader, reader_url.render_as_string(hide_password=False))
    finally:
        with admin.connect() as conn:
            for name in _databases_of(conn, database):
                run(conn, f"DROP DATABASE IF EXISTS {quote(name)}")
            run(conn, f"DROP USER IF EXISTS {quote(reader)}@'%'")
        admin.dispose()


def _databases_of(conn: sa.Connection, database: str) -> list[str]:
    """``database`` and its lens databases ``<database>__<lens>``."""
    names = [str(r[0]) for r in run(conn, "SHOW DATABASES")]
    return [n for n in names if n == database or n.startswith(f"{database}__")]


def grant_reader(conn: sa.Connection, scratch: Scratch) -> Sequence[str]:
    """The README's grants: ``SELECT`` on the database and on each lens database.

    Returns:
        The databases granted.
    """
    names = _databases_of(conn, scratch.database)
    for name in names:
        run(conn, f"GRANT SELECT ON {quote(name)}.* TO {quote(scratch.reader)}@'%'")
    return names
