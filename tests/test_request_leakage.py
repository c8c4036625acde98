"""Never the answer under test: what every tier is sent when the suite re-asks an answer.

DESIGN §4 step 2 re-asks a certified question "with certified matching disabled and
the answer excluded from its own exemplars". The question itself is sent — it is
what is asked. What these tests assert, for the ``fast``, ``smart`` and ``command``
tiers, on the bytes each tier actually received during ``dst apply``:

* the question is sent;
* the answer's certified SQL is not (no payload names its distinctive alias
  ``certified_total``, nor carries its text), although the lens holds an exemplar
  that is a copy of the answer (same question, same SQL) — that copy is folded out,
  while a neighbouring exemplar is folded in (so exemplars do flow);
* the recorded request says ``certified_matching: false`` and names the excluded answer;
* ``dst explain ANSWER`` prints exactly what was sent (equal payloads).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from reconciler.assembly.request import assemble
from reconciler.generators import fast
from reconciler.ids import AnswerId
from reconciler.lens import load_lens
from tests.helpers import commit, invoke
from tests.llm_double import serve
from tests.shop import CUSTOMERS, ORDERS, REVENUE

QUESTION = "What is the total revenue?"
CERTIFIED = "SELECT SUM(amount) AS certified_total FROM orders WHERE amount >= 0"
ANSWER = f"""\
id: total_revenue
question: {QUESTION}
sql: {CERTIFIED}
status: active
provenance: {{certified_by: Test Author, certified_at: "2024-12-31"}}
""".encode()
COPY = f"name: copied_answer\nquestion: {QUESTION}\nsql: {CERTIFIED}\n".encode()
NEIGHBOUR_SQL = (
    "SELECT segment, SUM(amount) AS by_segment FROM orders "
    "JOIN customers USING (customer_id) GROUP BY segment"
)
NEIGHBOUR = (
    f"name: revenue_by_segment\nquestion: What is the total revenue by segment?\n"
    f"sql: {NEIGHBOUR_SQL}\n"
).encode()
GEN = b"""\
import json, os, sys
raw = sys.stdin.read()
with open(os.environ["GEN_LOG"], "a") as log:
    log.write(json.dumps(raw) + "\\n")
