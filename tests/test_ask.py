"""``dst ask``: the serving path on the serving version, through the real CLI.

The smart tier is exercised against :mod:`tests.llm_double`, a local HTTP server
speaking the OpenAI chat-completions protocol.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import commit, invoke
from tests.llm_double import serve

SCALAR_SQL = "SELECT SUM(quantity * unit_price) AS revenue FROM orders"
FAN_OUT_SQL = (
    "SELECT c.segment, SUM(o.quantity * o.unit_price) AS revenue FROM orders o "
    "JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.segment ORDER BY 1"
)
# The fast tier declines both (words it does not know), so the smart tier answers.
SCALAR_Q = "What is the total revenue from customers whose names start with A?"
BREAKDOWN_Q = "What is the total revenue by segment for customers whose names start with A?"
SECRET = "sk-test-SECRET-do-not-print-4242"


def ask(
    repo: Path, question: str, *extra: str, env: dict[str, str] | None = None, code: int = 0
) -> Any:
    """``dst ask --format json``; ``code`` 0 when data is served, 1 when nothing is."""
    done = invoke(repo, "ask", question, "--lens", "sales", "--format", "json", *extra, env=env)
    assert done.code == code, done.stderr
    return done.json()


def copy_of(template: Path, where: Path) -> Path:
    path = where / "repo"
    shutil.copytree(template, path, symlinks=True)
    return path


@pytest.fixture(scope="module")
def served(_seeded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example lenses with sales promoted (``dst ask`` writes nothing, so tests share it)."""
    repo = copy_of(_seeded_template, tmp_path_factory.mktemp("served"))
    applied = invoke(repo, "apply", "--lens", "sales")
    assert applied.code == 0, applied.stderr
    return repo


