"""GitHub Actions output and base resolution: escaping, caps, summary, JUnit, shallow clones.

The end-to-end tests run the real ``dst ci`` command in real git repositories:
a pull request that doubles a metric, a shallow clone that must deepen to find
its merge base (or say it cannot), and GitHub's pull-request merge commit.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reconciler.bindings import Reason, StaleAnswer, StaleReason
from reconciler.errors import UsageError
from reconciler.git import base as prbase
from reconciler.ids import AnswerId, AssetId, Oid
from reconciler.plan import AssetChange, LensPlan
from reconciler.render import github as ghactions, junit
from reconciler.results import LensRun, RunReport
from reconciler.suite import AnswerResult, Outcome
from tests.helpers import commit, git, invoke
from tests.helpers.examples import double_metric

# ------------------------------------------------------------------ builders

TOKEN = "t0k3n"


def _result(
    answer: str,
    outcome: Outcome = Outcome.WRONG,
    *,
    detail: str = "diverged from the oracle: oracle 1 vs generated 2",
    oracle_failed: bool = False,
    flaky: bool = False,
) -> AnswerResult:
    attempt = {
        "attempt": 1,
        "generation": {"sql": "SELECT 2 AS n"},
        "comparison": {"missing": [[1]], "extra": [[2]], "missing_count": 1, "extra_count": 1},
    }
    return AnswerResult(
        AnswerId(answer),
        outcome,
        (attempt,),
        detail,
        flaky,
        {"columns": ["n"], "rows": [[1]], "row_count": 1, "truncated": False},
        {"columns": ["n"], "rows": [[2]], "row_count": 1, "truncated": False},
        oracle_failed,
    )


def _run(
    lens: str,
    action: str,
    results: Sequence[AnswerResult] = (),
    self_test: Sequence[AnswerResult] = (),
    *,
    gate: str = "block",
    messages: Sequence[str] = (),
) -> LensRun:
    stale = tuple(
        StaleAnswer(r.answer, (StaleReason(Reason.ASSET_CHANGED, AssetId("metrics/m")),))
        for r in results
    )
    plan = LensPlan(
        lens=lens,
        gate=gate,
        serving=Oid("a" * 40),
        serving_tree=Oid("b" * 40),
        candidate=Oid("c" * 40),
        candidate_tree=Oid("d" * 40),
        unchanged=False,
        changed_assets=(
            AssetChange(asset=AssetId("metrics/m"), change="modified", path="metrics/m.yaml"),
        ),
        stale=stale,
        self_test=tuple(r.answer for r in self_test),
    )
    return LensRun(
        plan,
        action,
        results=list(results),
        self_test=list(self_test),
        previous_score={"correct": 3, "wrong": 0, "total": 3},
        messages=list(messages),
    )


def _report(*runs: LensRun, exit_code: int = 1) -> RunReport:
    return RunReport("ci check", list(runs), ["checked c against b"], exit_code, dry_run=True)


def _commands(text: str) -> list[str]:
    """Lines the runner would treat as commands (outside stop-commands blocks)."""
    out, stopped = [], None
    for line in text.splitlines():
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        if line.startswith("::stop-commands::"):
            stopped = line.split("::")[2]
            continue
        if line.lstrip().startswith("::"):
            out.append(line)
    return out


# ------------------------------------------------------------------ escaping


def test_workflow_command_escaping_follows_githubs_rules() -> None:
    assert ghactions.escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    # '%' goes first, so an escape already in the text is not decoded by the runner
    assert ghactions.escape_data("%0A") == "%250A"
    assert ghactions.escape_data("a: b, c") == "a: b, c"
    assert ghactions.escape_property("a: b, c\n50%") == "a%3A b%2C c%0A50%25"
    line = ghactions.command(
        "error", "two\nlines: 100%", file="lenses/a,b:c.yaml", line=3, title="t: x", col=None
    )
    assert line == "::error file=lenses/a%2Cb%3Ac.yaml,line=3,title=t%3A x::two%0Alines: 100%25"
    assert ghactions.command("endgroup") == "::endgroup::"


def test_free_text_cannot_inject_workflow_commands() -> None:
    evil = "diverged\n::error file=x::pwned\n::add-mask::secret"
    report = _report(_run("sales", "blocked", [_result("a1", detail=evil)]))
    text, _ = ghactions.to_github(report, token=TOKEN)
    commands = _commands(text)
    assert not any(c.startswith("::error file=x::") for c in commands)
    assert not any(c.startswith("::add-mask::") for c in commands)
    # the detail does reach the annotation, as one escaped line
    assert any("%0A::error file=x::pwned" in c for c in commands)
    assert "::stop-commands::t0k3n" in text and "::t0k3n::" in text


# ------------------------------------------------------------------ annotations


def test_annotations_point_at_the_answer_file_and_sql_line() -> None:
    report = _report(_run("sales", "blocked", [_result("net_revenue_2024")]))
    answer = b"id: net_revenue_2024\nquestion: What was net revenue?\nsql: |\n  SELECT 1\n"
    files = {"sales": {"answers/net_revenue_2024": "lenses/sales/answers/net.yaml"}}
    locations = ghactions.locate(report, files, {"lenses/sales/answers/net.yaml": answer}.get)
    assert locations == {
        ("sales", "net_revenue_2024"): ghactions.Where("lenses/sales/answers/net.yaml", 3)
    }
    text, _ = ghactions.to_github(report, locations=locations, token=TOKEN)
    commands = _commands(text)
    assert commands[0] == "::group::dst sales: blocked"
    assert commands[1].startswith("::error title=dst sales%3A blocked::sales: blocked")
    assert commands[2].startswith(
        "::error file=lenses/sales/answers/net.yaml,line=3,"
        "title=dst gate%3A sales/net_revenue_2024 is wrong::diverged"
    )
    assert "generated SQL: SELECT 2 AS n" in commands[2]
    assert commands[-1] == "::endgroup::"
    assert text.rstrip().endswith("dst ci check: did not pass: sales (exit 1)")


def test_levels_follow_the_gate_and_lenses_come_most_severe_first() -> None:
    report = _report(
        _run("alpha", "unchanged", messages=["already serving this lens tree"]),
        _run("beta", "promoted", [_result("w1")], gate="warn", messages=["WARNING gate findings"]),
        _run("gamma", "promoted", [], [_result("s1")]),
        _run("zeta", "blocked", [_result("b1", Outcome.DECLINED)]),
        _run("omega", "skipped", messages=["not promoted: the apply rolls back"]),
    )
    commands = _commands(ghactions.workflow_commands(report, token=TOKEN))
    groups = [c.removeprefix("::group::dst ").split(":")[0] for c in commands if "::group::" in c]
    assert groups == ["zeta", "beta", "gamma", "alpha", "omega"]
    levels = {
        c.split("title=dst ")[1].split("::")[0]: c.split()[0] for c in commands if "title=" in c
    }
    assert levels["zeta%3A blocked"] == "::error"
    assert levels["gate%3A zeta/b1 is declined"] == "::error"
    assert levels["gate%3A beta/w1 is wrong"] == "::warning"  # eval_gate: warn
    assert levels["beta%3A would promote (dry run)"] == "::warning"
    assert levels["self-test alert%3A gamma/s1 is wrong"] == "::warning"  # alerts never block
    assert levels["alpha%3A unchanged"] == "::notice"
    assert levels["omega%3A skipped"] == "::notice"


def test_at_most_ten_errors_and_the_tenth_says_how_many_more() -> None:
    results = [_result(f"answer_{i:02d}") for i in range(15)]
    text = ghactions.workflow_commands(_report(_run("sales", "blocked", results)), token=TOKEN)
    errors = [c for c in _commands(text) if c.startswith("::error")]
    # 16 errors (a headline and 15 answers): 9 shown, then one naming the 7 left out
    assert len(errors) == ghactions.ANNOTATIONS_PER_KIND
    assert errors[-1].startswith("::error title=dst%3A 7 more error(s)::7 more error annotation")
    # every failure is still in the log, inside the group's text
    assert all(f"✗ answer_{i:02d}: wrong" in text for i in range(15))


def test_exactly_ten_is_not_capped() -> None:
    annotations = [ghactions.Annotation("warning", "l", f"t{i}", "m") for i in range(10)]
    kept, overflow = ghactions.cap_annotations(annotations)
    assert kept == annotations and overflow == {}
    kept, overflow = ghactions.cap_annotations(
        [*annotations, ghactions.Annotation("warning", "l", "t10", "m")]
    )
    assert len(kept) == 9 and overflow == {"warning": 2}


# ------------------------------------------------------------------ job summary


def test_summary_has_scores_assets_stale_and_both_results() -> None:
    report = _report(_run("sales", "blocked", [_result("units|by_segment")]))
    locations = {("sales", "units|by_segment"): ghactions.Where("lenses/sales/answers/u.yaml", 4)}
    _, summary = ghactions.to_github(report, locations=locations, title="dst lens check")
    assert summary.startswith("## dst lens check: ❌ did not pass: sales")
    assert "| lens | action | gate | score | previous score | stale | changed assets |" in summary
    assert (
        "| ❌ sales | blocked | block | 0/1 correct (0.0%) · wrong 1 (100.0%) | "
        "3/3 correct (100.0%) · wrong 0 (0.0%) | 1 | 1 |" in summary
    )
    assert "| metrics/m | modified | metrics/m.yaml |" in summary
    assert "| units&#124;by_segment | asset_changed |" in summary  # a pipe cannot break the table
    assert "`lenses/sales/answers/u.yaml` line 4" in summary
    assert "**Oracle result** (1 row(s))" in summary
    assert "**Generated result** (1 row(s))" in summary
    assert "```sql\nSELECT 2 AS n\n```" in summary
    assert "truncated" not in summary


def test_summary_stops_at_the_byte_limit_with_a_visible_marker() -> None:
    runs = [
        _run(f"lens{i}", "blocked", [_result(f"a{j}", detail="ü" * 100) for j in range(5)])
        for i in range(20)
    ]
    full = ghactions.job_summary(_report(*runs))
    assert len(full.encode()) > 20_000
    for limit in (20_000, 3_000):
        summary = ghactions.job_summary(_report(*runs), limit_bytes=limit)
        assert len(summary.encode()) <= limit
        assert "**⚠️ summary truncated**" in summary
        assert re.search(r"\d+ more section\(s\) did not fit", summary)
    # the overview table comes first, so it survives truncation
    assert "| lens | action | gate |" in ghactions.job_summary(_report(*runs), limit_bytes=3_000)


# ------------------------------------------------------------------ JUnit


def test_junit_parses_and_maps_outcomes_to_the_gate() -> None:
    report = _report(
        _run(
            "sales",
            "blocked",
            [
                _result("wrong_one"),
                _result("declined_one", Outcome.DECLINED, detail="generator declined: \x00x"),
                _result("good_one", Outcome.CORRECT, detail="matches", flaky=True),
            ],
            [
                _result("new_divergent"),
                _result("new_broken", Outcome.ERROR, oracle_failed=True, detail="oracle failed"),
            ],
            messages=["gate BLOCKED: 2 answer(s) failed"],
        ),
        _run("finance", "stood_down", [], messages=["gate STOOD DOWN: no warehouse"]),
    )
    report.lenses[1].plan = LensPlan(
        lens="finance",
        gate="block",
        serving=None,
        serving_tree=None,
        candidate=Oid("c" * 40),
        candidate_tree=Oid("d" * 40),
        unchanged=False,
        stale=(StaleAnswer(AnswerId("budget"), (StaleReason(Reason.NEVER_VERIFIED),)),),
    )
    xml = junit.to_junit(
        report, {("sales", "wrong_one"): ghactions.Where("lenses/sales/answers/w.yaml", 3)}
    )
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    sales, finance = suites["sales"], suites["finance"]
    cases = {c.get("name"): c for c in sales.iter("testcase")}
    assert set(cases) == {"gate", "wrong_one", "declined_one", "good_one"} | {
        "new_divergent",
        "new_broken",
    }

    def failure(name: str) -> ET.Element | None:
        return cases[name].find("failure")

    assert failure("gate") is not None
    wrong = failure("wrong_one")
    assert wrong is not None and wrong.get("type") == "wrong"
    assert cases["wrong_one"].get("file") == "lenses/sales/answers/w.yaml"
    assert cases["wrong_one"].get("line") == "3"
    declined = failure("declined_one")  # declined blocks under DESIGN §5, so it fails
    assert declined is not None and "\ufffd" in declined.get("message", "")
    assert failure("good_one") is None
    assert failure("new_divergent") is None  # a self-test divergence is an alert
    assert "self-test ALERT" in (cases["new_divergent"].findtext("system-out") or "")
    assert failure("new_broken") is not None  # broken certified SQL is bad input
    assert sales.get("tests") == "6" and sales.get("failures") == "4"
    props = {p.get("name"): p.get("value") for p in sales.iter("property")}
    assert props["action"] == "blocked" and props["gate"] == "block"
    finance_cases = {c.get("name"): c for c in finance.iter("testcase")}
    assert finance_cases["gate"].find("failure") is not None
    assert finance_cases["budget"].find("skipped") is not None  # stale but never ran
    assert root.get("failures") == "5" and root.get("skipped") == "1"


# ------------------------------------------------------------------ the event


def test_event_payloads() -> None:
    pr = {
        "pull_request": {"base": {"sha": "b" * 40}, "head": {"sha": "h" * 40}},
        "repository": {"default_branch": "trunk"},
    }
    event = prbase.read_event({"GITHUB_EVENT_NAME": "pull_request"}, pr)
    assert event == prbase.Event("pull_request", "b" * 40, "h" * 40, "trunk")
    assert event.is_pull_request
    push = prbase.read_event({"GITHUB_EVENT_NAME": "push"}, {"before": "0" * 40})
    assert push.base == "0" * 40 and not push.is_pull_request
    assert prbase.is_zero_oid("0" * 40) and prbase.is_zero_oid("0" * 64)
    assert not prbase.is_zero_oid("0" * 12) and not prbase.is_zero_oid(None)
    assert prbase.read_event({}, None) == prbase.Event()


# ------------------------------------------------------------------ base resolution


def _recording(repo: Path) -> tuple[prbase.Fetch, list[list[str]]]:
    calls: list[list[str]] = []
    real = prbase.subprocess_fetch(repo)

    def fetch(args: Sequence[str]) -> str | None:
        calls.append(list(args))
        return real(args)

    return fetch, calls


def test_a_full_clone_fetches_a_missing_base_without_depth(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ahead = commit(repo, {"docs.md": "later\n"}, "later on the origin")
    fetch, calls = _recording(clone)
    resolved = prbase.resolve_base(clone, ahead, "HEAD", fetch=fetch)
    assert resolved.merge_base == git(clone, "rev-parse", "HEAD")
    assert not resolved.shallow and resolved.deepened == 0
    assert calls and not any(a.startswith(("--depth", "--deepen")) for c in calls for a in c)


def test_unrelated_histories_are_an_error_not_everything_added(repo: Path) -> None:
    git(repo, "checkout", "-q", "--orphan", "other")
    orphan = commit(repo, {"x.md": "x\n"}, "unrelated root")
    with pytest.raises(UsageError, match="share no history"):
        prbase.resolve_base(repo, "main", orphan)


def test_a_branch_creation_push_compares_with_the_default_branch(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "topic")
    head = commit(repo, {"y.md": "y\n"}, "topic work")
    resolved = prbase.resolve_base(repo, "0" * 40, head, default_branch="main")
    assert resolved.merge_base == base
    assert any("default branch main" in n for n in resolved.notes)
    with pytest.raises(UsageError, match="default branch is unknown"):
        prbase.resolve_base(repo, "0" * 40, head)


# ------------------------------------------------------------------ end to end


def _no_github(summary: Path | None = None, **extra: str) -> dict[str, str]:
    """Environment that hides any real GitHub Actions context of the test run itself."""
    return {
        "GITHUB_EVENT_NAME": "",
        "GITHUB_EVENT_PATH": "",
        "GITHUB_STEP_SUMMARY": str(summary) if summary else "",
        **extra,
    }


def _promote(repo: Path) -> None:
    done = invoke(repo, "apply", "--format", "json", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr


def test_ci_check_on_a_breaking_branch_annotates_summarises_and_writes_junit(
    lens_repo: Path, tmp_path: Path
) -> None:
    _promote(lens_repo)
    git(lens_repo, "checkout", "-q", "-b", "feature")
    double_metric(lens_repo, "units_sold")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    junit = tmp_path / "out.xml"
    done = invoke(
        lens_repo,
        "ci",
        "check",
        "--base",
        "main",
        "--format",
        "github",
        "--junit",
        str(junit),
        env=_no_github(summary),
    )
    assert done.code == 1, done.stdout + done.stderr
    errors = re.findall(
        r"^::error file=(lenses/sales/answers/\w+\.yaml),line=(\d+),title=", done.stdout, re.M
    )
    assert errors, done.stdout
    for path, line in errors:
        assert (lens_repo / path).read_text().splitlines()[int(line) - 1].startswith("sql:")
    assert "::group::dst sales: blocked" in done.stdout
    assert "finance" not in done.stdout  # only the lenses the branch changed are checked
    text = summary.read_text()
    assert text.startswith("earlier step\n## dst lens check: ❌ did not pass: sales")  # appended
    assert "| lens | action | gate | score | previous score | stale | changed assets |" in text
    assert "| metrics/units_sold | modified | metrics/units_sold.yaml |" in text
    assert "**Generated result**" in text
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and int(root.get("failures", "0")) > len(errors) - 1
    failed = {c.get("file") for c in root.iter("testcase") if c.find("failure") is not None}
    assert {path for path, _ in errors} <= failed


def _shallow_setup(lens_repo: Path, tmp_path: Path) -> tuple[Path, str]:
    """An origin whose main moved on after a breaking branch; returns (origin, fork point)."""
    _promote(lens_repo)
    fork = git(lens_repo, "rev-parse", "HEAD")
    git(lens_repo, "checkout", "-q", "-b", "feature")
    double_metric(lens_repo, "units_sold")
    commit(lens_repo, {"NOTES.md": "feature notes\n"}, "notes")
    git(lens_repo, "checkout", "-q", "main")
    for i in range(3):
        commit(lens_repo, {f"docs/{i}.md": f"{i}\n"}, f"main moves on {i}")
    return lens_repo, fork


def _shallow_clone(origin: Path, where: Path, *fetch: str) -> Path:
    """A depth-1 checkout like actions/checkout's, with the serving state and warehouse."""
    if fetch:
        where.mkdir()
        git(where, "init", "-q")
        git(where, "remote", "add", "origin", origin.as_uri())
        git(where, "fetch", "-q", "--no-tags", "--depth=1", "origin", *fetch)
        git(where, "checkout", "-q", "--detach", "FETCH_HEAD")
    else:
        git(
            where.parent,
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "feature",
            origin.as_uri(),
            str(where),
        )
    git(where, "fetch", "-q", "--no-tags", "origin", "refs/dst/*:refs/dst/*")
    # the seeded warehouse (and the profile cache beside it) travel as a CI cache would
    shutil.copytree(origin / ".dst", where / ".dst")
    assert git(where, "rev-parse", "--is-shallow-repository") == "true"
    return where


