"""Re-certification and the choices a blocked answer offers: real repositories, the real CLI.

``dst certify --replace ID`` shows the previous oracle beside the new SQL and rewrites the
answer with new provenance; a block names the exact commands for each choice; the
"next:" line lists the uncommitted lens files the certified SQL depends on; ``--sql FILE``
errors name FILE and its line; text output rounds floats for display only.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.git.trees import worktree_files
from reconciler.lens import load_lens
from reconciler.render.text import display_cell
from tests.helpers import FIXTURES, commit, git, invoke
from tests.helpers.examples import double_metric
from tests.helpers.terminal import INTERRUPT, on_terminal

AOV_ANSWERS = ("aov_by_quarter_2023", "aov_enterprise")
WIDE = {"COLUMNS": "200"}  # the side-by-side view is a table; keep its SQL lines whole


def answers_dir(repo: Path) -> dict[str, bytes]:
    folder = repo / "lenses/sales/answers"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_block_message_names_the_three_exact_commands(promoted_repo: Path) -> None:
    double_metric(promoted_repo, "average_order_value")
    blocked = invoke(promoted_repo, "apply", "--lens", "sales")
    assert blocked.code == 1, blocked.stdout + blocked.stderr
    out = blocked.stdout
    for aid in AOV_ANSWERS:
        assert f"{aid} fails; choose one:" in out
        assert (
            "fix the definition: edit lenses/sales/metrics/average_order_value.yaml, commit, "
            "and apply again"
        ) in out
        assert f"re-certify the answer: dst certify --replace {aid} --lens sales" in out
        assert (
            f"retire the answer: set `status: retired` in lenses/sales/answers/{aid}.yaml, "
            "commit, and apply again"
        ) in out
    # the JSON report (and the hook and CI renderers, which print the messages) carry them
    as_json = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    messages = as_json.lens("sales")["messages"]
    assert f"  re-certify the answer: dst certify --replace {AOV_ANSWERS[1]} --lens sales" in (
        messages
    )


def test_ci_check_and_its_junit_carry_the_same_commands(
    promoted_repo: Path, tmp_path: Path
) -> None:
    git(promoted_repo, "checkout", "-q", "-b", "feature")
    double_metric(promoted_repo, "average_order_value")
    summary, junit = tmp_path / "summary.md", tmp_path / "out.xml"
    hidden = {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": str(summary)}
    done = invoke(
        promoted_repo, "ci", "check", "--base", "main", "--format", "github", "--junit",
        str(junit), env=hidden,
    )  # fmt: skip
    assert done.code == 1, done.stdout + done.stderr
    gate = next(
        case
        for case in ET.parse(junit).getroot().iter("testcase")
        if case.get("name") == "gate" and case.find("failure") is not None
    )
    body = gate.findtext("failure") or ""
    for text in (summary.read_text(), body):
        for aid in AOV_ANSWERS:
            assert f"dst certify --replace {aid} --lens sales" in text
            assert f"set `status: retired` in lenses/sales/answers/{aid}.yaml" in text
        assert "edit lenses/sales/metrics/average_order_value.yaml" in text


def test_replace_rewrites_the_answer_and_the_next_apply_promotes(promoted_repo: Path) -> None:
    double_metric(promoted_repo, "average_order_value")
    assert invoke(promoted_repo, "apply", "--lens", "sales").code == 1
    old = load_lens("sales", worktree_files(promoted_repo, "sales")).answers
    shown: dict[str, str] = {}
    for aid in AOV_ANSWERS:
        done = invoke(
            promoted_repo, "certify", "--lens", "sales", "--replace", aid, "--yes", "--by",
            "Pat Lee", env=WIDE,
        )  # fmt: skip
        assert done.code == 0, done.stdout + done.stderr
        shown[aid] = done.stdout
        assert f"re-certified lenses/sales/answers/{aid}.yaml by Pat Lee" in done.stdout
        assert f"next: git add lenses/sales/answers/{aid}.yaml && git commit" in done.stdout
    out = shown["aov_enterprise"]
    # both SQL texts and both executed results, side by side, and how they differ
    assert "previous oracle (certified by" in out and "new: SQL from the fast generator" in out
    assert "/ COUNT(*) AS" in out  # the old oracle's SQL
    assert ") * 2 AS average_order_value" in out  # the new SQL (the doubled metric)
    assert "1274.71227273" in out and "2549.42454545" in out
    assert "the new result differs from the previous oracle's" in out
    new = load_lens("sales", worktree_files(promoted_repo, "sales")).answers
    for aid in AOV_ANSWERS:
        before, after = old[aid], new[aid]
        assert after.question == before.question and after.status == "active"
        assert "* 2" in after.sql and after.sql != before.sql
        # new provenance: the person, now, what produced the SQL — not the old certifier's
        assert after.provenance.certified_by == "Pat Lee" != before.provenance.certified_by
        at = datetime.strptime(after.provenance.certified_at, "%Y-%m-%dT%H:%M:%SZ")
        age = datetime.now(timezone.utc).replace(tzinfo=None) - at
        assert 0 <= age.total_seconds() < 600
        assert re.fullmatch(
            r"dst certify \(generator tier fast; run \d{8}T\d{6}Z-[0-9a-f]{8}\)",
            after.provenance.source,
        )
    commit(promoted_repo, {}, "re-certify the average order value answers")
    applied = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "promoted"
    assert {(r["answer"], r["outcome"]) for r in sales["self_test"]} == {
        (aid, "correct") for aid in AOV_ANSWERS
    }
    assert not [m for m in sales["messages"] if "provenance still says" in m]


def test_replace_dry_run_and_json_show_the_previous_oracle(promoted_repo: Path) -> None:
    before = answers_dir(promoted_repo)
    done = invoke(
        promoted_repo, "certify", "--lens", "sales", "--replace", "aov_enterprise", "--dry-run",
        "--format", "json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    obj = done.json()
    assert obj["status"] == "dry_run" and obj["path"] is None
    assert obj["previous"]["provenance"]["certified_by"]
    assert obj["previous"]["result"]["rows"] == obj["result"]["rows"]  # nothing changed yet
    assert "the new result equals the previous oracle's" in done.stderr
    assert answers_dir(promoted_repo) == before


def test_on_a_terminal_ctrl_c_at_the_prompt_exits_130_and_writes_nothing(
    promoted_repo: Path,
) -> None:
    git(promoted_repo, "config", "user.name", "Robin Analyst")
    double_metric(promoted_repo, "average_order_value")
    before = answers_dir(promoted_repo)
    args = ["certify", "--lens", "sales", "--replace", "aov_enterprise"]
    code, out = on_terminal(promoted_repo, args, [("Replace the certified SQL", INTERRUPT)])
    assert code == 130, out
    assert "2549.42454545" in out  # the new result was shown before the question
    assert answers_dir(promoted_repo) == before
    code, out = on_terminal(promoted_repo, args, [("Replace the certified SQL", "y")])
    assert code == 0, out
    after = load_lens("sales", worktree_files(promoted_repo, "sales")).answers["aov_enterprise"]
    assert after.provenance.certified_by == "Robin Analyst"


def test_on_a_terminal_an_empty_result_is_asked_about(lens_repo: Path, tmp_path: Path) -> None:
    git(lens_repo, "config", "user.name", "Robin Analyst")
    empty = tmp_path / "empty.sql"
    empty.write_text("SELECT order_id FROM orders WHERE order_date < DATE '1900-01-01'\n")
    args = ["certify", "--lens", "sales", "--question", "Orders before 1900", "--sql", str(empty)]
    replies = [("Certify this SQL", "y"), ("Is an empty result the answer", "y")]
    code, out = on_terminal(lens_repo, args, replies)
    assert code == 0, out
    assert "vacuous oracle" in out
    path = lens_repo / "lenses/sales/answers/orders_before_1900.yaml"
    assert "expect_empty: true\n" in path.read_text()


def _set_status(repo: Path, aid: str, status: str) -> None:
    path = repo / f"lenses/sales/answers/{aid}.yaml"
    data = yaml.safe_load(path.read_text())
    data["status"] = status
    if status == "draft":  # a draft names no certifier
        data["provenance"] = {"certified_by": "", "certified_at": ""}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize(
    ("replace", "status", "words"),
    [
        ("aov_enterprize", None, ["has no answer 'aov_enterprize'", "aov_enterprise"]),
        ("aov_enterprise", "retired", ["is retired", "set `status: active`"]),
        ("aov_enterprise", "draft", ["is a draft", "--id aov_enterprise"]),
    ],
)
def test_replace_refuses_unknown_retired_and_draft_answers(
    lens_repo: Path, replace: str, status: str | None, words: list[str]
) -> None:
    if status is not None:
        _set_status(lens_repo, replace, status)
    before = answers_dir(lens_repo)
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--replace", replace, "--yes", "--by", "Pat Lee"
    )
    assert done.code == 2, done.stdout + done.stderr
    for word in words:
        assert word in done.stderr
    assert "fix:" in done.stderr
    assert answers_dir(lens_repo) == before


def test_replace_takes_no_question(lens_repo: Path) -> None:
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--replace", "aov_enterprise", "--question",
        "What is the AOV?", "--yes", "--by", "Pat Lee",
    )  # fmt: skip
    assert done.code == 2
    assert "--replace ID keeps the answer's id and question" in done.stderr
    missing = invoke(lens_repo, "certify", "--lens", "sales", "--yes", "--by", "Pat Lee")
    assert missing.code == 2 and "--question is required" in missing.stderr


def test_next_line_lists_the_uncommitted_metric_the_sql_used(lens_repo: Path) -> None:
    metric = lens_repo / "lenses/sales/metrics/net_revenue.yaml"
    metric.write_text(metric.read_text().replace("synonyms: [", 'synonyms: ["takings", ', 1))
    assert "takings" in metric.read_text()
    (lens_repo / "lenses/sales/metrics/unrelated.yaml").write_text(
        "name: unrelated\nlabel: Unrelated\nmodel: orders\nexpression: COUNT(*)\n"
    )
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--question", "Net revenue by category in 2023",
        "--yes", "--by", "Pat Lee", "--format", "json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    rel = "lenses/sales/answers/net_revenue_by_category_in_2023.yaml"
    # the edited metric the SQL used, then the answer; not the unrelated new metric, and
    # not the committed model files the SQL also depends on
    assert done.json()["git_add"] == ["lenses/sales/metrics/net_revenue.yaml", rel]
    text = invoke(
        lens_repo, "certify", "--lens", "sales", "--question", "Net revenue by region in 2023",
        "--yes", "--by", "Pat Lee",
    )  # fmt: skip
    assert text.code == 0, text.stderr
    assert (
        "next: git add lenses/sales/metrics/net_revenue.yaml "
        "lenses/sales/answers/net_revenue_by_region_in_2023.yaml && git commit"
    ) in text.stdout


_SQL_CASES = yaml.safe_load((FIXTURES / "certify_sql_files.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", _SQL_CASES["cases"], ids=lambda c: c["id"])
def test_bad_sql_file_errors_name_the_file_and_line(
    lens_repo: Path, tmp_path: Path, case: dict[str, Any]
) -> None:
    before = answers_dir(lens_repo)
    path = tmp_path / "query.sql"
    path.write_bytes(case["sql"].encode(case.get("encoding", "utf-8")))
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--question", "Units by category", "--sql",
        str(path), "--yes", "--by", "Pat Lee",
    )  # fmt: skip
    assert done.code == 2, done.stdout + done.stderr
    where = f"{path}:{case['line']}:" if case["line"] is not None else f"{path}:"
    assert where in done.stderr, done.stderr
    assert case["words"] in done.stderr
    assert "answers/" not in done.stderr
    assert answers_dir(lens_repo) == before


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (2514885.82000001, "2514885.82"),
        (0.1 + 0.2, "0.3"),
        (123456789012.0, "123456789012"),
        (1e-7, "1e-07"),
        (2.5e20, "2.5e+20"),
        (float("nan"), "nan"),
        (None, "NULL"),
        (7, "7"),
    ],
)
def test_display_rounds_floats_only(value: object, shown: str) -> None:
    assert display_cell(value) == shown


def test_text_output_rounds_and_json_keeps_every_digit(lens_repo: Path, tmp_path: Path) -> None:
    sql = tmp_path / "total.sql"
    sql.write_text("SELECT CAST(2514885.82000001 AS DOUBLE) AS total\n")
    args = ["certify", "--lens", "sales", "--question", "A total", "--sql", str(sql), "--dry-run"]
    text = invoke(lens_repo, *args)
    assert text.code == 0, text.stderr
    assert "│ 2514885.82 │" in text.stdout  # the result cell, rounded for reading
    assert text.stdout.count("2514885.82000001") == 1  # only the SQL text carries every digit
    as_json = invoke(lens_repo, *args, "--format", "json")
    assert as_json.code == 0, as_json.stderr
    assert "2514885.82000001" in as_json.stdout
    assert json.loads(as_json.stdout)["result"]["rows"] == [[2514885.82000001]]


def test_a_hand_edit_under_the_old_provenance_is_called_out(promoted_repo: Path) -> None:
    path = "lenses/sales/answers/aov_enterprise.yaml"
    text = (promoted_repo / path).read_text()
    assert "/ COUNT(*) AS" in text
    commit(promoted_repo, {path: text.replace("/ COUNT(*) AS", "/ COUNT(o.order_id) AS")}, "edit")
    done = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    sales = done.lens("sales")
    assert sales["action"] == "promoted"  # the self-test is an alert, never a block
    (line,) = [m for m in sales["messages"] if "provenance still says" in m]
    assert line.startswith("WARNING aov_enterprise: its question or SQL changed")
    assert "Marco Ibsen certified it on 2025-01-20" in line
    assert "`dst certify --replace aov_enterprise --lens sales`" in line
    # a new provenance (a person vouching for the edit) ends the warning
    vouched = (
        (promoted_repo / path)
        .read_text()
        .replace('certified_at: "2025-01-20"', 'certified_at: "2025-02-01"')
    )
    commit(
        promoted_repo, {path: vouched.replace("COUNT(o.order_id)", "COUNT(o.order_id) * 1")}, "v"
    )
    again = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    assert again.code == 0, again.stdout + again.stderr
    assert not [m for m in again.lens("sales")["messages"] if "provenance still says" in m]
