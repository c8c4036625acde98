"""Answer SQL runs only on a connection that cannot write (issue 24, item 2).

A PostgreSQL superuser, a role with a write grant on a lens table (or CREATE, or a
server-file role), a MariaDB/MySQL account with more than SELECT, and a DuckDB file
attached read-write are refused with exit 2 for every path that runs answer SQL, naming
the environment, the redacted URL and the read-only role recipe; ``allow_privileged:
true`` in ``dst.yaml`` (top level for the default environment, per environment
otherwise) accepts one with a warning; ``dst seed`` still writes as the superuser.
Server tests skip, naming why, without a server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pygit2
import pytest
from sqlalchemy.engine import make_url

from reconciler.context import Runtime
from reconciler.errors import PrivilegedWarehouse, WarehouseError
from reconciler.reconcile import check_worktree
from reconciler.warehouse import privilege
from reconciler.warehouse.access import open_warehouse
from reconciler.warehouse.connection import Warehouse
from reconciler.warehouse.duck import DuckWarehouse
from tests import mariadb, pg
from tests.figures import record
from tests.helpers import commit, invoke

LENS = "name: shop\n"
MODEL = "name: orders\ntable: orders\nfacts:\n  - name: amount\n    data_type: number\n"
ANSWER = """\
id: order_count
question: How many orders are there?
sql: SELECT COUNT(*) AS orders FROM orders
status: active
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
  source: manual
