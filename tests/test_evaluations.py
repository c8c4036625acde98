"""Executable gates and the trust ladder, on the example sales lens."""

from __future__ import annotations

import pytest

from reconciler.git import trees as gitstate
from reconciler.lens import Lens, load_lens
from reconciler.trust import (
    GATE_CARDINALITY,
    GATE_EXECUTION_ERROR,
    GATE_GROUNDING,
    GATE_NO_ANSWER,
    SCALAR_HINT,
    Evaluation,
    Execution,
    evaluate,
    first_repair,
    grounding,
    semantic_cardinality,
    trust_state_from_evaluations,
)
from tests.helpers import EXAMPLE_LENSES, PROJECT

MANY = tuple((region, 1.0) for region in ("East", "West", "North"))
FAN_OUT_SQL = (
    "SELECT r.region_name, SUM(o.quantity * o.unit_price) FROM orders o "
    "JOIN customers c ON o.customer_id = c.customer_id "
    "JOIN regions r ON c.region_id = r.region_id GROUP BY r.region_name"
)


@pytest.fixture(scope="module")
def sales() -> Lens:
    if not (EXAMPLE_LENSES / "sales" / "lens.yaml").is_file():
        pytest.skip("example lenses are not present")
    return load_lens("sales", gitstate.worktree_files(PROJECT, "sales"))


def by_gate(evals: tuple[Evaluation, ...]) -> dict[str, Evaluation]:
    return {e.gate: e for e in evals}


def generated(
    question: str, rows: tuple[tuple[object, ...], ...] = MANY, **kw: object
) -> Execution:
    return Execution(question, "generated", sql=FAN_OUT_SQL, rows=rows, executed=True, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "question",
    [
        "What is the total net revenue in 2024?",
        "How many orders were placed in 2023?",
        "Total revenue in 2024",
        "What was average order value?",
    ],
)
def test_scalar_question_with_many_rows_is_retried_for_one_value(question: str) -> None:
    ev = semantic_cardinality(generated(question))
    assert not ev.passed and ev.severity == "warning"
    assert ev.repair_action is not None
    assert (ev.repair_action.kind, ev.repair_action.route) == ("retry", "generated")
    assert ev.repair_action.hint == SCALAR_HINT


@pytest.mark.parametrize(
    "question",
    [
        "What is revenue by region?",
        "What are the top 5 products by revenue?",
        "How many orders did each customer place?",
        "Who bought the most in 2024?",
        "What is monthly revenue in 2024?",
        "What is the running total of revenue?",
        "How much did revenue change month over month?",
        "Total revenue per year",
    ],
)
def test_breakdown_and_series_phrasing_is_never_flagged(question: str) -> None:
    assert semantic_cardinality(generated(question)).passed


def test_certified_and_research_routes_and_single_rows_are_never_flagged() -> None:
    q = "What is the total net revenue?"
    assert semantic_cardinality(Execution(q, "certified_answer", sql="SELECT 1", rows=MANY)).passed
    assert semantic_cardinality(Execution(q, "research", sql="SELECT 1", rows=MANY)).passed
    assert semantic_cardinality(generated(q, rows=((1.0,),))).passed


def test_grounded_sql_passes_and_unknown_table_or_column_fails(sales: Lens) -> None:
    assert grounding(generated("revenue by region"), sales).passed
    cte = (
        "WITH t AS (SELECT customer_id AS cid FROM orders) "
        "SELECT cid, COUNT(*) AS n FROM t GROUP BY cid"
    )
    assert grounding(Execution("q", "generated", sql=cte), sales).passed
    bad_table = grounding(Execution("q", "generated", sql="SELECT salary FROM employees"), sales)
    assert not bad_table.passed and "employees" in bad_table.detail
    bad_col = grounding(Execution("q", "generated", sql="SELECT margin_pct FROM orders"), sales)
    assert not bad_col.passed and "margin_pct" in bad_col.detail
    garbage = grounding(Execution("q", "generated", sql="SELEC FROM ("), sales)
    assert not garbage.passed
    star = "SELECT COUNT(*) FROM (SELECT DISTINCT o.* FROM orders AS o) AS o"
    assert grounding(Execution("q", "generated", sql=star), sales).passed
    elsewhere = "SELECT e.* FROM employees AS e"
    assert "employees" in grounding(Execution("q", "generated", sql=elsewhere), sales).detail


def test_execution_error_retries_with_the_error_as_hint(sales: Lens) -> None:
    ex = Execution("q", "generated", sql="SELECT 1", error="Binder Error: column x", executed=True)
    ev = by_gate(evaluate(ex, sales))
    failed = ev[GATE_EXECUTION_ERROR]
    assert not failed.passed and failed.repair_action is not None
    assert failed.repair_action.kind == "retry" and "Binder Error" in failed.repair_action.hint
    assert trust_state_from_evaluations("generated", ev.values()) == "blocked"


def test_no_answer_escalates_to_research_and_blocks(sales: Lens) -> None:
    evals = evaluate(Execution("q", "generated"), sales)
    ev = by_gate(evals)[GATE_NO_ANSWER]
    assert not ev.passed and ev.severity == "blocking"
    assert ev.repair_action is not None and ev.repair_action.route == "research"
    assert first_repair(evals) == ev.repair_action
    assert trust_state_from_evaluations("generated", evals) == "blocked"


def test_trust_ladder(sales: Lens) -> None:
    ok = evaluate(generated("revenue by region"), sales)
    assert all(e.passed for e in ok)
    assert trust_state_from_evaluations("generated", ok) == "grounded"
    assert trust_state_from_evaluations("research", ok) == "grounded"
    assert trust_state_from_evaluations("certified_answer", ok) == "certified"
    assert trust_state_from_evaluations("clarify", ()) == "not_applicable"
    assert trust_state_from_evaluations("refuse", ()) == "not_applicable"
    ungrounded = evaluate(Execution("q", "generated", sql="SELECT x FROM t", executed=True), sales)
    assert not by_gate(ungrounded)[GATE_GROUNDING].passed
    assert trust_state_from_evaluations("generated", ungrounded) == "review_required"
    blocking = Evaluation("any", False, "blocking")
    assert trust_state_from_evaluations("certified_answer", (blocking,)) == "blocked"


def test_only_the_certified_route_is_ever_certified(sales: Lens) -> None:
    routes = ("generated", "research", "clarify", "refuse")
    for route in routes:
        evals = evaluate(generated("revenue by region"), sales)
        assert trust_state_from_evaluations(route, evals) != "certified"  # type: ignore[arg-type]


def test_evaluations_serialize_with_repair_action(sales: Lens) -> None:
    evals = evaluate(generated("What is the total net revenue?"), sales)
    js = by_gate(evals)[GATE_CARDINALITY].to_json()
    assert js["passed"] is False
    assert js["repair_action"] == {"kind": "retry", "route": "generated", "hint": SCALAR_HINT}
    assert set(js) == {"gate", "passed", "severity", "detail", "suggested_repair", "repair_action"}
