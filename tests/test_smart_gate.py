"""A lens whose only tier is ``smart``: without one the gate stands down; with one it scores."""

from __future__ import annotations

from pathlib import Path

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
    "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n1,1,2024-01-02,10\n"
    "2,2,2024-02-03,20\n",
    "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
}


def reply(_messages: list[dict[str, str]]) -> str:
    return f"```sql\n{SQL}\n```"


def promoted(repo: Path) -> None:
    """The lens and its answer promoted through the smart tier (the answer self-tests)."""
    commit(repo, {**FILES, "lenses/shop/answers/order_rows.yaml": ANSWER}, "shop lens")
    assert invoke(repo, "seed").code == 0
    with serve(reply) as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        done = invoke(repo, "apply", "--format", "json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    assert [r["outcome"] for r in done.lens("shop")["self_test"]] == ["correct"]


def test_without_a_smart_tier_the_gate_stands_down_loudly(repo: Path) -> None:
    promoted(repo)
    before = git(repo, "rev-parse", "refs/dst/serving/shop")
    orders = ORDERS.replace(b"facts:\n", b"facts:\n  - name: discount\n    data_type: number\n")
    commit(repo, {"lenses/shop/models/orders.yaml": orders}, "orders: a new fact")
    done = invoke(repo, "apply", "--format", "json")
    assert done.code == 1
    shop = done.lens("shop")
    assert shop["action"] == "stood_down"
    assert [s["answer"] for s in shop["stale"]] == ["order_rows"]
    assert any("DST_LLM_BASE_URL" in m for m in shop["messages"]), shop["messages"]
    assert git(repo, "rev-parse", "refs/dst/serving/shop") == before


def test_with_a_smart_tier_the_gate_scores_through_it(repo: Path) -> None:
    promoted(repo)
    orders = ORDERS.replace(b"facts:\n", b"facts:\n  - name: discount\n    data_type: number\n")
    commit(repo, {"lenses/shop/models/orders.yaml": orders}, "orders: a new fact")
    with serve(reply) as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        done = invoke(repo, "apply", "--format", "json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    (result,) = done.lens("shop")["results"]
    assert (result["answer"], result["outcome"]) == ("order_rows", "correct")
    assert result["trace"][0]["generation"]["tier"] == "smart"
    assert "How many orders are there?" in llm.prompts()[0]