def test_shallow_clone_deepens_until_it_finds_the_merge_base(
    lens_repo: Path, tmp_path: Path
) -> None:
    origin, fork = _shallow_setup(lens_repo, tmp_path)
    clone = _shallow_clone(origin, tmp_path / "shallow")
    done = invoke(
        clone,
        "ci",
        "check",
        "--base",
        "main",
        "--deepen-by",
        "1",
        "--format",
        "json",
        env=_no_github(),
    )
    assert done.code == 1, done.stdout + done.stderr
    report = done.json()
    assert [x["lens"] for x in report["lenses"]] == ["sales"]
    assert report["lenses"][0]["action"] == "blocked"
    assert f"against the merge base {fork[:12]}" in report["messages"][0]
    assert "deepened the shallow clone" in done.stderr


def test_shallow_clone_without_enough_history_fails_loudly(lens_repo: Path, tmp_path: Path) -> None:
    origin, _ = _shallow_setup(lens_repo, tmp_path)
    clone = _shallow_clone(origin, tmp_path / "shallow")
    args = ("ci", "check", "--base", "main", "--deepen-by", "1", "--max-deepen", "0")
    done = invoke(clone, *args, "--format", "json", env=_no_github())
    assert done.code == 2, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["message"].startswith("insufficient history: no merge base of main")
    assert "fetch-depth: 0" in error["fix"]
    annotated = invoke(clone, *args, "--format", "github", env=_no_github())
    assert annotated.code == 2
    assert annotated.stdout.startswith("::error title=dst ci check::insufficient history")


