"""The read-only guard, driven by the golden cases in fixtures/readonly_cases.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import guard
from reconciler.errors import UnsafeSqlError, UsageError

CASES_FILE = Path(__file__).parent / "fixtures" / "readonly_cases.yaml"
CASE_KEYS = {"id", "dialect", "sql", "expect", "reads_clock", "pinned"}
AS_OF = "2024-02-29"


def _load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    return cases


CASES = _load_cases()
ALLOWED = [c for c in CASES if c["expect"] == "allow"]


def test_golden_file_is_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    for case in CASES:
        assert set(case) <= CASE_KEYS, case["id"]
        assert {"id", "dialect", "sql", "expect"} <= set(case), case["id"]
        assert case["expect"] in ("allow", "refuse"), case["id"]
        if case["expect"] == "refuse":
            assert "reads_clock" not in case and "pinned" not in case, case["id"]
    assert len(CASES) >= 40
    assert {c["dialect"] for c in CASES} >= {"duckdb", "postgres", "sqlite"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_check_read_only(case: dict[str, Any]) -> None:
    if case["expect"] == "allow":
        guard.check_read_only(case["sql"], case["dialect"])
    else:
        with pytest.raises(UnsafeSqlError) as info:
            guard.check_read_only(case["sql"], case["dialect"])
        assert info.value.fix, "a refusal says what to do instead"


@pytest.mark.parametrize("case", ALLOWED, ids=[c["id"] for c in ALLOWED])
def test_reads_current_date(case: dict[str, Any]) -> None:
    assert guard.reads_current_date(case["sql"], case["dialect"]) is case.get("reads_clock", False)


@pytest.mark.parametrize("case", ALLOWED, ids=[c["id"] for c in ALLOWED])
def test_pin_current_date(case: dict[str, Any]) -> None:
    dialect = case["dialect"]
    pinned = guard.pin_current_date(case["sql"], AS_OF, dialect)
    assert not guard.reads_current_date(pinned, dialect), pinned
    guard.check_read_only(pinned, dialect)
    if not case.get("reads_clock", False):
        assert pinned == case["sql"], "SQL without a clock read passes through untouched"
    if "pinned" in case:
        assert pinned == case["pinned"]


def test_pin_accepts_a_tree_and_leaves_it_unchanged() -> None:
    tree = guard.check_read_only("SELECT CURRENT_DATE AS d", "duckdb")
    before = tree.sql("duckdb")
    assert guard.pin_current_date(tree, AS_OF, "duckdb") == "SELECT CAST('2024-02-29' AS DATE) AS d"
    assert tree.sql("duckdb") == before


def test_pin_rejects_an_impossible_date() -> None:
    with pytest.raises(UsageError, match="not a calendar date"):
        guard.pin_current_date("SELECT CURRENT_DATE", "2023-02-29", "duckdb")


def test_refusal_names_the_function() -> None:
    with pytest.raises(UnsafeSqlError, match=r"read_csv_auto\(\)"):
        guard.check_read_only("SELECT * FROM read_csv_auto('x.csv')", "duckdb")


def test_command_fallback_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(UnsafeSqlError):
        guard.check_read_only("CALL p()", "postgres")
    assert "Falling back" not in caplog.text


def test_expression_may_not_read_files() -> None:
    with pytest.raises(UnsafeSqlError):
        guard.parse_expression("(SELECT 1)", "duckdb")
    with pytest.raises(UnsafeSqlError, match="read_text"):
        guard.parse_expression("length(read_text('x'))", "duckdb")
    guard.parse_expression("sum(amount) * 2", "duckdb")


def test_tables_read_excludes_ctes() -> None:
    sql = "WITH r AS (SELECT * FROM orders) SELECT * FROM r JOIN Customers c ON c.id = r.cid"
    assert guard.tables_read(sql, "duckdb") == {"orders", "customers"}