"""
SEED = "id,amount\n1,10\n2,20\n3,5\n"
QUESTION = ("ask", "How many orders are there?", "--lens", "shop", "--format", "json")
MANY_TABLES = (
    *(f"CREATE TABLE shop.t{n} (x INT)" for n in range(1, 5)),
    "GRANT INSERT ON ALL TABLES IN SCHEMA shop TO {role}",
)
PASSWORD = "pw-never-shown-71"  # trust authentication ignores it; the output must not


@dataclass(frozen=True)
class Shop:
    repo: Path
    scratch: pg.Scratch
    owner_url: str  # the superuser, with a planted password in the URL


def _files() -> dict[str, str | bytes | None]:
    return {
        "lenses/shop/lens.yaml": LENS,
        "lenses/shop/models/orders.yaml": MODEL,
        "lenses/shop/answers/order_count.yaml": ANSWER,
        "lenses/shop/seeds/orders.csv": SEED,
    }


@pytest.fixture
def shop(repo: Path) -> Iterator[Shop]:
    """A one-answer lens seeded as the superuser into a scratch database."""
    with pg.scratch_database("privilege") as scratch:
        commit(repo, _files(), "a shop lens")
        owner = make_url(scratch.owner_url).set(password=PASSWORD)
        owner_url = owner.render_as_string(hide_password=False)
        # Seeding must write: it runs as the superuser, unchanged.
        seeded = invoke(repo, "seed", "--warehouse", owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        assert seeded.json()["tables"] == {"shop.orders": 3}
        setup = pg.engine(scratch.owner_url)
        with setup.begin() as conn:
            pg.grant_reader(conn, scratch.reader)
        setup.dispose()
        yield Shop(repo, scratch, owner_url)


def _refused(done: object, *reason: str) -> str:
    code, out, err = (getattr(done, k) for k in ("code", "stdout", "stderr"))
    assert code == 2, out + err
    assert "can write, and answer SQL runs only on a connection that cannot" in err, err
    assert "read-only role" in err and "allow_privileged: true" in err, err
    assert PASSWORD not in out + err
    for phrase in reason:
        assert phrase in err, err
    return str(err)


def test_a_superuser_is_refused_on_every_answer_sql_path(shop: Shop) -> None:
    url = ("--warehouse", shop.owner_url)
    shown = f"postgresql://postgres:***@127.0.0.1:5432/{shop.scratch.database}"
    reason = "the login is a superuser (rolsuper)"
    refused: list[str] = []
    for args in (("apply", "--dry-run"), ("apply",)):
        err = _refused(invoke(shop.repo, *args, *url), reason, shown, "the default environment")
        assert "at the top level of dst.yaml" in err
        refused.append(" ".join(args))
    # Nothing was promoted on a refused apply, so serve it with the reader first.
    promoted = invoke(shop.repo, "apply", "--warehouse", shop.scratch.reader_url)
    assert promoted.code == 0, promoted.stdout + promoted.stderr
    assert "can write" not in promoted.stderr
    certify = ("certify", "--lens", "shop", "--question", "What is the total amount?")
    for args in (QUESTION, ("test", "shop"), (*certify, "--dry-run")):
        _refused(invoke(shop.repo, *args, *url), reason, shown)
        refused.append(args[0])
    # DST_WAREHOUSE_URL is refused the same way.
    _refused(invoke(shop.repo, *QUESTION, env={"DST_WAREHOUSE_URL": shop.owner_url}), reason)
    refused.append("ask through DST_WAREHOUSE_URL")
    asked = invoke(shop.repo, *QUESTION, "--warehouse", shop.scratch.reader_url)
    assert asked.code == 0 and asked.json()["rows"] == [[3]], asked.stdout + asked.stderr
    record(
        f"privilege: a PostgreSQL superuser refused (exit 2) by {len(refused)} answer-SQL "
        f"runs ({', '.join(refused)}); the read-only role served"
    )


def test_watch_refuses_a_superuser_and_checks_as_the_reader(shop: Shop) -> None:
    promoted = invoke(shop.repo, "apply", "--warehouse", shop.scratch.reader_url)
    assert promoted.code == 0, promoted.stdout + promoted.stderr
    answer = shop.repo / "lenses/shop/answers/order_count.yaml"
    answer.write_text(ANSWER.replace("COUNT(*) AS orders", "COUNT(id) AS orders"))
    for url, refused in ((shop.owner_url, True), (shop.scratch.reader_url, False)):
        rt = Runtime(pygit2.Repository(str(shop.repo)), warehouse_url=url, env={})
        try:
            if refused:
                with pytest.raises(PrivilegedWarehouse, match="rolsuper"):
                    check_worktree(rt)
            else:
                checked = check_worktree(rt)
                assert checked.exit_code == 0
                assert [r.action.value for r in checked.lenses] == ["promoted"]
        finally:
            rt.close()


def test_a_role_that_may_insert_into_a_lens_table_is_refused(shop: Shop) -> None:
    grants = (
        "GRANT USAGE ON SCHEMA shop TO {role}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA shop TO {role}",
        "GRANT INSERT ON shop.orders TO {role}",
    )
    with pg.login_role(shop.scratch, "inserter", grants) as url:
        with Warehouse.open(url) as wh:
            assert wh.write_access == ("the login may INSERT shop.orders",)
        _refused(invoke(shop.repo, "apply", "--warehouse", url), "may INSERT shop.orders")


@pytest.mark.parametrize(
    ("name", "grants", "reason"),
    [
        ("updater", ("GRANT UPDATE (amount) ON shop.orders TO {role}",), "may UPDATE shop.orders"),
        ("creator", ("GRANT CREATE ON SCHEMA shop TO {role}",), "create objects in schema shop"),
        ("schemer", ("GRANT CREATE ON DATABASE {database} TO {role}",), "create schemas"),
        ("filer", ("GRANT pg_write_server_files TO {role}",), "member of pg_write_server_files"),
        ("programs", ("GRANT pg_execute_server_program TO {role}",), "pg_execute_server_program"),
        ("roles", ("ALTER ROLE {role} CREATEROLE",), "may create roles (CREATEROLE)"),
        ("replica", ("ALTER ROLE {role} REPLICATION",), "replication role"),
        ("owner", ("ALTER TABLE shop.orders OWNER TO {role}",), "may DELETE shop.orders"),
        ("many", MANY_TABLES, "may INSERT shop.orders, shop.t1, shop.t2 and 2 more"),
    ],
)
def test_each_write_capability_of_a_postgres_login_is_named(
    shop: Shop, name: str, grants: tuple[str, ...], reason: str
) -> None:
    database = f'"{shop.scratch.database}"'
    grants = tuple(g.replace("{database}", database) for g in grants)
    with pg.login_role(shop.scratch, name, grants) as url, Warehouse.open(url) as wh:
        assert any(reason in r for r in wh.write_access), wh.write_access


def test_the_reader_role_and_createdb_are_accepted(shop: Shop) -> None:
    with Warehouse.open(shop.scratch.reader_url) as wh:
        assert wh.write_access == ()
    grants = ("GRANT USAGE ON SCHEMA shop TO {role}", "GRANT SELECT ON shop.orders TO {role}",
              "ALTER ROLE {role} CREATEDB")  # fmt: skip
    with pg.login_role(shop.scratch, "createdb", grants) as url:
        with Warehouse.open(url) as wh:
            assert wh.write_access == ()  # a database cannot be created in a transaction
        applied = invoke(shop.repo, "apply", "--warehouse", url)
        assert applied.code == 0, applied.stdout + applied.stderr


def test_allow_privileged_accepts_the_superuser_with_a_warning(shop: Shop) -> None:
    commit(shop.repo, {"dst.yaml": "allow_privileged: true\n"}, "allow the superuser")
    applied = invoke(shop.repo, "apply", "--warehouse", shop.owner_url, "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    warned = [line for line in applied.stderr.splitlines() if line.startswith("WARNING:")]
    assert len(warned) == 1, applied.stderr  # once per connection, not per statement
    assert "superuser (rolsuper)" in warned[0] and "allow_privileged: true" in warned[0]
    assert "read-only role" in warned[0] and PASSWORD not in applied.stderr
    assert "WARNING:" not in applied.stdout  # stderr only: the JSON stays clean
    asked = invoke(shop.repo, *QUESTION, "--warehouse", shop.owner_url)
    assert asked.code == 0 and asked.json()["rows"] == [[3]], asked.stdout + asked.stderr
    assert "allow_privileged: true" in asked.stderr


def test_allow_privileged_is_per_environment(shop: Shop) -> None:
    owner, reader = shop.owner_url, shop.scratch.reader_url
    config = (
        "allow_privileged: true\n"  # the default environment's; a named one sets its own
        "environments:\n"
        f"  staging: {{warehouse: '{reader}'}}\n"
        f"  qa: {{warehouse: '{owner}'}}\n"
        f"  prod: {{warehouse: '{owner}', allow_privileged: true}}\n"
    )
    commit(shop.repo, {"dst.yaml": config}, "three environments")
    staging = invoke(shop.repo, "apply", "--env", "staging")
    assert staging.code == 0 and "WARNING:" not in staging.stderr, staging.stderr
    err = _refused(invoke(shop.repo, "apply", "--env", "qa"), "environment qa", "rolsuper")
    assert "under environments: qa: in dst.yaml" in err
    prod = invoke(shop.repo, "apply", "--env", "prod")
    assert prod.code == 0, prod.stdout + prod.stderr
    assert "WARNING: environment prod runs answer SQL" in prod.stderr


def test_allow_privileged_must_be_a_boolean(repo: Path) -> None:
    commit(repo, {**_files(), "dst.yaml": "allow_privileged: 'yes'\n"}, "a string")
    done = invoke(repo, "apply", "--dry-run")
    assert done.code == 2 and "dst.yaml:1" in done.stderr, done.stdout + done.stderr


# ---------------------------------------------------------------- DuckDB


@dataclass(frozen=True)
class Opened:
    """An opened warehouse's facts, as :func:`privilege.admit` reads them."""

    write_access: tuple[str, ...]
    display_url: str
    dialect: str

    def close(self) -> None:
        return None