def test_pull_request_merge_commit_is_checked_against_its_first_parent_and_never_applied(
    lens_repo: Path, tmp_path: Path
) -> None:
    origin, _ = _shallow_setup(lens_repo, tmp_path)
    pr_head = git(origin, "rev-parse", "feature")
    base = git(origin, "rev-parse", "main")
    git(origin, "checkout", "-q", "--detach", "main")
    git(origin, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    git(origin, "update-ref", "refs/pull/7/merge", "HEAD")
    git(origin, "checkout", "-q", "main")
    clone = _shallow_clone(origin, tmp_path / "pr", "refs/pull/7/merge")
    payload = tmp_path / "event.json"
    event: dict[str, Any] = {
        "pull_request": {"base": {"sha": base}, "head": {"sha": pr_head}},
        "repository": {"default_branch": "main"},
    }
    payload.write_text(json.dumps(event))
    env = _no_github(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(payload))
    done = invoke(clone, "ci", "check", "--format", "json", env=env)
    assert done.code == 1, done.stdout + done.stderr
    report = done.json()
    assert [x["lens"] for x in report["lenses"]] == ["sales"]
    assert report["messages"][0].startswith(
        f"pull request head {pr_head[:12]}: checked as GitHub's merge commit"
    )
    assert f"against {base[:12]}" in report["messages"][0]
    refused = invoke(clone, "ci", "apply", "--format", "json", env=env)
    assert refused.code == 2
    assert refused.json()["error"]["message"].startswith("refusing to apply on a pull_request")
    assert git(clone, "for-each-ref", "--format=%(objectname)", "refs/dst/serving/sales") == git(
        origin, "rev-parse", "refs/dst/serving/sales"
    )


def test_ci_apply_promotes_on_the_default_branch(lens_repo: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    done = invoke(lens_repo, "ci", "apply", "--format", "github", env=_no_github(summary))
    assert done.code == 0, done.stdout + done.stderr
    assert "::notice title=dst sales%3A promoted::" in done.stdout
    assert git(lens_repo, "for-each-ref", "--format=%(refname)", "refs/dst/serving/") == (
        "refs/dst/serving/finance\nrefs/dst/serving/sales"
    )
    assert "## dst lens apply: ✅ passed" in summary.read_text()
