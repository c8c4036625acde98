"""The README's main job on PostgreSQL: the example lenses promote exactly as on DuckDB.

The example lenses' SQL is written in DuckDB's dialect (their default ``dialect:``);
on a PostgreSQL warehouse every statement runs transpiled with sqlglot (DESIGN §2
"Dialect"), the run records say so, and NUMERIC results are JSON numbers. Skips,
naming the reason, when no PostgreSQL server answers (``tests/pg.py``).
"""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import pytest

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.resultset import ResultSet
from tests import pg
from tests.figures import record
from tests.helpers import commit, invoke
from tests.helpers.examples import deployment_json, serving

EXPECTED = {"sales": 21, "finance": 19}
# SUM of an integer column: BIGINT on DuckDB, NUMERIC on PostgreSQL.
NUMERIC_QUESTION = "units sold in 2024"


def _scores(report: dict[str, object]) -> dict[str, tuple[int, int]]:
    lenses = report["lenses"]
    assert isinstance(lenses, list)
    return {x["lens"]: (x["score"]["correct"], x["score"]["total"]) for x in lenses}


def _ask(repo: Path, *extra: str) -> dict[str, object]:
    asked = invoke(repo, "ask", NUMERIC_QUESTION, "--lens", "sales", "--format", "json", *extra)
    assert asked.code == 0, asked.stdout + asked.stderr
    out = asked.json()
    assert isinstance(out, dict)
    return out


def test_example_lenses_promote_on_postgres_as_on_duckdb(lens_repo: Path) -> None:
    duck = invoke(lens_repo, "apply", "--dry-run", "--format", "json")
    assert duck.code == 0, duck.stdout + duck.stderr
    assert _scores(duck.json()) == {k: (v, v) for k, v in EXPECTED.items()}
    assert all(
        "transpiled" not in r
        for x in duck.json()["lenses"]
        for r in [*x["results"], *x["self_test"]]
    )

    with pg.scratch_database("dst_examples") as scratch:
        seeded = invoke(lens_repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        assert seeded.json()["schemas"] == sorted(EXPECTED), "a schema per lens"
        assert "sales.orders" in seeded.json()["tables"]
        owner = pg.engine(scratch.owner_url)
        with owner.begin() as conn:
            pg.grant_reader(conn, scratch.reader)
        owner.dispose()

        started = time.monotonic()
        applied = invoke(lens_repo, "apply", "--warehouse", scratch.reader_url, "--format", "json")
        record(f"postgres examples: apply both lenses {time.monotonic() - started:.2f} s")
        assert applied.code == 0, applied.stdout + applied.stderr
        assert _scores(applied.json()) == _scores(duck.json())
        assert {x["action"] for x in applied.json()["lenses"]} == {"promoted"}
        for lens in EXPECTED:
            oid = serving(lens_repo, lens)
            assert oid is not None
            run = deployment_json(lens_repo, oid, "state/run.json")
            ran = [*run["results"], *run["self_test"]]
            assert len({r["answer"] for r in ran}) == EXPECTED[lens]
            assert {r.get("transpiled") for r in ran} == {"duckdb→postgres"}

        asked = _ask(lens_repo, "--warehouse", scratch.reader_url)
        assert asked["transpiled"] == "duckdb→postgres"
        rows = asked["rows"]
        assert isinstance(rows, list)
        value = rows[0][0]
        assert isinstance(value, int) and not isinstance(value, bool), rows
    # the same deployment served from the embedded DuckDB: the same number
    duck_asked = _ask(lens_repo)
    assert "transpiled" not in duck_asked
    assert duck_asked["rows"] == rows


PIVOTED = """\
id: units_by_status_pivoted
question: Units by status, one column per status
sql: |
  SELECT * FROM (SELECT status, quantity FROM orders)
  PIVOT (SUM(quantity) FOR status IN ('completed', 'returned'))
status: active
provenance:
  certified_by: Dana Whitfield
  certified_at: "2025-01-15"
  source: manual
"""


def test_sql_sqlglot_cannot_carry_over_is_an_error_naming_the_file(lens_repo: Path) -> None:
    path = "lenses/sales/answers/units_by_status_pivoted.yaml"
    commit(lens_repo, {path: PIVOTED}, "a PIVOT answer")
    with pg.scratch_database("dst_pivot") as scratch:
        seeded = invoke(lens_repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        owner = pg.engine(scratch.owner_url)
        with owner.begin() as conn:
            pg.grant_reader(conn, scratch.reader)
        owner.dispose()
        applied = invoke(
            lens_repo,
            "apply",
            "--lens",
            "sales",
            "--warehouse",
            scratch.reader_url,
            "--format",
            "json",
        )
    assert applied.code == 1, applied.stdout + applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "blocked"
    failed = [r for r in [*sales["results"], *sales["self_test"]] if r["outcome"] == "error"]
    assert [r["answer"] for r in failed] == ["units_by_status_pivoted"]
    assert "cannot transpile SQL from duckdb to postgres" in failed[0]["detail"]
    assert any(path in m and "cannot transpile" in m for m in sales["messages"]), sales["messages"]


def test_transpile_carries_duckdb_dates_over_and_leaves_one_dialect_alone() -> None:
    sql = "SELECT MAKE_DATE(YEAR(order_date), 1, 1) AS y FROM orders"
    assert guard.transpile(sql, "duckdb", "duckdb") == sql
    assert guard.transpile(sql, "duckdb", "postgres") == (
        "SELECT MAKE_DATE(CAST(EXTRACT(YEAR FROM order_date) AS INT), 1, 1) AS y FROM orders"
    )
    with pytest.raises(UnsafeSqlError, match="cannot transpile SQL from duckdb to postgres"):
        guard.transpile(PIVOTED.split("|\n", 1)[1].split("status: active")[0], "duckdb", "postgres")


TRY_CASTS = (
    "SELECT TRY_CAST(v AS DOUBLE) AS d, TRY_CAST(v AS INTEGER) AS i, TRY_CAST(v AS DATE) AS t "
    "FROM (VALUES ('71'), ('null'), (' 3.5 '), ('-2e3'), (NULL), ('.5')) AS t(v)"
)


def test_try_cast_to_a_number_gives_null_on_postgresql_as_on_duckdb() -> None:
    """sqlglot writes DuckDB's TRY_CAST as CAST for PostgreSQL, which fails on 'null';
    transpiled, a cast to a number gives what DuckDB gives (NULL, rounding to integers)."""
    import duckdb
    import sqlalchemy as sa

    engine = pg.admin_or_skip()
    numbers = TRY_CASTS.replace(", TRY_CAST(v AS DATE) AS t", "")
    sql = guard.transpile(numbers, "duckdb", "postgres")
    assert "TRY_CAST" not in sql and "CASE WHEN" in sql
    try:
        with engine.connect() as conn:
            got = [tuple(r) for r in conn.execute(sa.text(sql))]
    finally:
        engine.dispose()
    assert got == duckdb.sql(numbers).fetchall()
    assert "CAST(v AS DATE) AS t" in guard.transpile(TRY_CASTS, "duckdb", "postgres")


def test_decimal_cells_are_json_numbers() -> None:
    result = ResultSet(("n", "x", "d"), ((Decimal("32418"), Decimal("12.50"), None),))
    assert result.preview()["rows"] == [[32418, 12.5, None]]