def _duckdb_file(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE orders AS SELECT 1 AS id")
    return path


def test_a_duckdb_file_open_read_write_is_refused(tmp_path: Path) -> None:
    path = _duckdb_file(tmp_path)
    with duckdb.connect(str(path)) as conn:  # read-write, as a writer would hold it
        found = privilege.write_access("duckdb", lambda sql: conn.execute(sql).fetchall())
    assert found == (f"the DuckDB file {path} (database w) is open read-write",)
    url = f"duckdb:///{path}"
    with pytest.raises(PrivilegedWarehouse, match="open read-write") as refused:
        privilege.admit(Opened(found, url, "duckdb"), None, allowed=False, warn=print)
    assert refused.value.exit_code == 2 and "read_only=True" in str(refused.value.fix)
    warned: list[str] = []
    privilege.admit(Opened(found, url, "duckdb"), "dev", allowed=True, warn=warned.append)
    assert len(warned) == 1 and warned[0].startswith("WARNING: environment dev")


@pytest.mark.parametrize("query", ["", "?threads=1"])  # DuckDB itself, and SQLAlchemy
def test_answer_sql_opens_a_duckdb_file_read_only(tmp_path: Path, query: str) -> None:
    path = _duckdb_file(tmp_path)
    with open_warehouse(f"duckdb:///{path}{query}") as wh:
        assert isinstance(wh, DuckWarehouse if not query else Warehouse)
        assert wh.write_access == ()
        # The guard bypassed: the engine itself refuses the write.
        for write in ("INSERT INTO orders VALUES (2)", "CREATE TABLE t (x INT)"):
            with pytest.raises(WarehouseError, match="read-only"):
                wh._execute_raw(write, row_cap=1, timeout_s=5)
        assert wh._execute_raw("SELECT COUNT(*) FROM orders", row_cap=1, timeout_s=5).rows == (
            (1,),
        )


def test_an_in_memory_duckdb_has_nothing_to_protect() -> None:
    with open_warehouse("duckdb:///:memory:") as wh:
        assert wh.write_access == ()


def test_the_embedded_warehouse_serves_without_allow_privileged(lens_repo: Path) -> None:
    done = invoke(lens_repo, "apply", "--dry-run", "--lens", "sales")
    assert done.code == 0 and "can write" not in done.stderr, done.stdout + done.stderr


# ---------------------------------------------------------------- MariaDB / MySQL


def test_a_mariadb_account_that_can_write_is_refused_and_the_reader_served(repo: Path) -> None:
    with mariadb.scratch_database("privilege") as scratch:
        commit(repo, _files(), "a shop lens")
        seeded = invoke(repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        admin = mariadb.admin_or_skip()
        with admin.connect() as conn:
            mariadb.grant_reader(conn, scratch)
        admin.dispose()
        refused = invoke(repo, "apply", "--warehouse", scratch.owner_url)
        _refused(refused, "the account holds ALL PRIVILEGES", "the default environment")
        served = invoke(repo, "apply", "--warehouse", scratch.reader_url)
        assert served.code == 0 and "can write" not in served.stderr, served.stdout + served.stderr
