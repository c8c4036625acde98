"""The foundation scenarios on PostgreSQL: seed, apply, block, rollback (real git, real server).

The small shop lens (tests/shop.py) is seeded into a fresh database through
``dst seed --warehouse`` (the same DuckDB CSV reader as the embedded warehouse),
then served read-only through a least-privilege role. Outcomes match the DuckDB
scenarios in tests/test_apply.py. Skips, with the reason printed, when no server
answers at ``DST_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
import sqlalchemy as sa

from reconciler.errors import WarehouseError
from reconciler.warehouse.seed import SeedFile, seed
from tests import pg
from tests.figures import record
from tests.helpers import commit, git, invoke
from tests.shop import CUSTOMERS, LENS, ORDER_COUNT, ORDERS, REVENUE

ANSWERS = {
    "total_revenue": ("What is the total revenue?", "SELECT SUM(amount) AS revenue FROM orders"),
    "order_count": ("How many orders are there?", "SELECT COUNT(*) AS order_count FROM orders"),
    "revenue_by_segment": (
        "Revenue by segment",
        "SELECT c.segment, SUM(o.amount) AS revenue FROM orders AS o "
        "JOIN customers AS c ON c.customer_id = o.customer_id GROUP BY c.segment",
    ),
}
ORDERS_CSV = (
    b"order_id,customer_id,order_date,amount\n"
    b"1,10,2024-01-05,120.50\n2,11,2024-02-11,80.00\n3,10,2024-03-02,42.25\n"
    b"4,12,2024-03-30,300.00\n5,11,2024-04-18,15.75\n"
)
CUSTOMERS_CSV = b"customer_id,segment\n10,retail\n11,enterprise\n12,retail\n"


def _answer(aid: str, question: str, sql: str) -> str:
    return (
        f"id: {aid}\nquestion: {question}\nsql: {sql}\nstatus: active\n"
        'provenance:\n  certified_by: Ana\n  certified_at: "2025-01-01"\n'
    )


def _serving(repo: Path) -> str | None:
    ref = pygit2.Repository(str(repo)).references.get("refs/dst/serving/shop")
    return None if ref is None else str(ref.target)


@pytest.fixture
def pg_shop(repo: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """The shop lens in a git repo, seeded into a fresh PostgreSQL database.

    Yields the repository and the environment that points ``dst`` at the
    database through the least-privilege reader role.
    """
    with pg.scratch_database("dst_found") as scratch:
        files: dict[str, str | bytes | None] = {
            "lenses/shop/lens.yaml": LENS,
            "lenses/shop/models/orders.yaml": ORDERS,
            "lenses/shop/models/customers.yaml": CUSTOMERS,
            "lenses/shop/metrics/revenue.yaml": REVENUE,
            "lenses/shop/metrics/order_count.yaml": ORDER_COUNT,
            "lenses/shop/seeds/orders.csv": ORDERS_CSV,
            "lenses/shop/seeds/customers.csv": CUSTOMERS_CSV,
        }
        for aid, (question, sql) in ANSWERS.items():
            files[f"lenses/shop/answers/{aid}.yaml"] = _answer(aid, question, sql)
        commit(repo, files, "shop lens")
        started = time.monotonic()
        seeded = invoke(repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        assert seeded.json()["tables"] == {"shop.customers": 3, "shop.orders": 5}
        owner = pg.engine(scratch.owner_url)
        with owner.begin() as conn:
            pg.grant_reader(conn, scratch.reader)
        owner.dispose()
        record(
            f"postgres foundation: seed into a fresh database {time.monotonic() - started:.2f} s"
        )
        yield repo, {"DST_WAREHOUSE_URL": scratch.reader_url}


def test_seed_loads_typed_tables_through_the_duckdb_reader(
    pg_shop: tuple[Path, dict[str, str]],
) -> None:
    repo, env = pg_shop
    url = env["DST_WAREHOUSE_URL"]
    reader = pg.engine(url)
    try:
        with reader.connect() as conn:
            types = dict(
                conn.exec_driver_sql(
                    "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'shop' AND table_name = 'orders'"
                ).all()
            )
            # the lens's seeds are in its own schema, not in public
            total = conn.exec_driver_sql("SELECT sum(amount) FROM shop.orders").scalar()
            assert conn.exec_driver_sql("SELECT to_regclass('public.orders')").scalar() is None
            assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
            with pytest.raises(sa.exc.DBAPIError, match="read-only transaction"):
                conn.exec_driver_sql("DELETE FROM shop.orders")
    finally:
        reader.dispose()
    assert types == {
        "order_id": "bigint",
        "customer_id": "bigint",
        "order_date": "date",
        "amount": "double precision",
    }
    assert total == pytest.approx(558.5)
    # the embedded warehouse was not built: the seeds went to PostgreSQL only
    assert not (repo / ".dst" / "warehouse.duckdb").exists()


def test_apply_block_and_rollback_on_postgres(pg_shop: tuple[Path, dict[str, str]]) -> None:
    repo, env = pg_shop
    first = invoke(repo, "apply", "--format", "json", env=env)
    assert first.code == 0, first.stdout + first.stderr
    shop = first.lens("shop")
    assert shop["action"] == "promoted"
    assert {r["outcome"] for r in shop["self_test"]} == {"correct"}, shop["self_test"]
    assert shop["score"]["correct"] == shop["score"]["total"] == len(ANSWERS)
    promoted = _serving(repo)
    assert promoted == shop["serving_after"]

    # a breaking change: revenue doubled; its answers go stale, diverge and block
    doubled = REVENUE.replace(b"SUM(amount)", b"SUM(amount) * 2").decode()
    commit(repo, {"lenses/shop/metrics/revenue.yaml": doubled}, "double revenue")
    blocked = invoke(repo, "apply", "--format", "json", env=env)
    assert blocked.code == 1, blocked.stdout + blocked.stderr
    shop = blocked.lens("shop")
    assert shop["action"] == "blocked"
    wrong = {r["answer"] for r in shop["results"] if r["outcome"] == "wrong"}
    assert wrong == {"total_revenue", "revenue_by_segment"}
    assert _serving(repo) == promoted, "a blocked apply moves no serving ref"

    # under warn the same change promotes; rollback then restores the first content
    lens_yaml = LENS.decode() + "eval_gate: warn\n"
    commit(repo, {"lenses/shop/lens.yaml": lens_yaml}, "warn")
    warned = invoke(repo, "apply", "--format", "json", env=env)
    assert warned.code == 0, warned.stdout + warned.stderr
    second = _serving(repo)
    assert second not in (None, promoted)
    rolled = invoke(repo, "rollback", "shop", "--format", "json", env=env)
    assert rolled.code == 0, rolled.stdout + rolled.stderr
    third = _serving(repo)
    assert third not in (promoted, second)
    assert git(repo, "rev-parse", f"{third}:lens") == git(repo, "rev-parse", f"{promoted}:lens")
    history = git(repo, "log", "--first-parent", "--format=%H", "refs/dst/serving/shop").split()
    assert history[:3] == [third, second, promoted]


def test_a_failed_seed_commits_nothing(tmp_path: Path) -> None:
    with pg.scratch_database("dst_seed") as scratch:
        first = [SeedFile("shop", "orders", "lenses/shop/seeds/orders.csv", ORDERS_CSV)]
        assert seed(tmp_path, first, url=scratch.owner_url).row_counts == {"shop.orders": 5}
        owner = pg.engine(scratch.owner_url)
        try:
            with owner.begin() as conn:  # a view pins the table, so dropping it fails
                conn.exec_driver_sql("CREATE VIEW big_orders AS SELECT * FROM shop.orders")
            again = [
                SeedFile("shop", "customers", "lenses/shop/seeds/customers.csv", CUSTOMERS_CSV),
                SeedFile("shop", "orders", "lenses/shop/seeds/orders.csv", b"order_id\n1\n"),
                SeedFile("other", "orders", "lenses/other/seeds/orders.csv", ORDERS_CSV),
            ]
            with pytest.raises(WarehouseError, match=r"seeding .* failed"):
                seed(tmp_path, again, url=scratch.owner_url)
            with owner.connect() as conn:
                assert conn.exec_driver_sql("SELECT count(*) FROM shop.orders").scalar() == 5
                tables = conn.exec_driver_sql(
                    "SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY tablename) "
                    "FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                ).scalar()
                other = conn.exec_driver_sql("SELECT to_regnamespace('other')").scalar()
            assert tables == "shop.orders", "customers was created and rolled back with the rest"
            assert other is None, "the schema the failed seed created was rolled back too"
        finally:
            owner.dispose()
