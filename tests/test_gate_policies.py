"""Gate policies on the example lenses: self-test alerts, stand-down, row cap, dry run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pygit2

from tests.helpers import commit, git, invoke

NEW_ANSWER = """\
id: {id}
question: {question}
sql: |
  {sql}
status: active
provenance:
  certified_by: Dana Whitfield
  certified_at: "2025-02-01"
  source: manual
"""


def serving(repo: Path, lens: str) -> str | None:
    ref = pygit2.Repository(str(repo)).references.get(f"refs/dst/serving/{lens}")
    return None if ref is None else str(ref.target)


def test_new_answer_that_diverges_is_an_alert_never_a_block(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "sales")
    # the human certified a wrong oracle (2023 instead of 2024): the generator disagrees
    answer = NEW_ANSWER.format(
        id="units_2024",
        question="How many units were sold in 2024?",
        sql="SELECT SUM(quantity) FROM orders WHERE status = 'completed' "
        "AND EXTRACT(year FROM order_date) = 2023",
    )
    commit(promoted_repo, {"lenses/sales/answers/units_2024.yaml": answer}, "certify a new answer")
    plan = invoke(promoted_repo, "plan", "--format", "json").lens("sales")
    assert [s["answer"] for s in plan["stale"]] == ["units_2024"]
    assert plan["stale"][0]["reasons"] == ["new", "never_verified"]
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "promoted" and serving(promoted_repo, "sales") != before
    assert sales["results"] == []
    assert [(r["answer"], r["outcome"]) for r in sales["self_test"]] == [("units_2024", "wrong")]
    assert any(m.startswith("self-test ALERT: units_2024") for m in sales["messages"])


def test_gate_stands_down_without_a_warehouse(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "sales")
    shutil.rmtree(promoted_repo / ".dst")
    skill = promoted_repo / "lenses/sales/skills/time.md"
    commit(promoted_repo, {"lenses/sales/skills/time.md": skill.read_text() + "\nMore.\n"}, "skill")
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 1
    sales = applied.lens("sales")
    assert sales["action"] == "stood_down"
    assert any("gate STOOD DOWN" in m and "dst seed" in m for m in sales["messages"])
    assert serving(promoted_repo, "sales") == before
    attempt = pygit2.Repository(str(promoted_repo)).references.get("refs/dst/attempts/sales")
    assert attempt is not None
    status = invoke(promoted_repo, "status")
    assert "last attempt" in status.stdout and "STOOD DOWN" in status.stdout


def test_a_result_over_the_row_cap_is_never_a_pass(promoted_repo: Path) -> None:
    lens_yaml = promoted_repo / "lenses/sales/lens.yaml"
    text = re.sub(r"row_cap: \d+", "row_cap: 3", lens_yaml.read_text())
    commit(promoted_repo, {"lenses/sales/lens.yaml": text}, "tiny row cap")
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 1
    results = applied.lens("sales")["results"]
    over = [r for r in results if "row_cap=3" in r["detail"] or r["outcome"] == "inconclusive"]
    assert over and all(r["outcome"] in ("error", "inconclusive") for r in over)


def test_dry_run_gates_but_moves_nothing(lens_repo: Path) -> None:
    done = invoke(lens_repo, "apply", "--dry-run", "--format", "json")
    assert done.code == 0, done.stderr
    assert {x["action"] for x in done.json()["lenses"]} == {"promoted"}
    assert serving(lens_repo, "sales") is None and serving(lens_repo, "finance") is None
    refs = [r for r in pygit2.Repository(str(lens_repo)).references if r.startswith("refs/dst/")]
    assert refs == []


def test_promoting_a_commit_that_lacks_the_serving_one_is_a_refused_rewind(
    promoted_repo: Path,
) -> None:
    base = git(promoted_repo, "rev-parse", "HEAD")
    skill = promoted_repo / "lenses/sales/skills/time.md"
    original = skill.read_text()
    serving_source = commit(
        promoted_repo, {"lenses/sales/skills/time.md": original + "\nA.\n"}, "a"
    )
    assert invoke(promoted_repo, "apply").code == 0
    before = serving(promoted_repo, "sales")
    git(promoted_repo, "checkout", "-q", "-b", "elsewhere", base)
    commit(promoted_repo, {"lenses/sales/skills/time.md": original + "\nB.\n"}, "b")
    dry = invoke(promoted_repo, "apply", "--dry-run", "--lens", "sales", "--format", "json")
    assert dry.code == 0
    assert any(m.startswith("WARNING rewind refused") for m in dry.lens("sales")["messages"])
    refused = invoke(promoted_repo, "apply", "--lens", "sales")
    assert refused.code == 1
    assert f"does not contain {serving_source[:12]}" in refused.stdout
    assert "--allow-rewind" in refused.stdout
    assert serving(promoted_repo, "sales") == before
    forced = invoke(promoted_repo, "apply", "--lens", "sales", "--allow-rewind")
    assert forced.code == 0, forced.stdout
    assert serving(promoted_repo, "sales") != before
