"""The smart tier is called deterministically and once: temperature 0, a seed, a cache.

Against the local chat double (it counts every request): a second identical dry run
makes no call and reaches the same verdict; ``--no-cache`` calls again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconciler.generators.cache import GenerationCache, entry_digest
from reconciler.generators.generation import Generation
from tests.helpers import commit, git, invoke
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


# --- the cache is checked input --------------------------------------------------------

WRONG = "SELECT COUNT(*) + 1 AS n FROM orders"


def _entries(repo: Path) -> list[Path]:
    return sorted((repo / ".dst" / "cache").rglob("*.json"))


def _rewrite(path: Path, edit: Callable[[dict[str, Any]], None], *, forge: bool) -> None:
    """Edit one entry by hand; ``forge`` recomputes its digest, as a careful forger would."""
    entry = json.loads(path.read_text())
    edit(entry)
    if forge:
        entry["digest"] = entry_digest(entry["key"], entry["tier"], entry["generation"])
    path.write_text(json.dumps(entry))


def test_a_corrupted_entry_is_a_miss_with_a_warning_never_exit_3(repo: Path) -> None:
    commit(repo, FILES, "shop lens")
    assert invoke(repo, "seed").code == 0
    question = ("ask", "How many orders per segment?", "--lens", "shop")
    with serve(reply) as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        assert invoke(repo, "apply", env=env).code == 0
        commit(repo, {"lenses/shop/models/orders.yaml": NEW_FACT}, "orders: a new fact")
        stored = set(_entries(repo))
        assert invoke(repo, "apply", "--dry-run", env=env).code == 0
        (gated,) = set(_entries(repo)) - stored
        assert invoke(repo, *question, env=env).code in (0, 1)
        (asked,) = set(_entries(repo)) - stored - {gated}
        # one entry fails its schema, the other is stored under another key's name
        _rewrite(gated, lambda e: e["generation"].update(sql=123), forge=False)
        _rewrite(asked, lambda e: e.update(key="0" * 64), forge=True)
        before = len(llm.requests)
        done = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
        assert done.code == 0, done.stdout + done.stderr
        assert done.lens("shop")["results"][0]["outcome"] == "correct"
        again = invoke(repo, *question, env=env)
        assert again.code in (0, 1), again.stdout + again.stderr
        made = len(llm.requests) - before
    schema, key = gated.relative_to(repo).as_posix(), asked.relative_to(repo).as_posix()
    assert f"warning: {schema} fails its schema: generation.sql: " in done.stderr, done.stderr
    assert f"warning: {key} holds key 000000000000…, not the one it is named after" in (
        again.stderr
    ), again.stderr
    assert "treated as a miss (generated again)" in done.stderr
    assert made == 2  # each broken entry was generated again, and rewritten
    assert "sql" in json.loads(gated.read_text())["generation"]
    assert json.loads(asked.read_text())["key"] == asked.stem


def test_a_hand_edited_entry_holding_the_oracle_sql_does_not_promote_a_wrong_generator(
    repo: Path,
) -> None:
    answers = [SQL]
    with serve(lambda _m: f"```sql\n{answers[0]}\n```") as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        commit(repo, FILES, "shop lens")
        assert invoke(repo, "seed").code == 0
        assert invoke(repo, "apply", env=env).code == 0
        serving = git(repo, "rev-parse", "refs/dst/serving/shop")
        commit(repo, {"lenses/shop/models/orders.yaml": NEW_FACT}, "orders: a new fact")
        answers[0] = WRONG  # the generator is now wrong
        done = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
        assert done.lens("shop")["action"] == "blocked", done.stdout
        # The real apply replays that answer: its record names it as scored from cache.
        before = len(llm.requests)
        done = invoke(repo, "apply", "--format", "json", env=env)
        assert done.lens("shop")["action"] == "blocked", done.stdout
        assert len(llm.requests) == before
        recorded = json.loads(git(repo, "show", "refs/dst/attempts/shop:state/run.json"))
        assert recorded["from_cache"] == ["order_rows"]

        def oracle(entry: dict[str, Any]) -> None:
            if entry["generation"]["sql"] == WRONG:
                entry["generation"]["sql"] = SQL

        # A plain edit no longer matches the entry's digest: a miss, called again, blocked.
        for path in _entries(repo):
            _rewrite(path, oracle, forge=False)
        before = len(llm.requests)
        done = invoke(repo, "apply", "--format", "json", env=env)
        assert done.code == 1, done.stdout + done.stderr
        assert done.lens("shop")["action"] == "blocked"
        assert "does not match its digest" in done.stderr
        (result,) = done.lens("shop")["results"]
        assert result["attempts"] == 2  # the attempt and its re-run: each edited, each missed
        assert len(llm.requests) - before == 2
        recorded = json.loads(git(repo, "show", "refs/dst/attempts/shop:state/run.json"))
        assert "from_cache" not in recorded

        # A forged entry (its digest recomputed) is served as cached on a plain run (the
        # digest is no signature: the record naming it, above, is what shows it)...
        for path in _entries(repo):
            _rewrite(path, oracle, forge=True)
        before = len(llm.requests)
        replayed = invoke(repo, "apply", "--dry-run", "--format", "json", env=env)
        assert replayed.lens("shop")["action"] == "promoted", replayed.stdout
        assert len(llm.requests) == before

        # ...and `--cache verify` generates it again: the fresh, wrong SQL is scored.
        verified = invoke(repo, "apply", "--dry-run", "--cache", "verify", "--format", "json",
                          env=env)  # fmt: skip
        assert verified.lens("shop")["action"] == "blocked", verified.stdout
        assert "a fresh smart generation answered differently" in verified.stderr
        (result,) = verified.lens("shop")["results"]
        assert len(llm.requests) == before + result["attempts"]

        # `cache: verify` in lens.yaml does the same on every apply.
        for path in _entries(repo):
            _rewrite(path, oracle, forge=True)
        lens = LENS.replace(b"name: shop\n", b"name: shop\ncache: verify\n")
        commit(repo, {"lenses/shop/lens.yaml": lens}, "shop: verify cached answers")
        applied = invoke(repo, "apply", "--format", "json", env=env)
        assert applied.code == 1, applied.stdout + applied.stderr
        (result,) = applied.lens("shop")["results"]
        assert result["outcome"] == "wrong"
        usage = result["trace"][0]["generation"]["usage"]
        assert usage["cache"] == "replaced" and "cached" not in usage
        assert "answered differently" in applied.stderr
    assert git(repo, "rev-parse", "refs/dst/serving/shop") == serving
