"""Result comparison: golden cases in fixtures/compare_cases.yaml plus properties."""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from reconciler.compare.diff import MAX_REPORTED_ROWS, DivergenceKind, Verdict, compare
from reconciler.compare.ordering import OrderKey, order_keys
from reconciler.errors import UnsafeSqlError
from reconciler.loader import load_yaml
from reconciler.resultset import ResultSet

CASES_FILE = Path(__file__).parent / "fixtures" / "compare_cases.yaml"
CASE_KEYS = {
    "id",
    "oracle",
    "generated",
    "oracle_sql",
    "oracle_truncated",
    "generated_truncated",
    "expect",
}
EXPECT_KEYS = {"verdict", "kinds", "missing_count", "extra_count", "detail"}


def _load_cases() -> list[dict[str, Any]]:
    # The project's loader, so a duplicated key in a case is an error, not a silent overwrite.
    doc = load_yaml("tests/fixtures/compare_cases.yaml", CASES_FILE.read_bytes())
    cases: list[dict[str, Any]] = doc.data
    return cases


CASES = _load_cases()


def _cell(value: Any) -> Any:
    """Decode a tagged YAML string into the Python value a driver would return."""
    if isinstance(value, list):
        return [_cell(item) for item in value]
    if not isinstance(value, str) or ":" not in value:
        return value
    tag, _, text = value.partition(":")
    if tag == "decimal":
        return Decimal(text)
    if tag == "date":
        return date.fromisoformat(text)
    if tag == "ts":
        return datetime.fromisoformat(text)
    if tag == "float":
        return float(text)
    if tag == "str":
        return text
    return value


def _result(side: dict[str, Any], truncated: bool) -> ResultSet:
    assert set(side) == {"columns", "rows"}
    return ResultSet(
        columns=tuple(side["columns"]),
        rows=tuple(tuple(_cell(v) for v in row) for row in side["rows"]),
        truncated=truncated,
    )


def test_golden_file_is_well_formed() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len(CASES) >= 30
    for case in CASES:
        assert set(case) <= CASE_KEYS, case["id"]
        assert {"id", "oracle", "generated", "expect"} <= set(case), case["id"]
        expect = case["expect"]
        assert set(expect) <= EXPECT_KEYS and {"verdict", "kinds"} <= set(expect), case["id"]
        assert expect["verdict"] in {v.value for v in Verdict}, case["id"]
        assert set(expect["kinds"]) <= {k.value for k in DivergenceKind}, case["id"]
    covered = {kind for case in CASES for kind in case["expect"]["kinds"]}
    assert covered == {k.value for k in DivergenceKind}, "every divergence kind has a case"
    verdicts = {case["expect"]["verdict"] for case in CASES}
    assert verdicts == {v.value for v in Verdict}, "every verdict has a case"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    oracle = _result(case["oracle"], case.get("oracle_truncated", False))
    generated = _result(case["generated"], case.get("generated_truncated", False))
    sql = case.get("oracle_sql")
    order = order_keys(sql, "duckdb") if sql is not None else None
    expect = case["expect"]

    result = compare(oracle, generated, order=order)

    assert result.verdict.value == expect["verdict"], result.detail
    assert [k.value for k in result.kinds] == expect["kinds"], result.detail
    if "missing_count" in expect:
        assert result.missing_count == expect["missing_count"], result.detail
    if "extra_count" in expect:
        assert result.extra_count == expect["extra_count"], result.detail
    if "detail" in expect:
        assert expect["detail"] in result.detail
    assert len(result.missing) == min(result.missing_count, MAX_REPORTED_ROWS)
    assert len(result.extra) == min(result.extra_count, MAX_REPORTED_ROWS)
    if result.verdict is not Verdict.DIVERGED:
        assert result.kinds == () and result.missing == () and result.extra == ()
    json.dumps(result.record(), allow_nan=False)


# --- order_keys ------------------------------------------------------------------------

