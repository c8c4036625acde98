"""Unreached answers and reach (DESIGN §5): a declined answer blocks only with a green baseline.

The lens is written the way a data team would: a revenue metric, one certified
answer the fast tier phrases ("revenue by channel") and one it cannot ("which
basket made the shop happiest?" names no metric). The first is *reached*, the
second *unreached*: it lands untested, never blocks, and every report says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest
import yaml

from reconciler.assets import asset_hashes
from reconciler.gate import BLOCK, PROMOTE, decide
from reconciler.ids import AnswerId, AssetId, Oid
from reconciler.lens import load_lens
from reconciler.plan import LensPlan
from reconciler.render import github, junit
from reconciler.render.trend import corpus_marks, points, summary_lines
from reconciler.results import Action, LensRun, RunReport, reach_of
from reconciler.state import DeploymentMeta, load
from reconciler.suite import AnswerResult, Outcome
from tests.helpers import CORPORA, commit, invoke as dst

LENS = """\
name: shop
description: Orders and revenue of the web shop.
as_of: "2024-12-31"
"""
ORDERS = """\
name: orders
table: orders
dimensions:
  - name: channel
time_dimensions:
  - name: order_date
    data_type: date
facts:
  - name: amount
    data_type: number
"""
REVENUE = """\
name: revenue
label: Revenue
synonyms: [sales]
model: orders
expression: SUM(amount)
"""
ANSWER = """\
id: {id}
question: {question}
sql: |
  {sql}
