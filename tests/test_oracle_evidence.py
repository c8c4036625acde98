"""Ambiguous and vacuous oracles (DESIGN §4 step 3): a real DuckDB, the real fast tier.

A shop where two segments tie on revenue: an oracle whose LIMIT cuts through that tie is
*ambiguous*, and a generated result that kept the other tied row is ``correct`` with an
``ambiguous oracle`` note, never wrong — while a difference outside the tie stays wrong.
An oracle with no rows is *vacuous* unless the answer is marked ``expect_empty: true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from reconciler.compare.ties import AMBIGUOUS, ambiguity, kept_other_ties, limit_cut
from reconciler.ids import AnswerId
from reconciler.lens import load_lens
from reconciler.results import evidence_notes
from reconciler.resultset import ResultSet
from reconciler.suite import VACUOUS, AnswerResult, Outcome, ValueCache, run_answer
from reconciler.warehouse.connection import Warehouse
from tests.helpers import certified, commit, invoke

JOIN = "FROM orders o JOIN customers c ON o.customer_id = c.customer_id"
BY_SEGMENT = f"SELECT c.segment, SUM(o.amount) AS revenue {JOIN} GROUP BY c.segment"


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Warehouse]:
    """Revenue by segment: Retail 50, Enterprise 30, SMB 30 (a tie for second place)."""
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (customer_id INT, segment VARCHAR)")
    con.execute("INSERT INTO customers VALUES (1, 'Retail'), (2, 'Enterprise'), (3, 'SMB')")
    con.execute(
        "CREATE TABLE orders (order_id INT, customer_id INT, order_date DATE, amount DOUBLE)"
    )
    con.execute(
        "INSERT INTO orders VALUES (1, 1, DATE '2024-01-05', 50), "
        "(2, 2, DATE '2024-02-05', 30), (3, 3, DATE '2024-03-05', 30)"
    )
    con.close()
    wh = Warehouse.open(f"duckdb:///{path}")
    yield wh
    wh.close()


def verify(wh: Warehouse, question: str, sql: str, extra: str = "") -> AnswerResult:
    """Run the certified suite for one answer of the shop lens."""
    files = certified.files()
    answer = certified.ANSWER.format(id="probe", q=question, sql=f'"{sql}"') + extra
    files["answers/probe.yaml"] = answer.encode()
    lens = load_lens("shop", files)
    values = ValueCache(wh, 10).for_lens(lens)
    return run_answer(lens, lens.answers[AnswerId("probe")], wh, values)


def kept(result: AnswerResult, side: str) -> list[str]:
    preview = result.oracle if side == "oracle" else result.generated
    assert preview is not None
    return [row[0] for row in preview["rows"]]


def test_a_limit_through_a_tie_that_kept_other_tied_rows_is_correct(shop: Warehouse) -> None:
    # The oracle reads the segments in reverse order, so its LIMIT keeps SMB of the tie;
    # the fast tier breaks ties by segment and keeps Enterprise.
    oracle = f"SELECT segment, revenue FROM ({BY_SEGMENT} ORDER BY c.segment DESC) "
    result = verify(shop, "Top 2 segments by revenue", oracle + "ORDER BY revenue DESC LIMIT 2")
    assert kept(result, "oracle") == ["Retail", "SMB"]  # the case this test is about
    assert kept(result, "generated") == ["Retail", "Enterprise"]
    assert result.outcome is Outcome.CORRECT, result.detail
    assert "but for which tied rows it kept (ambiguous oracle)" in result.detail
    assert [n.split(":")[0] for n in result.notes] == [AMBIGUOUS]
    assert "add a tie-breaker to the ORDER BY" in result.notes[0]
    assert result.record()["notes"] == list(result.notes)


def test_a_difference_outside_the_tie_stays_wrong(shop: Warehouse) -> None:
    doubled = BY_SEGMENT.replace(
        "SUM(o.amount)", "SUM(o.amount) * CASE WHEN c.segment = 'Retail' THEN 2 ELSE 1 END"
    )
    oracle = f"SELECT segment, revenue FROM ({doubled}) ORDER BY revenue DESC LIMIT 2"
    result = verify(shop, "Top 2 segments by revenue", oracle)
    assert result.outcome is Outcome.WRONG, result.detail
    assert result.notes and result.notes[0].startswith(AMBIGUOUS)  # still asked to fix it


def test_a_limit_without_order_by_is_ambiguous(shop: Warehouse) -> None:
    result = verify(shop, "Top 2 segments by revenue", f"{BY_SEGMENT} LIMIT 2")
    assert result.outcome is Outcome.CORRECT, result.detail
    assert result.notes and "LIMIT 2 without ORDER BY" in result.notes[0]
    # whatever rows the engine kept: the comparator's own verdicts, on real results
    cut = limit_cut(f"{BY_SEGMENT} LIMIT 2", "duckdb")
    assert cut is not None and cut.keys is None

    def run(sql: str) -> ResultSet:
        return shop.execute(sql, row_cap=1000, timeout_s=10)

    oracle, unlimited = run(f"{BY_SEGMENT} LIMIT 2"), run(cut.unlimited_sql)
    assert ambiguity(cut, oracle, unlimited) is not None
    other = run(f"{BY_SEGMENT} ORDER BY segment LIMIT 2")
    assert kept_other_ties(cut, oracle, unlimited, other)
    one_row = run(f"{BY_SEGMENT} ORDER BY segment LIMIT 1")
    assert not kept_other_ties(cut, oracle, unlimited, one_row)


def test_a_limit_that_cuts_no_tie_is_not_ambiguous(shop: Warehouse) -> None:
    oracle = f"{BY_SEGMENT} ORDER BY revenue DESC LIMIT 1"
    result = verify(shop, "Top 1 segment by revenue", oracle)
    assert result.outcome is Outcome.CORRECT, result.detail
    assert result.notes == ()
    with_ties = f"{BY_SEGMENT} ORDER BY revenue DESC FETCH FIRST 2 ROWS WITH TIES"
    assert limit_cut(with_ties, "duckdb") is None  # keeps every tie: never ambiguous


EMPTY = f"{BY_SEGMENT.replace('GROUP BY', 'WHERE YEAR(o.order_date) = 2019 GROUP BY')}"


def test_an_empty_oracle_is_vacuous_unless_marked_expect_empty(shop: Warehouse) -> None:
    vacuous = verify(shop, "Revenue by segment in 2019", EMPTY)
    assert (vacuous.oracle or {}).get("rows") == [] and (vacuous.generated or {}).get("rows") == []
    # weak evidence, reported loudly and counted, but never a block
    assert vacuous.outcome is Outcome.CORRECT
    assert [n.split(":")[0] for n in vacuous.notes] == [VACUOUS]
    warning = evidence_notes([vacuous], [])
    assert warning[0].startswith(f"WARNING 1 {VACUOUS}(s)") and "probe" in warning[0]
    assert "`expect_empty: true`" in warning[0]
    marked = verify(shop, "Revenue by segment in 2019", EMPTY, "expect_empty: true\n")
    assert marked.outcome is Outcome.CORRECT and marked.notes == ()
    assert evidence_notes([marked], []) == []
    assert "notes" not in marked.record()


def test_certify_asks_for_a_tie_breaker_and_for_the_expect_empty_mark(
    promoted_repo: Path, tmp_path: Path
) -> None:
    tied = tmp_path / "tied.sql"
    # a LIMIT without ORDER BY keeps any two of the segments
    tied.write_text("SELECT DISTINCT segment FROM customers LIMIT 2\n")
    args = ["certify", "--lens", "sales", "--question", "Two segments", "--sql", str(tied)]
    shown = invoke(promoted_repo, *args, "--dry-run")
    assert shown.code == 0, shown.stderr
    assert "warning: ambiguous oracle: LIMIT 2 without ORDER BY" in shown.stdout
    assert "add an ORDER BY with a tie-breaker before certifying" in shown.stdout
    empty = tmp_path / "empty.sql"
    empty.write_text("SELECT order_id FROM orders WHERE order_date < DATE '1900-01-01'\n")
    args = ["certify", "--lens", "sales", "--question", "Orders before 1900", "--sql", str(empty)]
    asked = invoke(promoted_repo, *args, "--dry-run", "--format", "json")
    assert asked.code == 0, asked.stderr
    assert asked.json()["notes"][0].startswith("vacuous oracle")
    assert "mark it with --expect-empty" in asked.stderr
    done = invoke(promoted_repo, *args, "--expect-empty", "--yes", "--by", "Pat Lee")
    assert done.code == 0, done.stderr
    assert "vacuous oracle" not in done.stdout
    path = promoted_repo / "lenses/sales/answers/orders_before_1900.yaml"
    assert "expect_empty: true\n" in path.read_text()
    assert invoke(promoted_repo, "validate", "lenses/sales").code == 0
    # certified as it is, the self-test asks again for the tie-breaker
    ambiguous = ["certify", "--lens", "sales", "--question", "Two segments", "--sql", str(tied)]
    assert invoke(promoted_repo, *ambiguous, "--yes", "--by", "Pat Lee").code == 0
    commit(promoted_repo, {}, "certify two answers")
    applied = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    sales = applied.lens("sales")
    assert {r["answer"] for r in sales["self_test"]} == {"two_segments", "orders_before_1900"}
    asks = [m for m in sales["messages"] if m.startswith("self-test: two_segments: ")]
    assert asks and AMBIGUOUS in asks[0] and "tie-breaker" in asks[0]
    assert not any(VACUOUS in m for m in sales["messages"])  # the empty one is marked


@pytest.mark.parametrize(
    ("sql", "described"),
    [
        ("SELECT a, b FROM t ORDER BY b DESC LIMIT 3", "LIMIT 3 on (b DESC)"),
        ("SELECT a, b FROM t ORDER BY 2 FETCH FIRST 4 ROWS ONLY", "LIMIT 4 on (#2)"),
        ("(SELECT a FROM t ORDER BY a LIMIT 2)", "LIMIT 2 on (a)"),
        ("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a LIMIT 2", "LIMIT 2 on (a)"),
        ("SELECT a FROM t LIMIT 2", "LIMIT 2 without ORDER BY"),
        ("SELECT a FROM t ORDER BY a", None),  # nothing cut
        ("SELECT a FROM t ORDER BY a LIMIT 2 OFFSET 1", None),  # left strict
        ("SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS WITH TIES", None),  # keeps ties
        ("SELECT a FROM t ORDER BY b LIMIT 2", None),  # the key is not an output column
        ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 2) AS s", None),  # inner LIMIT
    ],
)
def test_limit_cut_reads_the_top_level_limit_from_the_ast(sql: str, described: str | None) -> None:
    cut = limit_cut(sql, "duckdb")
    assert (cut.describe() if cut is not None else None) == described
    if cut is not None:
        assert "LIMIT" not in cut.unlimited_sql.upper().split("ORDER BY")[-1]
        assert "FETCH" not in cut.unlimited_sql.upper()


def test_expect_empty_on_sql_that_returns_rows_is_exit_2_and_writes_nothing(
    promoted_repo: Path, tmp_path: Path
) -> None:
    some = tmp_path / "some.sql"
    some.write_text("SELECT DISTINCT segment FROM customers ORDER BY segment\n")
    args = ["certify", "--lens", "sales", "--question", "The segments", "--sql", str(some)]
    done = invoke(promoted_repo, *args, "--expect-empty", "--yes", "--by", "Pat Lee")
    assert done.code == 2, done.stdout + done.stderr
    assert "--expect-empty: the SQL returns" in done.stderr and "drop --expect-empty" in done.stderr
    assert not (promoted_repo / "lenses/sales/answers/the_segments.yaml").exists()


def test_certify_names_a_tie_a_later_key_breaks(promoted_repo: Path, tmp_path: Path) -> None:
    def dry_run(rows: str) -> str:
        sql = tmp_path / "oracle.sql"
        sql.write_text(
            f"SELECT name FROM (VALUES {rows}) AS t(name, n)\nORDER BY n DESC, name LIMIT 1\n"
        )
        args = ["certify", "--lens", "sales", "--question", "The most n", "--sql", str(sql)]
        shown = invoke(promoted_repo, *args, "--dry-run")
        assert shown.code == 0, shown.stderr
        return shown.stdout

    # 'a' and 'b' tie on n; the name decides which one LIMIT 1 keeps
    tied = dry_run("('a', 2), ('b', 2), ('c', 1)")
    assert "tie at the cut: 2 rows rank within LIMIT 1 on n DESC" in tied
    assert "tie at the cut" not in dry_run("('a', 3), ('b', 2), ('c', 1)")
