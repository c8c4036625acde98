"""A PostgreSQL server for tests, when one is reachable: scratch databases and roles.

``DST_TEST_POSTGRES_URL`` names a superuser connection (default the local server,
``postgresql://postgres@127.0.0.1:5432/test``). Tests that need it call
:func:`admin_or_skip`, which skips with the reason printed when no server answers or
``DST_TEST_SERVERS=0`` (:mod:`tests.servers`). Every database and role made here is
named ``dst_test_…`` and dropped afterwards.

Seeding and setup run as that superuser; answer SQL never does, because dst refuses
a login that can write (``reconciler.warehouse.privilege``): a test runs it as the
scratch database's reader role (CONNECT, USAGE and SELECT only, :func:`grant_reader`),
or sets ``allow_privileged: true`` on purpose and says why.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from reconciler.warehouse.connection import redact
from reconciler.warehouse.readonly import with_installed_driver
from tests import servers

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def admin_url() -> str:
    """The superuser URL tests use to create and drop scratch databases."""
    return os.environ.get("DST_TEST_POSTGRES_URL", DEFAULT_URL)


def engine(url: str, **options: object) -> sa.Engine:
    """A writable SQLAlchemy engine (setup only, never the warehouse under test)."""
    parsed = with_installed_driver(make_url(url))
    return sa.create_engine(parsed, connect_args={"connect_timeout": 2}, **options)


def admin_or_skip() -> sa.Engine:
    """An AUTOCOMMIT superuser engine, or ``pytest.skip`` naming why there is none."""
    servers.skip_when_off("PostgreSQL")
    admin = engine(admin_url(), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect():
            pass
    except sa.exc.SQLAlchemyError as exc:
        admin.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        pytest.skip(f"PostgreSQL not reachable at {redact(admin_url())}: {reason}")
    return admin


@dataclass(frozen=True)
class Scratch:
    """A fresh database and a least-privilege login role on it.

    Attributes:
        database: the database name.
        owner_url: superuser URL of the database (setup and inspection).
        reader: the role's name.
        reader_url: URL logging in as the role, password included.
    """

    database: str
    owner_url: str
    reader: str
    reader_url: str


@contextmanager
def scratch_database(label: str) -> Iterator[Scratch]:
    """Create ``dst_test_<label>_<random>`` and a reader role; drop both afterwards.

    The role is the README's read-only warehouse role: LOGIN, CONNECT, then USAGE and
    SELECT on every schema (granted by :func:`grant_reader` once tables exist),
    ``default_transaction_read_only = on`` and a ``statement_timeout``.
    """
    admin = admin_or_skip()
    database, reader = servers.scratch_name(label), servers.scratch_name(f"{label}_reader")
    password = secrets.token_hex(12)
    base = make_url(admin_url())
    owner_url = base.set(database=database).render_as_string(hide_password=False)
    reader_url = base.set(database=database, username=reader, password=password)
    try:  # a failure half way through set-up still drops what was made
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{database}"')
            conn.exec_driver_sql(f"CREATE ROLE \"{reader}\" LOGIN PASSWORD '{password}'")
            conn.exec_driver_sql(f'GRANT CONNECT ON DATABASE "{database}" TO "{reader}"')
            conn.exec_driver_sql(f'ALTER ROLE "{reader}" SET default_transaction_read_only = on')
            conn.exec_driver_sql(f"ALTER ROLE \"{reader}\" SET statement_timeout = '30s'")
        yield Scratch(database, owner_url, reader, reader_url.render_as_string(hide_password=False))
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            conn.exec_driver_sql(f'DROP ROLE IF EXISTS "{reader}"')
        admin.dispose()


def grant_reader(conn: sa.Connection, reader: str) -> None:
    """The least-privilege grants: USAGE and SELECT on ``public`` and every lens schema.

    ``dst seed --warehouse`` creates a schema per lens, so the reader needs each of them.
    """
    schemas = conn.exec_driver_sql(
        "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' "
        "AND nspname <> 'information_schema' ORDER BY 1"
    ).scalars()
    for schema in list(schemas):
        conn.exec_driver_sql(f'GRANT USAGE ON SCHEMA "{schema}" TO "{reader}"')
        conn.exec_driver_sql(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{reader}"')


@contextmanager
def login_role(scratch: Scratch, name: str, grants: Sequence[str] = ()) -> Iterator[str]:
    """A further login role on ``scratch``'s database; yields its URL, drops it afterwards.

    Args:
        scratch: the database (see :func:`scratch_database`).
        name: the role's name before its ``dst_test_`` prefix and random suffix.
        grants: statements run as the superuser in that database once the role exists;
            ``{role}`` in each is replaced by the role's quoted name.
    """
    admin = admin_or_skip()
    role = servers.scratch_name(name)
    quoted = f'"{role}"'
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {quoted} LOGIN")
    owner = engine(scratch.owner_url, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            for grant in grants:
                conn.exec_driver_sql(grant.format(role=quoted))
        url = make_url(scratch.owner_url).set(username=role, password=None)
        yield url.render_as_string(hide_password=False)
    finally:
        with owner.connect() as conn:  # its grants in this database, then the role
            conn.exec_driver_sql(f"DROP OWNED BY {quoted}")
        owner.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {quoted}")
        admin.dispose()