status: {status}
provenance: {{certified_by: Dana Whitfield, certified_at: "2024-12-01", source: manual}}
"""
REACHED = ANSWER.format(
    id="revenue_by_channel",
    question="What is revenue by channel?",
    sql="SELECT channel, SUM(amount) AS revenue FROM orders GROUP BY channel",
    status="active",
)
UNREACHED = ANSWER.format(
    id="happiest_basket",
    question="Which basket made the shop happiest?",
    sql="SELECT order_id FROM orders ORDER BY amount DESC, order_id LIMIT 1",
    status="active",
)
SKILL = "# Revenue\n\nRevenue is the gross order amount, before refunds.\n"
SEED = (
    "order_id,channel,order_date,amount\n"
    "1,web,2024-01-02,10\n2,store,2024-02-03,20\n3,web,2024-03-04,30\n"
)
FILES = {
    "lenses/shop/lens.yaml": LENS,
    "lenses/shop/models/orders.yaml": ORDERS,
    "lenses/shop/metrics/revenue.yaml": REVENUE,
    "lenses/shop/answers/revenue_by_channel.yaml": REACHED,
    "lenses/shop/answers/happiest_basket.yaml": UNREACHED,
    "lenses/shop/seeds/orders.csv": SEED,
}
UNTESTED = "happiest_basket: untested: unreached by the generator: "


def serving(repo: Path, lens: str = "shop") -> str | None:
    ref = pygit2.Repository(str(repo)).references.get(f"refs/dst/serving/{lens}")
    return None if ref is None else str(ref.target)


@pytest.fixture
def shop(repo: Path) -> Path:
    """The shop lens, seeded and promoted once (its first apply)."""
    commit(repo, FILES, "shop lens: revenue and two certified answers")
    assert dst(repo, "seed").code == 0
    first = dst(repo, "apply", "--format", "json")
    assert first.code == 0, first.stdout + first.stderr
    obj = first.lens("shop")
    assert obj["action"] == "promoted"
    outcomes = {r["answer"]: r["outcome"] for r in obj["self_test"]}
    assert outcomes == {"revenue_by_channel": "correct", "happiest_basket": "declined"}
    assert any(m.startswith(UNTESTED) for m in obj["messages"])
    assert obj["reach"] == {"reached": 1, "total": 2}
    return repo


def test_an_unreached_answer_lands_untested_and_the_lens_keeps_taking_changes(
    shop: Path,
) -> None:
    before = serving(shop)
    commit(shop, {"lenses/shop/skills/revenue.md": SKILL}, "a skill on revenue")
    text = dst(shop, "apply", "--dry-run")
    assert text.code == 0, text.stdout + text.stderr
    assert "reach: 1/2 (50%)" in text.stdout
    assert UNTESTED + "the question names no metric of the lens" in text.stdout
    assert "✗ happiest_basket" not in text.stdout  # listed as untested, not as a failure
    applied = dst(shop, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    obj = applied.lens("shop")
    assert obj["action"] == "promoted" and serving(shop) not in (None, before)
    outcomes = {r["answer"]: r["outcome"] for r in obj["results"]}
    assert outcomes == {"revenue_by_channel": "correct", "happiest_basket": "declined"}
    assert obj["score"]["declined"] == 1 and obj["score"]["correct"] == 1  # counted, not hidden
    assert obj["reach"] == {"reached": 1, "total": 2}
    assert any(m.startswith(UNTESTED) for m in obj["messages"])
    assert not any("gate verified nothing" in m for m in obj["messages"])
    # never stamped: the deployment's bindings hold the reached answer alone
    tree = pygit2.Repository(str(shop))[serving(shop)].peel(pygit2.Commit).tree
    assert set(json.loads(tree["state/bindings.json"].data)["answers"]) == {"revenue_by_channel"}
    meta = _meta(shop)
    assert meta.reach == {"reached": 1, "total": 2}
    log = dst(shop, "log", "shop")
    assert log.code == 0
    assert log.stdout.count("reach 1/2") == 2, log.stdout
    assert "reach 1/2" in dst(shop, "status").stdout


def test_a_reached_answer_that_declines_blocks(shop: Path) -> None:
    before = serving(shop)
    # the metric is renamed: "revenue" is no longer a word the lens knows
    renamed = REVENUE.replace("name: revenue", "name: turnover").replace("Revenue", "Turnover")
    commit(shop, {"lenses/shop/metrics/revenue.yaml": renamed}, "rename revenue to turnover")
    applied = dst(shop, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    obj = applied.lens("shop")
    assert obj["action"] == "blocked"
    assert serving(shop) == before
    outcomes = {r["answer"]: r["outcome"] for r in obj["results"]}
    assert outcomes["revenue_by_channel"] == "declined"
    assert obj["messages"][0] == "gate BLOCKED: 1 answer(s) failed"
    assert obj["reach"] == {"reached": 0, "total": 2}  # the lens lost reach
    assert any(m.startswith("lost reach: revenue_by_channel declined") for m in obj["messages"])
    assert any(m.startswith(UNTESTED) for m in obj["messages"])  # still listed, still no block
    text = dst(shop, "apply")
    assert text.code == 1
    assert "✗ revenue_by_channel: declined" in text.stdout
    assert "reach: 0/2" in text.stdout


def test_strict_declines_blocks_the_harmless_change(shop: Path) -> None:
    before = serving(shop)
    strict = LENS + "strict_declines: true\n"
    commit(
        shop,
        {"lenses/shop/lens.yaml": strict, "lenses/shop/skills/revenue.md": SKILL},
        "strict declines and a skill",
    )
    applied = dst(shop, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    obj = applied.lens("shop")
    assert obj["action"] == "blocked" and serving(shop) == before
    assert obj["messages"][0] == "gate BLOCKED: 1 answer(s) failed"
    assert not any(m.startswith(UNTESTED) for m in obj["messages"])


def test_strict_declines_is_gate_policy_and_changes_no_asset_hash() -> None:
    files = {"lens.yaml": LENS.encode(), "models/orders.yaml": ORDERS.encode()}
    plain = asset_hashes(load_lens("shop", files))
    strict = {**files, "lens.yaml": (LENS + "strict_declines: true\n").encode()}
    assert asset_hashes(load_lens("shop", strict)) == plain
    assert load_lens("shop", strict).config.strict_declines is True
    assert AssetId("lens/shop") in plain


def test_gate_verified_nothing_when_only_unreached_answers_are_stale(shop: Path) -> None:
    # the description is not part of generation: only the never-reproduced answer is stale
    edited = LENS.replace("web shop", "online shop")
    commit(shop, {"lenses/shop/lens.yaml": edited}, "reword the description")
    applied = dst(shop, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    obj = applied.lens("shop")
    assert obj["action"] == "promoted"
    assert [s["answer"] for s in obj["stale"]] == ["happiest_basket"]
    assert obj["messages"][0].startswith("gate verified nothing")
    assert obj["reach"] == {"reached": 1, "total": 2}  # the untouched stamp still counts
    assert _meta(shop).reason.startswith("gate verified nothing")
    commit(shop, {"lenses/shop/lens.yaml": LENS}, "and back")
    text = dst(shop, "apply")
    assert text.code == 0 and "gate verified nothing" in text.stdout


def test_retiring_and_deleting_answers_says_what_the_corpus_lost(shop: Path) -> None:
    retired = REACHED.replace("status: active", "status: retired")
    commit(shop, {"lenses/shop/answers/revenue_by_channel.yaml": retired}, "retire revenue")
    applied = dst(shop, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    obj = applied.lens("shop")
    (line,) = [m for m in obj["messages"] if "corpus shrinks" in m]
    assert "removes 1 active certified answer(s) (2 → 1)" in line
    assert "revenue_by_channel (correct at " in line
    assert obj["reach"] == {"reached": 0, "total": 1}
    # put it back, then delete the unreached answer's file
    commit(shop, {"lenses/shop/answers/revenue_by_channel.yaml": REACHED}, "reinstate revenue")
    assert dst(shop, "apply").code == 0
    commit(shop, {"lenses/shop/answers/happiest_basket.yaml": None}, "drop the basket question")
    text = dst(shop, "apply")
    assert text.code == 0, text.stdout + text.stderr
    assert "corpus shrinks: this change removes 1 active certified answer(s) (2 → 1)" in (
        text.stdout
    )
    assert "happiest_basket (declined at " in text.stdout  # its newest outcome (issue 22)
    assert ", never reproduced)" in text.stdout
    log = dst(shop, "log", "shop")
    assert log.stdout.count("[corpus 2 → 1]") == 2, log.stdout
    assert log.stdout.count("[corpus 1 → 2]") == 1, log.stdout
    assert "  corpus     " in log.stdout
    changes = [
        d["corpus_change"]
        for d in dst(shop, "log", "shop", "--format", "json").json()["deployments"]
    ]
    assert changes == ["corpus 2 → 1", "corpus 1 → 2", "corpus 2 → 1", None]


def test_old_deployment_meta_without_reach_still_loads() -> None:
    raw = b'{"schema_version": 1, "source": "' + b"a" * 40 + b'", "score": {"total": 1}}'
    meta = load(DeploymentMeta, raw, where="deployment x", name="state/meta.json")
    assert meta.reach is None and "reach" not in meta.record()
    with_reach = meta.model_copy(update={"reach": {"reached": 1, "total": 1}})
    again = load(DeploymentMeta, with_reach.dumps(), where="deployment x", name="meta")
    assert again.reach == {"reached": 1, "total": 1}


def _plan(
    stamped: frozenset[AnswerId] = frozenset(), strict_declines: bool = False, gate: str = "block"
) -> LensPlan:
    return LensPlan(
        lens="l",
        gate=gate,
        serving=Oid("1" * 40),
        serving_tree=Oid("2" * 40),
        candidate=Oid("3" * 40),
        candidate_tree=Oid("4" * 40),
        unchanged=False,
        active_before=2,
        active_after=2,
        deps={AnswerId("a"): {}, AnswerId("b"): {}},
        stamped=stamped,
        strict_declines=strict_declines,
    )


def _declined(aid: str) -> AnswerResult:
    return AnswerResult(AnswerId(aid), Outcome.DECLINED, (), "generator declined: no metric")


def test_the_baseline_rule_in_process() -> None:
    stamped = frozenset({AnswerId("a")})
    results = [_declined("a"), _declined("b")]
    # a has a green baseline: its decline blocks; b never reached: untested
    decision = decide(_plan(stamped=stamped), results, [])
    assert decision.verdict is BLOCK
    assert decision.failing == ("a",) and decision.unreached == ("b",)
    # only b declines: promote, and nothing was verified
    decision = decide(_plan(stamped=stamped), [_declined("b")], [])
    assert decision.verdict is PROMOTE and decision.unreached == ("b",)
    assert decision.messages[0].startswith("gate verified nothing")
    # strict: every declined stale answer blocks
    decision = decide(_plan(stamped=stamped, strict_declines=True), [_declined("b")], [])
    assert decision.verdict is BLOCK and decision.failing == ("b",)
    # wrong still blocks without a baseline
    wrong = AnswerResult(AnswerId("b"), Outcome.WRONG, (), "diverged")
    assert decide(_plan(), [wrong], []).verdict is BLOCK
    # a new answer (self-test) that declines is listed as untested, gate off included
    for gate in ("block", "off"):
        decision = decide(_plan(gate=gate), [], [_declined("b")])
        assert decision.verdict is PROMOTE and decision.unreached == ("b",)
        assert "b: untested: unreached by the generator: no metric" in decision.messages
        # reach: ran green now, or not run and stamped
    correct = AnswerResult(AnswerId("b"), Outcome.CORRECT, (), "matches")
    assert reach_of(_plan(stamped=stamped), [correct], []) == {"reached": 2, "total": 2}
    assert reach_of(_plan(stamped=stamped), [_declined("a")], []) == {"reached": 0, "total": 2}


def test_github_and_junit_show_an_unreached_answer_as_untested_not_failing() -> None:
    plan = _plan(stamped=frozenset({AnswerId("a")}))
    correct = AnswerResult(AnswerId("a"), Outcome.CORRECT, (), "matches")
    run = LensRun(plan, Action.PROMOTED, results=[correct, _declined("b")], unreached=("b",))
    report = RunReport("apply", [run])
    levels = {a.title: a.level for a in github.lens_annotations(run, {}, dry_run=False)}
    assert levels["dst untested: l/b is declined"] == "warning"
    assert levels["dst l: promoted"] == "warning"
    assert "**Reach** 1/2 reproduced (50.0%)" in github.job_summary(report)
    xml = junit.to_junit(report)
    assert 'skipped message="untested: unreached by the generator: generator declined' in xml
    assert "<failure" not in xml


def test_corpus_marks_sit_beside_the_trend() -> None:
    metas = [
        ("c" * 40, {"action": "promote", "score": {"correct": 1, "total": 1}}),
        ("b" * 40, {"action": "promote", "score": {"correct": 1, "total": 2}}),
        ("a" * 40, {"action": "promote", "score": {"correct": 2, "total": 2}}),
    ]
    trend = points(metas)
    assert corpus_marks(trend) == {"c" * 40: "corpus 2 → 1"}
    assert summary_lines(trend)[-1] == f"  corpus       ^  corpus 2 → 1 at {'c' * 12}"


def test_an_imported_cortex_model_takes_a_skill_with_its_unreached_answers_listed(
    repo: Path,
) -> None:
    base = CORPORA / "cortex-analyst"
    if not base.is_dir():
        pytest.skip(f"Cortex corpus not found at {base} (set DST_CORPORA to the corpora folder)")
    model = base / "sfdc_sales/sfdc_sales.yaml"
    done = dst(
        repo,
        "import",
        "cortex",
        str(model),
        "--lens",
        "sfdc",
        "--data",
        str(base / "sfdc_sales/sample_data"),
    )
    assert done.code == 0, done.stdout + done.stderr
    commit(repo, {}, "import the Cortex model")
    assert dst(repo, "seed").code == 0
    first = dst(repo, "apply", "--format", "json")
    assert first.code == 0, first.stdout + first.stderr
    count = len(yaml.safe_load(model.read_text()).get("verified_queries") or [])
    commit(repo, {"lenses/sfdc/skills/fiscal.md": "# Fiscal year\n\nIt starts in Feb.\n"}, "skill")
    applied = dst(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    obj = applied.lens("sfdc")
    assert obj["action"] == "promoted"
    declined = [r["answer"] for r in obj["results"] if r["outcome"] == "declined"]
    assert declined, "the fast tier declines most of the imported verified queries"
    listed = [m for m in obj["messages"] if "untested: unreached by the generator: " in m]
    assert len(listed) == len(declined)
    reach = obj["reach"]
    assert reach["total"] == count and reach["reached"] == count - len(declined), reach
    print(f"\nsfdc after a skill: reach {reach['reached']}/{reach['total']}, {len(listed)} listed")


def _meta(repo: Path) -> DeploymentMeta:
    oid = serving(repo)
    assert oid is not None
    tree = pygit2.Repository(str(repo))[oid].peel(pygit2.Commit).tree
    return load(DeploymentMeta, tree["state/meta.json"].data, where=oid, name="meta")