@pytest.fixture(scope="module")
def served_with_smart(_seeded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sales lens with ``tiers: [fast, smart]``, promoted on the fast tier alone."""
    repo = copy_of(_seeded_template, tmp_path_factory.mktemp("smart"))
    path = repo / "lenses" / "sales" / "lens.yaml"
    text = path.read_text().replace("tiers: [fast]", "tiers: [fast, smart]")
    commit(repo, {"lenses/sales/lens.yaml": text}, "sales: smart tier after fast")
    applied = invoke(repo, "apply", "--lens", "sales", "--format", "json")
    assert applied.code == 0, applied.stderr
    assert applied.lens("sales")["action"] == "promoted"
    return repo


def smart_env(base_url: str) -> dict[str, str]:
    return {"DST_LLM_BASE_URL": base_url, "DST_LLM_MODEL": "double-1", "DST_LLM_API_KEY": SECRET}


def test_certified_question_is_served_from_its_answer(served: Path) -> None:
    out = ask(served, "  average ORDER value by quarter in 2023 ")
    assert out["route"] == "certified_answer"
    assert out["answer"] == "aov_by_quarter_2023"
    assert out["trust_state"] == "certified"
    assert out["row_count"] == 4 and out["attempts"] == []


def test_generated_question_is_grounded(served: Path) -> None:
    out = ask(served, "How many orders were placed in 2024?")
    assert (out["route"], out["trust_state"]) == ("generated", "grounded")
    assert out["row_count"] == 1 and out["rows"][0][0] > 0
    assert all(e["passed"] for e in out["evaluations"])
    assert out["attempts"][0]["tier"] == "fast"


def test_excluded_topic_is_refused_with_no_rows(served: Path) -> None:
    out = ask(served, "What is the average employee salary?", code=1)
    assert out["route"] == "refuse" and out["trust_state"] == "not_applicable"
    assert out["rows"] == [] and out["sql"] is None
    assert "salary" in out["message"] or "employee" in out["message"]


def test_ambiguous_question_gets_a_clarification(served: Path) -> None:
    out = ask(served, "How is sales performance by region?", code=1)
    assert (out["route"], out["trust_state"]) == ("clarify", "not_applicable")
    assert out["message"].startswith("Which measure do you mean by performance")
    assert out["rows"] == []


def test_declined_question_serves_nothing(served: Path) -> None:
    out = ask(served, SCALAR_Q, code=1)
    assert out["trust_state"] == "blocked" and out["rows"] == []
    assert "unrecognised words" in out["message"]


def test_ask_reads_the_serving_version_not_the_working_tree(served: Path) -> None:
    path = served / "lenses" / "sales" / "lens.yaml"
    before = path.read_text()
    path.write_text(before.replace('"salary", ', ""))
    try:
        out = ask(served, "What is the total salary?", code=1)
    finally:
        path.write_text(before)
    assert out["route"] == "refuse"


def test_lens_that_never_served_is_a_usage_error(lens_repo: Path) -> None:
    done = invoke(lens_repo, "ask", "How many orders?", "--lens", "sales")
    assert done.code == 2
    assert "no serving version" in done.stderr and "dst apply" in done.stderr


def test_scalar_fan_out_is_retried_with_the_hint_and_repaired(served_with_smart: Path) -> None:
    def reply(messages: list[dict[str, str]]) -> str:
        hinted = "return a single aggregated value" in messages[-1]["content"]
        return f"```sql\n{SCALAR_SQL if hinted else FAN_OUT_SQL}\n```"

    with serve(reply) as llm:
        out = ask(served_with_smart, SCALAR_Q, env=smart_env(llm.base_url))
    assert [a["tier"] for a in out["attempts"]] == ["smart", "smart"]
    assert out["attempts"][1]["usage"]["hint"] == "return a single aggregated value"
    assert out["row_count"] == 1 and out["sql"].startswith("SELECT SUM")
    assert out["trust_state"] == "grounded"
    assert len(llm.requests) == 2 and "return a single aggregated value" in llm.prompts()[1]
    usage = out["attempts"][0]["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_breakdown_multi_row_result_is_not_flagged(served_with_smart: Path) -> None:
    with serve(lambda _m: FAN_OUT_SQL) as llm:
        out = ask(served_with_smart, BREAKDOWN_Q, env=smart_env(llm.base_url))
    assert len(out["attempts"]) == 1 and out["row_count"] > 1
    assert out["trust_state"] == "grounded"
    assert all(e["passed"] for e in out["evaluations"])


def test_unsafe_smart_sql_never_runs(served_with_smart: Path) -> None:
    with serve(lambda _m: "DELETE FROM orders") as llm:
        env = smart_env(llm.base_url)
        out = ask(served_with_smart, SCALAR_Q, "--max-repairs", "0", env=env, code=1)
    assert out["trust_state"] == "blocked" and out["rows"] == []
    assert "unsafe" in out["attempts"][0]["declined"]
    again = ask(served_with_smart, "How many orders were placed in 2024?")
    assert again["rows"][0][0] > 0


def test_smart_decline_and_endpoint_failure_are_declines(served_with_smart: Path) -> None:
    with serve(lambda _m: "DECLINE: the lens has no customer names") as llm:
        env = smart_env(llm.base_url)
        out = ask(served_with_smart, SCALAR_Q, "--max-repairs", "0", env=env, code=1)
    assert "no customer names" in out["message"] and out["rows"] == []
    with serve(lambda _m: "unused", status=500) as llm:
        env = {**smart_env(llm.base_url), "DST_LLM_API_KEY": SECRET}
        done = invoke(
            served_with_smart,
            "ask",
            SCALAR_Q,
            "--lens",
            "sales",
            "--max-repairs",
            "0",
            "--format",
            "json",
            env=env,
        )
    assert done.code == 1, done.stderr
    assert "smart tier call failed" in done.json()["message"]
    assert SECRET not in done.stdout + done.stderr


def test_api_key_is_sent_but_never_printed(served_with_smart: Path) -> None:
    with serve(lambda _m: FAN_OUT_SQL) as llm:
        env = smart_env(llm.base_url)
        for fmt in ("json", "text"):
            done = invoke(
                served_with_smart, "ask", BREAKDOWN_Q, "--lens", "sales", "--format", fmt, env=env
            )
            assert done.code == 0, done.stderr
            assert SECRET not in done.stdout + done.stderr
    auth = [{k.lower(): v for k, v in h.items()}.get("authorization") for h in llm.headers]
    assert auth and all(a == f"Bearer {SECRET}" for a in auth)


def test_leaner_than_production_is_stated(served_with_smart: Path) -> None:
    out = ask(served_with_smart, "How many orders were placed in 2024?")
    assert any("smart tier is not configured" in n for n in out["notes"])


def test_sql_that_fails_to_run_is_blocked_and_exits_1(served_with_smart: Path) -> None:
    with serve(lambda _m: "SELECT no_such_column FROM orders") as llm:
        env = smart_env(llm.base_url)
        out = ask(served_with_smart, SCALAR_Q, "--max-repairs", "0", env=env, code=1)
        text = invoke(
            served_with_smart, "ask", SCALAR_Q, "--lens", "sales", "--max-repairs", "0", env=env
        )
    assert out["trust_state"] == "blocked" and out["rows"] == []
    assert out["sql"].startswith("SELECT no_such_column")
    assert text.code == 1
    reason = [line for line in text.stderr.splitlines() if "nothing served" in line]
    assert len(reason) == 1 and reason[0].startswith("dst ask: nothing served: blocked by ")