NAME = OrderKey


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t", None),
        (
            "SELECT a, b AS Total FROM t ORDER BY total DESC, a",
            (NAME("Total", desc=True), NAME("a")),
        ),
        ("SELECT a, SUM(x) FROM t GROUP BY a ORDER BY sum(X) DESC", (NAME(position=2, desc=True),)),
        ("SELECT t.a, b FROM t ORDER BY 2, t.a", (NAME(position=2), NAME(position=1))),
        ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", None),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", None),
        ("SELECT a, ROW_NUMBER() OVER (ORDER BY b) FROM t", None),
        ("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a DESC", (NAME("a", desc=True),)),
        ("(SELECT a, b FROM t ORDER BY b)", (NAME("b"),)),
        ("SELECT *, x + 1 AS y FROM t ORDER BY y, z", (NAME("y"), NAME("z"))),
        ("SELECT a FROM t ORDER BY b, a", ()),
        ("SELECT a, b FROM t ORDER BY a, b + 1, b", (NAME("a"),)),
    ],
)
def test_order_keys(sql: str, expected: tuple[OrderKey, ...] | None) -> None:
    assert order_keys(sql, "duckdb") == expected


def test_order_keys_rejects_sql_that_does_not_parse() -> None:
    with pytest.raises(UnsafeSqlError):
        order_keys("SELECT FROM WHERE ORDER", "duckdb")


def test_order_key_names_exactly_one_target() -> None:
    with pytest.raises(ValueError):
        OrderKey()
    with pytest.raises(ValueError):
        OrderKey(column="a", position=1)
    with pytest.raises(ValueError):
        OrderKey(position=0)


def test_order_key_that_names_no_column_ends_the_check() -> None:
    oracle = ResultSet(("k", "v"), (("a", 1), ("b", 2)))
    generated = ResultSet(("k", "v"), (("b", 2), ("a", 1)))
    assert compare(oracle, generated, order=(OrderKey("gone"), OrderKey("k"))).verdict is (
        Verdict.MATCH
    )
    assert compare(oracle, generated, order=(OrderKey("K"),)).verdict is Verdict.DIVERGED


# --- details of the record --------------------------------------------------------------


def test_record_is_strict_json_and_stringifies_driver_types() -> None:
    oracle = ResultSet(("d", "v"), ((date(2024, 1, 31), Decimal("1.50")), (None, math.nan)))
    generated = ResultSet(("d", "v"), ())
    record = compare(oracle, generated).record()
    assert record["verdict"] == "diverged"
    assert record["kinds"] == ["missing_rows"]
    assert record["missing"] == [["2024-01-31", "1.50"], [None, "NaN"]]
    json.dumps(record, allow_nan=False)


def test_reported_rows_are_capped_but_counted() -> None:
    oracle = ResultSet(("n",), tuple((i,) for i in range(50)))
    result = compare(oracle, ResultSet(("n",), ()))
    assert result.missing_count == 50
    assert result.missing == tuple((i,) for i in range(MAX_REPORTED_ROWS))
    assert result.detail == "50 missing rows"


def test_extra_rows_are_reported_in_the_oracles_column_order() -> None:
    oracle = ResultSet(("a", "b"), ((1, "x"),))
    generated = ResultSet(("b", "a"), (("x", 1), ("y", 2)))
    assert compare(oracle, generated).extra == ((2, "y"),)


def test_rows_wider_than_their_columns_are_a_caller_error() -> None:
    with pytest.raises(ValueError, match="generated row 1"):
        compare(ResultSet(("a",), ((1,),)), ResultSet(("a",), ((1, 2),)))


def test_negative_tolerance_is_refused() -> None:
    with pytest.raises(ValueError):
        compare(ResultSet(("a",), ()), ResultSet(("a",), ()), rel_tol=-1.0)


def test_tolerance_is_a_parameter() -> None:
    oracle = ResultSet(("k", "v"), (("a", 100.0), ("b", 1.0)))
    generated = ResultSet(("k", "v"), (("a", 100.5), ("b", 1.0)))
    assert compare(oracle, generated).verdict is Verdict.DIVERGED
    assert compare(oracle, generated, rel_tol=0.01).verdict is Verdict.MATCH


