"""The guard's memo: the same text, dialect and allow-list reuse a verdict; anything else is judged.

A suite re-checks the same statements run after run, so :func:`guard.checked_query`
keeps each verdict and tree by ``(sql, dialect, allow_functions)``. A cached
acceptance must never leak to another dialect or a narrower allow-list, a cached
refusal must never leak to a wider one, and a tree handed out must not be the
memo's own.
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from reconciler import guard
from reconciler.errors import UnsafeSqlError


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    guard._verdict.cache_clear()
    guard._parsed.cache_clear()


def test_the_same_text_dialect_and_allow_list_hit_the_memo() -> None:
    sql = "SELECT region, sum(amount) AS total FROM orders GROUP BY 1"
    first = guard.checked_query(sql, "duckdb")
    again = guard.checked_query(sql, "duckdb")
    assert again is first
    info = guard._verdict.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_a_changed_sql_string_misses() -> None:
    guard.checked_query("SELECT 1 AS x", "duckdb")
    with pytest.raises(UnsafeSqlError, match="not a query"):
        guard.checked_query("DELETE FROM orders", "duckdb")
    assert guard._verdict.cache_info().misses == 2


def test_a_changed_dialect_misses() -> None:
    # Backticks quote a name in MySQL, not in T-SQL: the MySQL verdict must not answer for it.
    sql = "SELECT `amount` FROM orders"
    guard.checked_query(sql, "mysql")
    with pytest.raises(UnsafeSqlError, match="does not parse"):
        guard.checked_query(sql, "tsql")
    assert guard._verdict.cache_info().misses == 2


def test_a_changed_allow_list_misses_both_ways() -> None:
    sql = "SELECT nextval('s') AS n"
    with pytest.raises(UnsafeSqlError):
        guard.checked_query(sql, "postgres")
    assert guard.checked_query(sql, "postgres", allow_functions=("NEXTVAL",)) is not None
    with pytest.raises(UnsafeSqlError):
        guard.checked_query(sql, "postgres")
    assert guard.checked_query(sql, "postgres", allow_functions=["nextval"]) is not None
    info = guard._verdict.cache_info()
    assert (info.misses, info.hits) == (2, 2), "case and container of the list do not matter"


def test_a_refusal_is_raised_afresh_each_time() -> None:
    errors = []
    for _ in range(2):
        with pytest.raises(UnsafeSqlError) as info:
            guard.checked_query("SELECT 1; SELECT 2", "duckdb")
        errors.append(info.value)
    assert errors[0] is not errors[1]
    assert errors[0].message == errors[1].message and errors[0].fix


def test_parse_query_hands_out_a_copy_of_the_kept_tree() -> None:
    sql = "SELECT a FROM t LIMIT 5"
    tree = guard.parse_query(sql, "duckdb")
    tree.set("limit", None)
    again = guard.parse_query(sql, "duckdb")
    assert isinstance(again.args.get("limit"), exp.Limit)
    assert guard._parsed.cache_info().hits == 1


def test_pinning_the_clock_leaves_the_kept_tree_alone() -> None:
    sql = "SELECT CURRENT_DATE AS d"
    tree = guard.checked_query(sql, "duckdb")
    pinned = guard.pin_current_date(sql, "2024-02-29", "duckdb", parsed=tree)
    assert "2024-02-29" in pinned
    assert guard.checked_query(sql, "duckdb").sql("duckdb") == "SELECT CURRENT_DATE AS d"
