"""``samples: k`` flake-aware verdicts, generation budgets, the command tier in certify,
and ``dst test`` on unreached answers — against the chat double and a real program.

The chat double (``tests/llm_double``) answers from a counter, so "correct two times in
three" is a property of the double, not of dst; it records every request, which counts
the calls dst made.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.errors import LensLoadError
from reconciler.ids import AnswerId
from reconciler.lens import load_lens
from reconciler.render.github import score_line
from reconciler.suite import AnswerResult, Outcome, combine
from tests.helpers import commit, git, invoke
from tests.llm_double import serve
from tests.shop import CUSTOMERS, ORDERS, REVENUE

SQL = "SELECT COUNT(*) AS n FROM orders"
OFF_BY_ONE = "SELECT COUNT(*) + 1 AS n FROM orders"
ANSWER = f"""\
id: order_rows
question: How many orders are there?
sql: {SQL}
status: active
provenance: {{certified_by: Test Author, certified_at: "2024-12-31"}}
""".encode()
SEEDS = {
    "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n1,1,2024-01-02,10\n"
    "2,2,2024-02-03,20\n",
    "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
}
NEW_FACT = ORDERS.replace(b"facts:\n", b"facts:\n  - name: discount\n    data_type: number\n")


def lens_yaml(extra: str = "") -> bytes:
    return (
        f'name: shop\nas_of: "2024-12-31"\nsamples: 3\n{extra}generator:\n  tiers: [smart]\n'
    ).encode()


def files(extra: str = "") -> dict[str, bytes | str]:
    return {
        "lenses/shop/lens.yaml": lens_yaml(extra),
        "lenses/shop/models/orders.yaml": ORDERS,
        "lenses/shop/models/customers.yaml": CUSTOMERS,
        "lenses/shop/answers/order_rows.yaml": ANSWER,
        **SEEDS,
    }


def always(_messages: list[dict[str, str]]) -> str:
    return f"```sql\n{SQL}\n```"


def two_in_three() -> Callable[[list[dict[str, str]]], str]:
    """Correct on the first and second call of every three, off by one on the third."""
    seen = [0]

    def reply(_messages: list[dict[str, str]]) -> str:
        seen[0] += 1
        return f"```sql\n{OFF_BY_ONE if seen[0] % 3 == 0 else SQL}\n```"

    return reply


def env_of(base_url: str, **more: str) -> dict[str, str]:
    return {"DST_LLM_BASE_URL": base_url, "DST_LLM_MODEL": "double-1", **more}


def promoted(repo: Path, extra: str = "") -> None:
    """The lens promoted (its answer self-tests, 3 samples all correct), then made stale."""
    commit(repo, files(extra), "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(always) as llm:  # the variable allows the 3 calls whatever lens.yaml says
        env = env_of(llm.base_url, DST_MAX_CALLS="3")
        done = invoke(repo, "apply", "--format", "json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    (result,) = done.lens("shop")["self_test"]
    assert (result["outcome"], result["samples"], len(llm.requests)) == ("correct", 3, 3)
    commit(repo, {"lenses/shop/models/orders.yaml": NEW_FACT}, "orders: a new fact")


def test_two_correct_in_three_is_flaky_and_blocks_then_replays_from_the_cache(
    repo: Path,
) -> None:
    promoted(repo)
    before = git(repo, "rev-parse", "refs/dst/serving/shop")
    with serve(two_in_three()) as llm:
        env = env_of(llm.base_url)
        done = invoke(repo, "apply", "--format", "json", env=env)
        made = len(llm.requests)
        # the same plan again: every sample is replayed from its own cache slot, no call
        text = invoke(repo, "apply", "--dry-run", env=env)
        replay = invoke(repo, "apply", "--format", "json", env=env)
        assert len(llm.requests) == made == 3
    assert done.code == 1, done.stdout + done.stderr
    shop = done.lens("shop")
    assert shop["action"] == "blocked"
    (result,) = shop["results"]
    assert (result["outcome"], result["samples"], result["flaky_samples"]) == ("flaky", 3, 1)
    assert [t["sample"] for t in result["trace"]] == [1, 2, 3]
    assert shop["score"]["flaky"] == 1 and shop["score"]["correct"] == 0
    assert "order_rows: flaky, flake rate 1/3 (33%)" in shop["messages"]
    assert any("failing under flaky: block" in m for m in shop["messages"])
    assert git(repo, "rev-parse", "refs/dst/serving/shop") == before
    assert text.code == 1 and "flaky 1" in text.stdout, text.stdout
    (same,) = replay.lens("shop")["results"]
    assert (replay.code, same["outcome"], same["flaky_samples"]) == (1, "flaky", 1)
    assert all(t["generation"]["usage"].get("cached") for t in same["trace"])


def test_under_flaky_warn_it_promotes_with_a_warning_and_the_rate_is_kept(repo: Path) -> None:
    promoted(repo, "flaky: warn\n")
    with serve(two_in_three()) as llm:
        done = invoke(repo, "apply", "--format", "json", env=env_of(llm.base_url))
    assert done.code == 0, done.stdout + done.stderr
    shop = done.lens("shop")
    assert shop["action"] == "promoted"
    assert [r["outcome"] for r in shop["results"]] == ["flaky"]
    assert any(m.startswith("WARNING 1 flaky answer(s)") for m in shop["messages"])
    assert any("flaky answer(s)" in m and "listed, not failing" in m for m in shop["messages"])
    log = invoke(repo, "log", "shop")
    assert "flaky: order_rows, flake rate 1/3 (33%)" in log.stdout, log.stdout
    meta = json.loads(invoke(repo, "log", "shop", "--format", "json").stdout)
    newest = meta["deployments"][0]
    assert newest["flake_rates"] == {"order_rows": {"flaky_samples": 1, "samples": 3}}
    cover = invoke(repo, "coverage", "shop")
    assert "flaky at serving: order_rows (flake rate 1/3)" in cover.stdout, cover.stdout
    rec = json.loads(invoke(repo, "coverage", "shop", "--format", "json").stdout)
    assert rec["lenses"][0]["flake_rates"]["order_rows"]["samples"] == 3


def test_a_budget_that_cannot_fit_stands_down_before_any_call(repo: Path) -> None:
    promoted(repo, "max_calls: 2\n")
    before = git(repo, "rev-parse", "refs/dst/serving/shop")
    with serve(always) as llm:
        done = invoke(repo, "apply", "--format", "json", env=env_of(llm.base_url))
        assert len(llm.requests) == 0
    assert done.code == 1, done.stdout + done.stderr
    shop = done.lens("shop")
    assert shop["action"] == "stood_down"
    line = next(m for m in shop["messages"] if m.startswith("gate STOOD DOWN"))
    assert "estimated 3 uncached call(s), 2 left (lenses/shop/lens.yaml max_calls=2)" in line
    assert git(repo, "rev-parse", "refs/dst/serving/shop") == before
    with serve(always) as llm:  # dst test too: it stands down, fails and records nothing
        tested = invoke(repo, "test", "shop", "--format", "json", env=env_of(llm.base_url))
        assert len(llm.requests) == 0
    assert tested.code == 1, tested.stdout + tested.stderr
    assert any(
        m.startswith("test STOOD DOWN: generation budget") for m in tested.lens("shop")["messages"]
    )
    assert git(repo, "rev-parse", "refs/dst/serving/shop") == before
    # the variable overrides the lens's limit
    with serve(always) as llm:
        done = invoke(
            repo, "apply", "--format", "json", env=env_of(llm.base_url, DST_MAX_CALLS="3")
        )
        assert len(llm.requests) == 3
    assert done.code == 0, done.stdout + done.stderr


def test_a_cost_budget_is_estimated_from_what_the_previous_run_was_charged(repo: Path) -> None:
    priced = "  smart: {prompt_cost_per_1k: 1.0}\n"
    raw = lens_yaml("max_cost_usd: 1\n") + priced.encode()
    commit(repo, {**files(), "lenses/shop/lens.yaml": raw}, "priced, with a cost budget")
    assert invoke(repo, "seed").code == 0
    with serve(always) as llm:
        first = invoke(repo, "apply", "--format", "json", env=env_of(llm.base_url))
        assert len(llm.requests) == 3
    assert first.code == 0, first.stdout + first.stderr
    (result,) = first.lens("shop")["self_test"]
    charged = [t["generation"]["usage"]["cost_usd"] for t in result["trace"]]
    assert all(c > 0 for c in charged) and sum(charged) <= 1
    commit(repo, {"lenses/shop/models/orders.yaml": NEW_FACT}, "orders: a new fact")
    # nothing is cached for the new prompt; the recorded charge prices the 3 new calls
    tight = f"{sum(charged) / 2:.6f}"
    with serve(always) as llm:
        done = invoke(
            repo, "apply", "--format", "json", env=env_of(llm.base_url, DST_MAX_COST_USD=tight)
        )
        assert len(llm.requests) == 0
    assert done.lens("shop")["action"] == "stood_down", done.stdout
    line = next(m for m in done.lens("shop")["messages"] if m.startswith("gate STOOD DOWN"))
    assert f"(DST_MAX_COST_USD={float(tight):g})" in line and "nothing was called" in line


def test_the_fast_tier_is_sampled_once(lens_repo: Path) -> None:
    lens = (lens_repo / "lenses/sales/lens.yaml").read_text()
    commit(lens_repo, {"lenses/sales/lens.yaml": lens + "samples: 5\n"}, "sample five times")
    assert invoke(lens_repo, "apply", "--lens", "sales").code == 0
    done = invoke(lens_repo, "test", "sales", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    results = done.lens("sales")["results"]
    assert results and all(len(r["trace"]) == 1 and "samples" not in r for r in results)


GEN = b"""\
import json, sys
req = json.loads(sys.stdin.read())
print(json.dumps({"sql": "SELECT SUM(amount) AS value FROM orders"}))
"""


def test_a_command_only_lens_certifies(repo: Path) -> None:
    run = json.dumps([sys.executable, "gen.py"])
    lens = (
        f'name: shop\nas_of: "2024-12-31"\ngenerator:\n  tiers: [command]\n'
        f"  command: {{run: {run}}}\n"
    ).encode()
    commit(
        repo,
        {
            "lenses/shop/lens.yaml": lens,
            "lenses/shop/gen.py": GEN,
            "lenses/shop/models/orders.yaml": ORDERS,
            "lenses/shop/models/customers.yaml": CUSTOMERS,
            "lenses/shop/metrics/revenue.yaml": REVENUE,
            **SEEDS,
        },
        "shop lens, command tier only",
    )
    assert invoke(repo, "seed").code == 0
    question = "What is the total revenue?"
    done = invoke(repo, "certify", "--lens", "shop", "--question", question, "--yes", "--by", "Pat")
    assert done.code == 0, done.stdout + done.stderr
    (written,) = (repo / "lenses/shop/answers").glob("*.yaml")
    assert "SELECT SUM(amount) AS value FROM orders" in written.read_text()
    assert "generator tier command" in written.read_text()


def test_a_command_tier_without_its_block_fails_at_the_tiers_line() -> None:
    lens = (
        b'name: shop\nas_of: "2024-12-31"\ngenerator:\n  retrieval: lexical\n  tiers: [command]\n'
    )
    with pytest.raises(LensLoadError) as caught:
        load_lens("shop", {"lens.yaml": lens})
    assert (caught.value.path, caught.value.line) == ("lenses/shop/lens.yaml", 5)
    assert "generator.command" in caught.value.message


UNREACHABLE = b"""\
id: happiness
question: How happy are the customers?
sql: SELECT COUNT(*) AS n FROM customers
status: active
provenance: {certified_by: Test Author, certified_at: "2024-12-31"}
"""


@pytest.mark.parametrize("strict", [False, True])
def test_dst_test_lists_an_unreached_declining_answer_and_fails_only_when_strict(
    repo: Path, strict: bool
) -> None:
    lens = b'name: shop\nas_of: "2024-12-31"\n' + (b"strict_declines: true\n" if strict else b"")
    commit(
        repo,
        {
            "lenses/shop/lens.yaml": lens,
            "lenses/shop/models/orders.yaml": ORDERS,
            "lenses/shop/models/customers.yaml": CUSTOMERS,
            "lenses/shop/answers/happiness.yaml": UNREACHABLE,
            **SEEDS,
        },
        "shop lens with an answer the fast tier cannot phrase",
    )
    assert invoke(repo, "seed").code == 0
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    done = invoke(repo, "test", "shop", "--format", "json")
    (result,) = done.lens("shop")["results"]
    assert result["outcome"] == "declined"
    messages = done.lens("shop")["messages"]
    if strict:
        assert done.code == 1, messages
        assert not any("untested: unreached by the generator" in m for m in messages)
    else:
        assert done.code == 0, messages
        assert any(
            m.startswith("happiness: untested: unreached by the generator") for m in messages
        )


def test_calls_in_flight_stay_within_jobs(repo: Path) -> None:
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow(_messages: list[dict[str, str]]) -> str:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return f"```sql\n{SQL}\n```"

    questions = ["How many orders are there?", "Count the orders", "Orders count", "Order rows"]
    answers = {
        f"lenses/shop/answers/q{i}.yaml": ANSWER.replace(b"order_rows", f"q{i}".encode()).replace(
            b"How many orders are there?", q.encode()
        )
        for i, q in enumerate(questions)
    }
    base = {k: v for k, v in files("jobs: 2\n").items() if not k.endswith("order_rows.yaml")}
    commit(repo, {**base, **answers}, "four answers, two at a time")
    assert invoke(repo, "seed").code == 0
    with serve(slow) as llm:
        done = invoke(repo, "apply", "--format", "json", env=env_of(llm.base_url))
        made = len(llm.requests)
    assert done.code == 0, done.stdout + done.stderr
    assert [r["outcome"] for r in done.lens("shop")["self_test"]] == ["correct"] * 4
    assert (made, state["most"]) == (4 * 3, 2)


def test_a_flaky_result_is_its_own_column_in_the_github_summary_and_combines_by_sample() -> None:
    line = score_line({"correct": 3, "wrong": 0, "flaky": 1, "declined": 0, "total": 4})
    assert line == "3/4 correct (75.0%) · wrong 0 (0.0%) · flaky 1"
    runs = [
        AnswerResult(AnswerId("a"), Outcome.CORRECT, (), "matches", samples=1),
        AnswerResult(AnswerId("a"), Outcome.WRONG, (), "diverged", samples=1),
    ]
    flaky = combine(runs)
    assert (flaky.outcome, flaky.flaky_samples, flaky.samples) == (Outcome.FLAKY, 1, 2)
    assert flaky.flake_rate == 0.5
    assert combine(runs[:1] * 2).outcome is Outcome.CORRECT
    assert combine(runs[1:] * 2).outcome is Outcome.WRONG
    failed_call = {"generation": {"tier": "smart", "sql": None, "error": True}}
    down = AnswerResult(AnswerId("a"), Outcome.ERROR, (failed_call,), "smart tier call failed")
    assert combine([runs[0], down]).outcome is Outcome.ERROR
    bad_sql = AnswerResult(AnswerId("a"), Outcome.ERROR, (), "generated SQL failed: no column")
    assert combine([runs[0], bad_sql]).outcome is Outcome.FLAKY