print(json.dumps({"sql": "SELECT SUM(amount) AS value FROM orders"}))
"""


def files(tiers: str) -> dict[str, bytes | str]:
    lens = f'name: shop\nas_of: "2024-12-31"\ngenerator:\n  tiers: [{tiers}]\n'
    if "command" in tiers:
        lens += f"  command: {{run: {json.dumps([sys.executable, 'gen.py'])}}}\n"
    return {
        "lenses/shop/lens.yaml": lens,
        "lenses/shop/gen.py": GEN,
        "lenses/shop/models/orders.yaml": ORDERS,
        "lenses/shop/models/customers.yaml": CUSTOMERS,
        "lenses/shop/metrics/revenue.yaml": REVENUE,
        "lenses/shop/exemplars/copied_answer.yaml": COPY,
        "lenses/shop/exemplars/revenue_by_segment.yaml": NEIGHBOUR,
        "lenses/shop/answers/total_revenue.yaml": ANSWER,
        "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n"
        "1,1,2024-01-02,10\n2,2,2024-02-03,20\n",
        "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
    }


def assert_clean(sent: str) -> None:
    """The question is in ``sent``; the certified SQL is not, in any spelling."""
    assert QUESTION in sent
    assert "certified_total" not in sent
    assert CERTIFIED not in sent
    assert NEIGHBOUR_SQL in sent  # exemplars do reach the tier


def applied(repo: Path, tiers: str, env: dict[str, str]) -> dict[str, Any]:
    """``dst apply`` of the lens (its answer self-tests: the suite's re-ask), as JSON."""
    commit(repo, files(tiers), f"shop lens ({tiers})")
    assert invoke(repo, "seed").code == 0
    done = invoke(repo, "apply", "--format", "json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    (result,) = done.lens("shop")["self_test"]
    request = result["trace"][0]["request"]
    assert request["certified_matching"] is False
    assert request["excluded_answer"] == "total_revenue"
    assert request["exemplars"] == ["revenue_by_segment"]
    return dict(result)


def explained(repo: Path, tier: str) -> object:
    done = invoke(repo, "explain", "total_revenue", "--lens", "shop", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    shown = done.json()
    assert shown["request"]["certified_matching"] is False
    return shown["tiers"][tier]


def test_the_command_tier_never_receives_the_answer_under_test(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    result = applied(repo, "command", {"GEN_LOG": str(log)})
    (raw,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert_clean(raw)
    sent = json.loads(raw)
    assert [e["name"] for e in sent["exemplars"]] == ["revenue_by_segment"]
    assert "answers" not in sent
    digest = hashlib.sha256(raw.encode()).hexdigest()
    assert result["trace"][0]["generation"]["usage"]["request_sha256"] == digest
    assert explained(repo, "command") == {"stdin": sent, "sha256": digest}


def test_the_smart_tier_never_receives_the_answer_under_test(repo: Path) -> None:
    with serve(lambda _m: "```sql\nSELECT SUM(amount) AS value FROM orders\n```") as llm:
        env = {"DST_LLM_BASE_URL": llm.base_url, "DST_LLM_MODEL": "double-1"}
        result = applied(repo, "smart", env)
    (body,) = llm.requests
    assert_clean(json.dumps(body["messages"], ensure_ascii=False))
    assert f"example question: {QUESTION}" not in llm.prompts()[0]
    shown = explained(repo, "smart")
    assert isinstance(shown, dict) and shown["messages"] == body["messages"]
    assert result["trace"][0]["generation"]["usage"]["request_sha256"] == shown["sha256"]


def test_the_fast_tier_never_reads_the_answer_under_test(repo: Path) -> None:
    result = applied(repo, "fast", {})
    generated = result["trace"][0]["generation"]["sql"]
    # The copied exemplar would be returned verbatim had it been folded in.
    assert generated is not None and "certified_total" not in generated
    recorded = json.dumps(result["trace"][0]["request"])
    assert "certified_total" not in recorded and "copied_answer" not in recorded
    # What the fast tier reads besides the request: the lens. Without its answers it
    # compiles the same SQL, so no answer's SQL reaches it.
    lens_files = {
        k.removeprefix("lenses/shop/"): v.encode() if isinstance(v, str) else v
        for k, v in files("fast").items()
    }
    with_answers = load_lens("shop", lens_files)
    without = load_lens(
        "shop", {k: v for k, v in lens_files.items() if not k.startswith("answers/")}
    )
    request = assemble(with_answers, QUESTION, exclude_answer=AnswerId("total_revenue"))
    assert fast.compile_request(with_answers, request, {}) == fast.compile_request(
        without, request, {}
    )
    assert explained(repo, "fast") == {"compiles": "the request above, offline"}


def test_ask_show_request_prints_the_serving_request_and_runs_nothing(
    repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stdin.log"
    applied(repo, "command", {"GEN_LOG": str(log)})
    calls = len(log.read_text().splitlines())
    question = "What is the revenue by segment?"
    done = invoke(repo, "ask", question, "--lens", "shop", "--show-request", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    shown = done.json()
    assert shown["request"]["certified_matching"] is True
    assert shown["tiers"]["command"]["stdin"]["question"] == question
    assert len(log.read_text().splitlines()) == calls
    assert shown["certified_answer"] is None
    text = invoke(repo, "ask", QUESTION, "--lens", "shop", "--show-request")
    assert text.code == 0
    assert "--- command tier is sent:" in text.stdout
    assert "certified answer total_revenue, generating nothing" in text.stdout


def test_explain_names_an_unknown_answer(repo: Path) -> None:
    commit(repo, files("fast"), "shop lens")
    done = invoke(repo, "explain", "nope", "--lens", "shop")
    assert done.code == 2
    assert "total_revenue" in done.stderr