def test_every_float_row_wiggled_still_matches() -> None:
    # Aggregation order can move the last bits of every DOUBLE in the result.
    oracle = ResultSet(("k", "v"), tuple((i % 7, i * 0.1) for i in range(500)))
    wiggled = tuple((k, v * (1 + 1e-13)) for k, v in reversed(oracle.rows))
    assert compare(oracle, ResultSet(("k", "v"), wiggled)).verdict is Verdict.MATCH


# --- properties -----------------------------------------------------------------------

# Small alphabets so that duplicates and cross-type equalities come up often.
CELLS = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.sampled_from([0.5, -1.25, 3.0, 1e-3, math.nan]),
    st.sampled_from([Decimal("0.5"), Decimal("2.00"), Decimal("-7.1"), Decimal("NaN")]),
    st.booleans(),
    st.sampled_from(["a", "b", ""]),
    st.sampled_from([date(2024, 1, 31), datetime(2024, 1, 31), datetime(2024, 1, 31, 8)]),
)


@st.composite
def results(draw: st.DrawFn, min_rows: int = 0) -> ResultSet:
    width = draw(st.integers(1, 3))
    row = st.tuples(*([CELLS] * width))
    rows = draw(st.lists(row, min_size=min_rows, max_size=8))
    return ResultSet(tuple(f"c{i}" for i in range(width)), tuple(rows))


@given(data=st.data(), result=results())
def test_permuted_rows_match_without_order(data: st.DataObject, result: ResultSet) -> None:
    shuffled = data.draw(st.permutations(result.rows))
    assert compare(result, ResultSet(result.columns, tuple(shuffled))).verdict is Verdict.MATCH


@given(data=st.data(), result=results(min_rows=1))
def test_a_duplicated_row_diverges(data: st.DataObject, result: ResultSet) -> None:
    row = data.draw(st.sampled_from(result.rows))
    fanned_out = ResultSet(result.columns, (*result.rows, row))
    forward = compare(result, fanned_out)
    assert forward.verdict is Verdict.DIVERGED
    assert forward.kinds == (DivergenceKind.EXTRA_ROWS,)
    assert forward.extra_count == 1
    assert compare(fanned_out, result).kinds == (DivergenceKind.MISSING_ROWS,)


@given(left=results(), right=results())
def test_verdict_is_symmetric(left: ResultSet, right: ResultSet) -> None:
    forward, backward = compare(left, right), compare(right, left)
    assert forward.verdict is backward.verdict
    assert (forward.missing_count, forward.extra_count) == (
        backward.extra_count,
        backward.missing_count,
    )


@given(data=st.data(), result=results(min_rows=1))
def test_a_changed_cell_diverges(data: st.DataObject, result: ResultSet) -> None:
    index = data.draw(st.integers(0, len(result.rows) - 1))
    # A fresh string equals no cell of any type, so the changed row has no partner.
    changed = ("never-seen", *result.rows[index][1:])
    rows = (*result.rows[:index], changed, *result.rows[index + 1 :])
    outcome = compare(result, ResultSet(result.columns, rows))
    assert outcome.verdict is Verdict.DIVERGED
    assert outcome.kinds in (
        (DivergenceKind.MISSING_ROWS, DivergenceKind.EXTRA_ROWS),
        (DivergenceKind.SINGLE_CELL,),
    )


FLOATS = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_subnormal=False)


@settings(max_examples=50)
@given(
    data=st.data(),
    rows=st.lists(st.tuples(st.sampled_from(["a", "b"]), FLOATS, FLOATS), max_size=30),
)
def test_float_wiggle_within_tolerance_matches(
    data: st.DataObject, rows: list[tuple[str, float, float]]
) -> None:
    oracle = ResultSet(("k", "x", "y"), tuple(rows))
    wiggled = [(k, x * (1 + 1e-12), y * (1 - 1e-12)) for k, x, y in rows]
    shuffled = data.draw(st.permutations(wiggled))
    assert compare(oracle, ResultSet(("k", "x", "y"), tuple(shuffled))).verdict is Verdict.MATCH
