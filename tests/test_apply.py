"""End to end on the example lenses: seed, apply, block, warn, rollback (real git, DuckDB)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pygit2
import pytest
import yaml

from tests.helpers import PROJECT, commit, dst, git, invoke
from tests.helpers.examples import (
    answers_bound_to,
    deployment_json,
    double_metric,
    serving,
)

LENSES = ("finance", "sales")


def test_quick_start_in_a_temporary_clone_of_the_project(tmp_path: Path) -> None:
    if not (PROJECT / ".git").exists():
        pytest.skip("the project is not a git checkout, so there is nothing to clone")
    # The README's quick start, as a user runs it: the real console entry in its own processes.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(PROJECT), str(clone)], check=True)
    seeded = dst(clone, "seed")
    assert seeded.code == 0, seeded.stderr
    first = dst(clone, "apply", "--format", "json")
    assert first.code == 0, first.stderr
    assert {x["lens"]: x["action"] for x in first.json()["lenses"]} == dict.fromkeys(
        LENSES, "promoted"
    )
    status = dst(clone, "status")
    for name in LENSES:
        assert f"{name}: serving {str(serving(clone, name))[:12]}" in status.stdout
    again = dst(clone, "apply", "--format", "json")
    assert {x["action"] for x in again.json()["lenses"]} == {"unchanged"}


def test_seed_apply_promotes_every_example_lens_then_unchanged(lens_repo: Path) -> None:
    first = invoke(lens_repo, "apply", "--format", "json")
    assert first.code == 0, first.stderr
    report = first.json()
    assert report["schema_version"] == 1
    for name in LENSES:
        obj = first.lens(name)
        assert obj["action"] == "promoted"
        assert obj["serving_before"] is None
        assert obj["serving_after"] == serving(lens_repo, name)
        # nothing served before, so every answer is self-tested against its oracle
        outcomes = {r["outcome"] for r in obj["self_test"]}
        assert outcomes == {"correct"}, [r for r in obj["self_test"] if r["outcome"] != "correct"]
        assert obj["score"]["correct"] == obj["score"]["total"] >= 15
    status = invoke(lens_repo, "status")
    assert status.code == 0
    for name in LENSES:
        oid = serving(lens_repo, name)
        assert oid is not None
        assert f"{name}: serving {oid[:12]}" in status.stdout
        tree = git(lens_repo, "ls-tree", "--name-only", "-r", oid)
        assert {"state/bindings.json", "state/run.json", "state/meta.json"} <= set(
            tree.splitlines()
        )
        # lens/ is the source commit's lens tree itself, not a copy
        assert git(lens_repo, "rev-parse", f"{oid}:lens") == git(
            lens_repo, "rev-parse", f"HEAD:lenses/{name}"
        )
        root, source = git(lens_repo, "log", "-1", "--format=%P", oid).split()
        assert source == git(lens_repo, "rev-parse", "HEAD")
        # the first parent is an empty root, so first-parent history ends at the lens
        assert git(lens_repo, "log", "-1", "--format=%P", root) == ""
        assert len(git(lens_repo, "log", "--first-parent", "--format=%H", oid).split()) == 2
    second = invoke(lens_repo, "apply", "--format", "json")
    assert second.code == 0
    assert {x["action"] for x in second.json()["lenses"]} == {"unchanged"}
    assert all(serving(lens_repo, n) == first.lens(n)["serving_after"] for n in LENSES)


def test_doubling_a_metric_stales_exactly_its_answers_and_blocks(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "sales")
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    all_answers = {p.stem for p in (promoted_repo / "lenses/sales/answers").glob("*.yaml")}
    assert 0 < len(users) < len(all_answers)
    double_metric(promoted_repo, "units_sold")

    plan = invoke(promoted_repo, "plan", "--format", "json")
    assert plan.code == 0, plan.stderr
    sales = plan.lens("sales")
    assert {s["answer"] for s in sales["stale"]} == users
    assert all(s["reasons"] == ["asset_changed"] for s in sales["stale"])
    assert sales["changed_assets"] == [
        {"asset": "metrics/units_sold", "change": "modified", "path": "metrics/units_sold.yaml"}
    ]
    assert plan.lens("finance")["stale"] == []

    applied = invoke(promoted_repo, "apply")
    assert applied.code == 1, applied.stdout + applied.stderr
    assert serving(promoted_repo, "sales") == before
    out = applied.stdout
    assert "sales: BLOCKED" in out
    total = len(all_answers)
    # the standing score counts the whole corpus: untouched answers keep their green stamp
    assert f"score: {total - len(users)}/{total} correct" in out
    assert f"previous score: {total}/{total} correct" in out
    for answer in users:
        assert f"✗ {answer}: wrong" in out
    assert out.count("oracle result:") >= len(users)
    assert out.count("generated result:") >= len(users)
    # the blocked run is recorded as an attempt, never served
    attempt = pygit2.Repository(str(promoted_repo)).references.get("refs/dst/attempts/sales")
    assert attempt is not None
    assert deployment_json(promoted_repo, str(attempt.target), "state/meta.json")["action"] == (
        "blocked"
    )


def test_same_edit_under_warn_promotes_with_findings(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "sales")
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    double_metric(promoted_repo, "units_sold", gate="warn")
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "promoted"
    assert sales["serving_after"] != before
    assert {r["answer"] for r in sales["results"] if r["outcome"] == "wrong"} == users
    assert any(m.startswith("WARNING gate findings") for m in sales["messages"])
    # failures keep their old stamp, so they stay stale for the next apply
    bindings = deployment_json(promoted_repo, sales["serving_after"], "state/bindings.json")
    for answer in users:
        assert "metrics/units_sold" in bindings["answers"][answer]["assets"]
    # the next change to the lens, even a comment, re-selects them
    orders = promoted_repo / "lenses/sales/models/orders.yaml"
    commit(promoted_repo, {"lenses/sales/models/orders.yaml": "# c\n" + orders.read_text()}, "c")
    replan = invoke(promoted_repo, "plan", "--format", "json")
    assert {s["answer"] for s in replan.lens("sales")["stale"]} == users


def test_formatting_comments_key_order_and_renames_make_nothing_stale(promoted_repo: Path) -> None:
    sales = promoted_repo / "lenses" / "sales"
    metric = sales / "metrics" / "net_revenue.yaml"
    data = yaml.safe_load(metric.read_text())
    reordered = "# reordered and re-indented\n" + yaml.safe_dump(
        dict(reversed(list(data.items()))), indent=4, sort_keys=False, width=60
    )
    model_path = next((sales / "models").glob("*.yaml"))
    model_text = "# comment at the top\n" + model_path.read_text().replace("\n", "  # note\n", 1)
    answer_path = sorted((sales / "answers").glob("*.yaml"))[0]
    answer_text = answer_path.read_text().replace("SELECT", "select  -- comment\n  ", 1)
    commit(
        promoted_repo,
        {
            str(metric.relative_to(promoted_repo)): reordered,
            str(model_path.relative_to(promoted_repo)): model_text,
            str(answer_path.relative_to(promoted_repo)): answer_text,
        },
        "formatting only",
    )
    git(
        promoted_repo,
        "mv",
        "lenses/sales/metrics/units_sold.yaml",
        "lenses/sales/metrics/units.yaml",
    )
    git(promoted_repo, "commit", "-q", "-m", "rename a file")
    plan = invoke(promoted_repo, "plan", "--format", "json")
    assert plan.code == 0, plan.stderr
    obj = plan.lens("sales")
    assert obj["stale"] == []
    assert obj["self_test"] == []
    assert [c["change"] for c in obj["changed_assets"]] == ["renamed"]
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 0
    assert applied.lens("sales")["results"] == []


def _set_status(repo: Path, lens: str, status: str) -> dict[str, str]:
    files = {}
    for path in sorted((repo / "lenses" / lens / "answers").glob("*.yaml")):
        files[str(path.relative_to(repo))] = re.sub(
            r"status: \w+", f"status: {status}", path.read_text()
        )
    return files


def test_retiring_the_last_active_answer_blocks_then_warns(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "finance")
    commit(promoted_repo, _set_status(promoted_repo, "finance", "retired"), "retire everything")
    blocked = invoke(promoted_repo, "apply", "--format", "json")
    assert blocked.code == 1
    fin = blocked.lens("finance")
    assert fin["action"] == "blocked" and fin["starvation"] is True
    assert any("starvation" in m for m in fin["messages"])
    assert serving(promoted_repo, "finance") == before
    lens_yaml = promoted_repo / "lenses/finance/lens.yaml"
    commit(
        promoted_repo,
        {
            "lenses/finance/lens.yaml": re.sub(
                r"eval_gate: \w+", "eval_gate: warn", lens_yaml.read_text()
            )
        },
        "warn",
    )
    warned = invoke(promoted_repo, "apply", "--format", "json")
    assert warned.code == 0, warned.stderr
    fin = warned.lens("finance")
    assert fin["action"] == "promoted"
    assert any(m.startswith("WARNING starvation") for m in fin["messages"])


def test_lens_with_no_answers_publishes_with_gate_skipped(lens_repo: Path) -> None:
    commit(
        lens_repo,
        {
            "lenses/empty/lens.yaml": "name: empty\n",
            "lenses/empty/models/orders.yaml": "name: orders\ntable: orders\n",
        },
        "a lens with nothing certified",
    )
    applied = invoke(lens_repo, "apply", "--lens", "empty")
    assert applied.code == 0, applied.stderr
    assert "gate SKIPPED" in applied.stdout
    assert serving(lens_repo, "empty") is not None


def test_rollback_restores_earlier_content_as_a_new_deployment(promoted_repo: Path) -> None:
    first = serving(promoted_repo, "sales")
    assert first is not None
    double_metric(promoted_repo, "units_sold", gate="warn")
    assert invoke(promoted_repo, "apply").code == 0
    second = serving(promoted_repo, "sales")
    rolled = invoke(promoted_repo, "rollback", "sales", "--format", "json")
    assert rolled.code == 0, rolled.stderr
    third = serving(promoted_repo, "sales")
    assert third not in (first, second)
    assert git(promoted_repo, "rev-parse", f"{third}:lens") == git(
        promoted_repo, "rev-parse", f"{first}:lens"
    )
    history = git(
        promoted_repo, "log", "--first-parent", "--format=%H %s", "refs/dst/serving/sales"
    ).splitlines()
    assert [h.split()[0] for h in history[:3]] == [third, second, first]
    assert history[0].split()[1] == "rollback"
    log = invoke(promoted_repo, "log", "sales", "--format", "json")
    assert [d["action"] for d in log.json()["deployments"]] == ["rollback", "promote", "promote"]
    # rolling back to the rollback target explicitly is also a new record
    again = invoke(promoted_repo, "rollback", "sales", "--to", second)
    assert again.code == 0
    assert git(promoted_repo, "rev-parse", "refs/dst/serving/sales:lens") == git(
        promoted_repo, "rev-parse", f"{second}:lens"
    )


def test_dst_test_verifies_and_records_a_verification(promoted_repo: Path) -> None:
    before = serving(promoted_repo, "finance")
    done = invoke(promoted_repo, "test", "finance", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    fin = done.lens("finance")
    assert fin["score"]["correct"] == fin["score"]["total"] >= 15
    assert serving(promoted_repo, "finance") == before == fin["serving_after"]
    verified = git(promoted_repo, "rev-parse", "refs/dst/verify/finance")
    assert git(promoted_repo, "log", "-1", "--format=%P", verified).split()[1] == before
    meta = deployment_json(promoted_repo, verified, "state/meta.json")
    assert (meta["action"], meta["verified"]) == ("verify", before)
