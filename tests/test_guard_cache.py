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


# -- what the suite keeps by text past the guard: pinned SQL, oracle analysis, gate trees --


def test_pinned_sql_is_kept_per_text_day_and_dialect() -> None:
    from reconciler.warehouse import guarded

    guarded._pinned.cache_clear()
    sql = "SELECT CURRENT_DATE AS d"
    first = guarded._pinned(sql, "2024-02-29", "duckdb")
    assert guarded._pinned(sql, "2024-02-29", "duckdb") is first
    other_day = guarded._pinned(sql, "2024-03-01", "duckdb")
    assert "2024-02-29" in first and "2024-03-01" in other_day
    assert guarded._pinned("SELECT 1 AS x", "2024-02-29", "duckdb") == "SELECT 1 AS x"
    info = guarded._pinned.cache_info()
    assert (info.hits, info.misses) == (1, 3)
    assert first == guard.pin_current_date(sql, "2024-02-29", "duckdb")


def test_a_bad_day_is_refused_every_time() -> None:
    from reconciler.errors import UsageError
    from reconciler.warehouse import guarded

    for _ in range(2):
        with pytest.raises(UsageError, match="not a calendar date"):
            guarded._pinned("SELECT CURRENT_DATE AS d", "2024-02-30", "duckdb")


def test_the_oracle_analysis_is_kept_by_text_and_equals_a_fresh_one() -> None:
    from reconciler.compare import ordering, ties

    ordering.order_keys.cache_clear()
    ties.limit_cut.cache_clear()
    sql = "SELECT region, SUM(x) AS total FROM t GROUP BY 1 ORDER BY total DESC LIMIT 3"
    cut = ties.limit_cut(sql, "duckdb")
    assert ties.limit_cut(sql, "duckdb") is cut
    assert cut == ties.limit_cut.__wrapped__(sql, "duckdb")
    assert cut is not None and cut.limit == 3
    assert ties.limit_cut(sql.replace("LIMIT 3", "LIMIT 4"), "duckdb").limit == 4  # type: ignore[union-attr]
    keys = ordering.order_keys(sql, "duckdb")
    assert ordering.order_keys(sql, "duckdb") is keys
    assert keys == ordering.order_keys.__wrapped__(sql, "duckdb")
    with pytest.raises(UnsafeSqlError):
        ordering.order_keys("SELECT 1; SELECT 2", "duckdb")
    with pytest.raises(UnsafeSqlError):
        ordering.order_keys("SELECT 1; SELECT 2", "duckdb")  # a refusal is not kept


def test_the_join_grain_gate_reads_one_kept_tree_per_text_and_dialect() -> None:
    from reconciler import trust

    trust._read_only_tree.cache_clear()
    sql = "SELECT a FROM t"
    tree = trust._read_only_tree(sql, "duckdb")
    assert tree is not None and trust._read_only_tree(sql, "duckdb") is tree
    assert trust._read_only_tree(sql, "postgres") is not tree
    assert trust._read_only_tree("SELECT FROM WHERE (", "duckdb") is None
    assert tree.sql("duckdb") == "SELECT a FROM t"


# --- one parse per text, shared read-only by the readers --------------------------------

SHARED = (
    "SELECT c.segment, count(*) AS n FROM orders AS o JOIN customers AS c "
    "ON c.customer_id = o.customer_id WHERE o.status = 'completed' "
    "GROUP BY c.segment ORDER BY n DESC, c.segment"
)


def test_the_shared_tree_is_the_memos_and_parse_query_copies_it() -> None:
    first = guard.shared_query(SHARED, "duckdb")
    assert guard.shared_query(SHARED, "duckdb") is first
    copied = guard.parse_query(SHARED, "duckdb")
    assert copied is not first and copied == first
    assert guard._parsed.cache_info().misses == 1


def test_every_reader_of_a_statement_shares_one_parse_and_leaves_it_unchanged() -> None:
    from reconciler.compare.ordering import order_keys
    from reconciler.probes.cuts import null_group_note
    from reconciler.probes.thinning import thinning_probe
    from reconciler.trust import Execution, _read_only_tree

    _read_only_tree.cache_clear()
    tree = guard.shared_query(SHARED, "duckdb")
    before = tree.sql(dialect="duckdb")
    ex = Execution(
        "q", "generated", sql=SHARED, columns=("segment", "n"), rows=((None, 3), ("A", 2)),
        executed=True, dialect="duckdb",
    )  # fmt: skip
    assert order_keys(SHARED, "duckdb")
    assert thinning_probe(SHARED, "duckdb") is not None  # it builds a probe from the tree
    null_group_note(ex, "duckdb")
    assert _read_only_tree(SHARED, "duckdb") is tree
    assert guard.checked_query(SHARED, "duckdb") is not None
    # one parse for all of them, and none of them changed the shared tree
    assert guard._parsed.cache_info().misses == 1
    assert guard.shared_query(SHARED, "duckdb") is tree
    assert tree.sql(dialect="duckdb") == before
    assert all(node.root() is tree for node in tree.walk())  # no node was moved elsewhere
