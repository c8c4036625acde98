"""The two example ``command`` generators (``examples/generators/``) against local doubles.

Each program runs as a real process with dst's real request on stdin; the remote
side (an LLM endpoint, a team's text-to-SQL service) is a local HTTP double. One
test gates a lens end to end through the service wrapper.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from reconciler.assembly.request import assemble
from reconciler.generators.payload import request_json
from reconciler.lens import load_lens
from tests import llm_double, text2sql_double
from tests.helpers import PROJECT, commit, invoke
from tests.shop import CUSTOMERS, ORDERS, REVENUE

EXAMPLES = PROJECT / "examples" / "generators"
QUESTION = "What is the total revenue?"
SQL = "SELECT SUM(amount) AS value FROM orders"
LENS_FILES = {
    "lens.yaml": b'name: shop\nas_of: "2024-12-31"\n',
    "models/orders.yaml": ORDERS,
    "models/customers.yaml": CUSTOMERS,
    "metrics/revenue.yaml": REVENUE,
    "skills/money.md": b"Amounts are in euros.\n",
}


def request() -> str:
    lens = load_lens("shop", LENS_FILES)
    return request_json(lens, assemble(lens, QUESTION))


def run(program: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / program)],
        input=request(),
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_openai_compatible_generator_asks_the_endpoint_and_maps_its_reply() -> None:
    replies = iter([f"```sql\n{SQL};\n```", "DECLINE: no such metric"])
    with llm_double.serve(lambda _m: next(replies)) as llm:
        env = {
            "GENERATOR_BASE_URL": llm.base_url,
            "GENERATOR_MODEL": "double-1",
            "GENERATOR_API_KEY": "sk-example",
        }
        answered, declined = run("openai_compatible.py", env), run("openai_compatible.py", env)
    assert answered.returncode == 0, answered.stderr
    out = json.loads(answered.stdout)
    assert out["sql"] == SQL and out["tokens"] > 0
    no = json.loads(declined.stdout)
    assert no["declined"] == "no such metric" and "sql" not in no
    body = llm.requests[0]
    assert (body["model"], body["temperature"], body["seed"]) == ("double-1", 0, 0)
    prompt = llm.prompts()[0]
    assert f"question: {QUESTION}" in prompt
    assert "metric revenue on orders: SUM(amount)" in prompt
    assert "Amounts are in euros." in prompt
    assert llm.headers[0]["Authorization"] == "Bearer sk-example"


def test_the_openai_compatible_generator_exits_non_zero_when_the_endpoint_fails() -> None:
    with llm_double.serve(lambda _m: "", status=503) as llm:
        done = run(
            "openai_compatible.py", {"GENERATOR_BASE_URL": llm.base_url, "GENERATOR_MODEL": "m"}
        )
    assert done.returncode == 1
    assert "503" in done.stderr


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The service double: answers questions about revenue, confidently."""
    if "revenue" not in body["question"]:
        return {"error": "I only know revenue"}
    metric = body["metrics"][0]
    return {"query": f"SELECT {metric['sql']} AS value FROM orders", "confidence": 0.9}


def test_the_service_wrapper_posts_the_context_and_maps_the_answer() -> None:
    with text2sql_double.serve(answer) as service:
        env = {"TEXT2SQL_URL": service.url, "TEXT2SQL_TOKEN": "t0ken"}
        done = run("http_service.py", env)
        unsure = run("http_service.py", {**env, "TEXT2SQL_MIN_CONFIDENCE": "0.95"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"sql": SQL}
    assert json.loads(unsure.stdout) == {"declined": "the service's confidence 0.9 is below 0.95"}
    sent = service.requests[0]
    assert sent["question"] == QUESTION and sent["dialect"] == "duckdb"
    assert {"name": "orders", "columns": ["order_date", "amount"]} in sent["tables"]
    assert service.headers[0]["Authorization"] == "Bearer t0ken"


def test_the_service_wrapper_exits_non_zero_when_the_service_fails() -> None:
    with text2sql_double.serve(answer, status=500) as service:
        done = run("http_service.py", {"TEXT2SQL_URL": service.url})
    assert done.returncode == 1
    assert "500" in done.stderr


def test_a_lens_gates_through_the_service_wrapper(repo: Path) -> None:
    # copied into the lens, as the examples' README says: dst runs only repository files
    program = json.dumps([sys.executable, "http_service.py"])
    lens = b'name: shop\nas_of: "2024-12-31"\ngenerator:\n  tiers: [command]\n'
    lens += f"  command: {{run: {program}, timeout_s: 30}}\n".encode()
    answer_file = (
        f"id: total_revenue\nquestion: {QUESTION}\nsql: SELECT SUM(amount) FROM orders\n"
        'status: active\nprovenance: {certified_by: Test Author, certified_at: "2024-12-31"}\n'
    )
    files: dict[str, str | bytes] = {f"lenses/shop/{k}": v for k, v in LENS_FILES.items()}
    files.update(
        {
            "lenses/shop/lens.yaml": lens,
            "lenses/shop/http_service.py": (EXAMPLES / "http_service.py").read_bytes(),
            "lenses/shop/answers/total_revenue.yaml": answer_file,
            "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n"
            "1,1,2024-01-02,10\n2,2,2024-02-03,20\n",
            "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
        }
    )
    commit(repo, files, "shop lens through the team's service")
    assert invoke(repo, "seed").code == 0
    with text2sql_double.serve(answer) as service:
        done = invoke(repo, "apply", "--format", "json", env={"TEXT2SQL_URL": service.url})
    assert done.code == 0, done.stdout + done.stderr
    shop = done.lens("shop")
    assert shop["action"] == "promoted"
    (result,) = shop["self_test"]
    assert result["outcome"] == "correct"
    assert result["trace"][0]["generation"]["sql"] == SQL
    assert len(service.requests) == 1
