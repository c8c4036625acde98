"""The smart tier is called deterministically and once: temperature 0, a seed, a cache.

Against the local chat double (it counts every request): a second identical dry run
makes no call and reaches the same verdict; ``--no-cache`` calls again.
"""

from __future__ import annotations

import json
from pathlib import Path

from reconciler.generators.cache import GenerationCache
from reconciler.generators.generation import Generation
from tests.helpers import commit, invoke
from tests.llm_double import serve
from tests.shop import CUSTOMERS, ORDERS

LENS = b'name: shop\nas_of: "2024-12-31"\ngenerator:\n  tiers: [smart]\n'
SQL = "SELECT COUNT(*) AS n FROM orders"
ANSWER = f"""\
id: order_rows
question: How many orders are there?
sql: {SQL}
status: active
provenance: {{certified_by: Test Author, certified_at: "2024-12-31"}}
""".encode()
FILES = {
    "lenses/shop/lens.yaml": LENS,
    "lenses/shop/models/orders.yaml": ORDERS,
    "lenses/shop/models/customers.yaml": CUSTOMERS,
    "lenses/shop/answers/order_rows.yaml": ANSWER,
    "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n1,1,2024-01-02,10\n"
    "2,2,2024-02-03,20\n",
    "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
}
NEW_FACT = ORDERS.replace(b"facts:\n", b"facts:\n  - name: discount\n    data_type: number\n")


def reply(_messages: list[dict[str, str]]) -> str:
    return f"```sql\n{SQL}\n```"


def test_a_second_dry_run_makes_no_call_and_no_cache_calls_again(repo: Path) -> None:
    commit(repo, FILES, "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(reply) as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        assert invoke(repo, "apply", env=env).code == 0
        commit(repo, {"lenses/shop/models/orders.yaml": NEW_FACT}, "orders: a new fact")
        runs = []
        for extra in ((), (), ("--no-cache",)):
            before = len(llm.requests)
            done = invoke(repo, "apply", "--dry-run", "--format", "json", *extra, env=env)
            assert done.code == 0, done.stdout + done.stderr
            shop = done.lens("shop")
            (result,) = shop["results"]
            usage = result["trace"][0]["generation"]["usage"]
            runs.append((len(llm.requests) - before, shop["action"], result["outcome"], usage))
    assert [r[0] for r in runs] == [1, 0, 1]
    assert {(r[1], r[2]) for r in runs} == {("promoted", "correct")}
    assert [r[3].get("cached", False) for r in runs] == [False, True, False]
    assert runs[0][3]["system_fingerprint"] == "fp_double_1"
    body = llm.requests[-1]
    assert (body["temperature"], body["seed"]) == (0, 0)


def test_a_failed_call_is_not_cached(repo: Path) -> None:
    no_retries = LENS + b"  smart: {max_retries: 0}\n"
    commit(repo, {**FILES, "lenses/shop/lens.yaml": no_retries}, "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(reply, status=500) as down:
        env = {"DST_LLM_BASE_URL": down.base_url, "DST_LLM_MODEL": "double-1"}
        env["DST_LLM_API_KEY"] = "sk-never-shown"
        done = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
    assert "sk-never-shown" not in done.stdout + done.stderr
    (self_test,) = done.lens("shop")["self_test"]
    assert self_test["outcome"] == "error", self_test
    with serve(reply) as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        assert invoke(repo, "apply", env=env).code == 0
        assert len(llm.requests) == 1


def test_entries_are_content_addressed_and_counted_per_occurrence(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    material = {"tier": "smart", "messages": [{"role": "user", "content": "q"}]}
    first, second = cache.key(material), cache.key(material)
    assert first != second  # the suite's retry is a call of its own
    cache.store(first, Generation("smart", "SELECT 1", None, {"model": "m"}))
    cache.store(second, Generation("smart", None, "smart tier call failed", {}, error=True))
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert files == [f"{first[:2]}/{first}.json"]
    assert json.loads((tmp_path / files[0]).read_text())["generation"]["sql"] == "SELECT 1"
    replay = GenerationCache(tmp_path)
    hit = replay.lookup(replay.key(material), "smart")
    assert hit is not None and hit.sql == "SELECT 1" and hit.usage == {"model": "m", "cached": True}
    assert replay.lookup(replay.key(material), "smart") is None
    assert GenerationCache(tmp_path, read=False).lookup(first, "smart") is None
    assert GenerationCache(tmp_path).lookup(first, "command") is None


def test_a_rate_limited_call_is_retried_with_backoff_then_scored_error(repo: Path) -> None:
    one_retry = LENS + b"  smart: {max_retries: 1}\n"
    commit(repo, {**FILES, "lenses/shop/lens.yaml": one_retry}, "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(reply, status=429) as limited:
        env = {"DST_LLM_BASE_URL": limited.base_url, "DST_LLM_MODEL": "double-1"}
        done = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
    assert len(limited.requests) == 2  # the first call and one retry
    (self_test,) = done.lens("shop")["self_test"]
    assert self_test["outcome"] == "error"
    assert "RateLimitError (HTTP 429)" in self_test["detail"]


def test_two_rate_limited_calls_back_off_and_the_third_is_scored(repo: Path) -> None:
    two_retries = LENS + b"  smart: {max_retries: 2}\n"
    commit(repo, {**FILES, "lenses/shop/lens.yaml": two_retries}, "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(reply, status=429, fail_first=2) as limited:
        env = {"DST_LLM_BASE_URL": limited.base_url, "DST_LLM_MODEL": "double-1"}
        done = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    assert len(limited.requests) == 3  # two 429s, then the answer
    (self_test,) = done.lens("shop")["self_test"]
    assert self_test["outcome"] == "correct"
    # Each retry waited before it went out (exponential backoff); load only lengthens a gap.
    gaps = [b - a for a, b in zip(limited.times, limited.times[1:], strict=False)]
    assert all(gap >= 0.3 for gap in gaps), gaps
