"""The text report a dbt user reads: one line per answer, a summary per lens, details of
failures only, colour on a terminal (never with ``NO_COLOR`` or on a pipe), ``--verbose``
for the full listing. Real example lenses, real DuckDB, the CLI in-process."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from reconciler.cli.progress import AnswerClock
from tests.helpers import invoke
from tests.helpers.examples import answers_bound_to, double_metric

ESC = "\x1b["
ANSWER_LINE = re.compile(
    r"^  (?P<mark>[✓✗○]) (?P<answer>\w+): (?P<outcome>\w+) +(?P<attempts>\d) attempts?"
    r"  (?P<seconds>\d+\.\d\d)s(?P<tags>(  [\w: -]+)*)$"
)


@pytest.fixture(autouse=True)
def _no_colour_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # the environment a test runs in must not decide whether colour is asked for
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def _answers(repo: Path, lens: str) -> set[str]:
    return {p.stem for p in (repo / "lenses" / lens / "answers").glob("*.yaml")}


def test_first_apply_prints_one_line_per_answer_and_a_summary_per_lens(lens_repo: Path) -> None:
    done = invoke(lens_repo, "apply")
    assert done.code == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert ESC not in done.stdout  # piped: no colour
    assert "previous score" not in done.stdout  # nothing served before: no previous score
    total_answers = 0
    for lens in ("finance", "sales"):
        answers = _answers(lens_repo, lens)
        total_answers += len(answers)
        lines = [m for m in map(ANSWER_LINE.match, out) if m and m["answer"] in answers]
        assert sorted(m["answer"] for m in lines) == sorted(answers)  # each exactly once
        assert {(m["mark"], m["outcome"], m["attempts"]) for m in lines} == {("✓", "correct", "1")}
        assert all(m["tags"] == "  self-test" for m in lines)
        for aid in answers:  # not also listed as added, stale and self-test
            assert sum(f" {aid}:" in line or f"{aid}," in line for line in out) == 1, aid
        n = len(answers)
        summary = [line for line in out if line.startswith(f"{lens}: ")]
        assert len(summary) == 1
        assert re.fullmatch(
            rf"{lens}: PROMOTED  \(gate: block; serving nothing → [0-9a-f]{{12}}\)  "
            rf"score: {n}/{n} correct \(100%\), wrong 0 \(0%\), declined 0, error 0"
            rf" · reach: {n}/{n} \(100%\)",
            summary[0],
        ), summary[0]
        heading = [line for line in out if line.startswith(f"{lens} (gate: block")]
        assert len(heading) == 1 and f"{n} stale (never_verified)" in heading[0]
    # an answer line each, a heading, a cases line and a summary per lens
    assert len(out) == total_answers + 3 * 2
    # progress: one line per answer as it starts; its steps only with --verbose
    assert done.stderr.count("self-testing ") == total_answers
    assert "executing oracle" not in done.stderr
    assert len(done.stderr.splitlines()) + len(out) <= 2 * total_answers + 40


def test_a_block_shows_each_failure_once_with_both_results_and_the_choices(
    promoted_repo: Path,
) -> None:
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    double_metric(promoted_repo, "units_sold")
    done = invoke(promoted_repo, "apply")
    assert done.code == 1, done.stdout + done.stderr
    out = done.stdout
    total = len(_answers(promoted_repo, "sales"))
    summary = [line for line in out.splitlines() if line.startswith("sales: ")]
    assert len(summary) == 1 and summary[0].startswith("sales: BLOCKED")
    assert f"score: {total - len(users)}/{total} correct" in summary[0]
    assert f"previous score: {total}/{total} correct (100%), wrong 0 (0%)" in summary[0]
    failed = [m for m in map(ANSWER_LINE.match, out.splitlines()) if m]
    assert {m["answer"] for m in failed} == users
    assert {(m["mark"], m["outcome"], m["attempts"]) for m in failed} == {("✗", "wrong", "2")}
    # both executed results, once each per failure; the row diff is not printed a second time
    assert out.count("oracle result:") == out.count("generated result:") == len(users)
    assert "missing rows (oracle only)" not in out
    for aid in users:
        assert f"dst certify --replace {aid} --lens sales" in out
        assert f"set `status: retired` in lenses/sales/answers/{aid}.yaml" in out
    assert out.count("fix the definition: edit lenses/sales/metrics/units_sold.yaml") == len(users)
    assert "finance: UNCHANGED" in out and "stale answers:" not in out

    verbose = invoke(promoted_repo, "apply", "--verbose")
    assert verbose.code == 1
    assert "previous score: " in verbose.stdout and "stale answers: " in verbose.stdout
    assert "modified  metrics/units_sold (metrics/units_sold.yaml)" in verbose.stdout
    assert "missing rows (oracle only)" in verbose.stdout
    assert verbose.stdout.count("oracle result:") == len(users)
    assert "executing oracle" in verbose.stderr  # every step on stderr again


def test_plan_is_one_line_per_stale_answer_and_explain_keeps_the_chain(
    promoted_repo: Path,
) -> None:
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    double_metric(promoted_repo, "units_sold")
    done = invoke(promoted_repo, "plan")
    assert done.code == 0, done.stderr
    stale = [line for line in done.stdout.splitlines() if line.startswith("  ~ ")]
    assert sorted(stale) == sorted(f"  ~ {aid}: asset_changed" for aid in users)
    assert "1 asset(s) modified (metrics/units_sold)" in done.stdout
    assert "finance (gate" not in done.stdout  # an unchanged lens: its summary line alone
    explained = invoke(promoted_repo, "plan", "--explain")
    assert explained.stdout.count("      - asset_changed: metrics/units_sold") == len(users)


@pytest.mark.parametrize(
    ("env", "coloured"),
    [
        ({"FORCE_COLOR": "1"}, True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": ""}, True),  # an empty NO_COLOR asks nothing
        ({}, False),  # piped
    ],
    ids=["forced-terminal", "no-color", "empty-no-color", "piped"],
)
def test_colour_on_a_terminal_only(
    promoted_repo: Path, env: dict[str, str], coloured: bool
) -> None:
    double_metric(promoted_repo, "units_sold")
    done = invoke(promoted_repo, "plan", env=env)
    assert done.code == 0, done.stderr
    assert (ESC in done.stdout) is coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    assert "sales: PLANNED" in plain and "  ~ " in plain
    json_out = invoke(promoted_repo, "plan", "--format", "json", env=env)
    assert ESC not in json_out.stdout  # JSON is never coloured


def test_the_clock_times_answers_per_thread_and_closes_a_batch() -> None:
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 3.0])
    clock = AnswerClock(lambda: next(ticks))
    clock.answer("sales: verifying a")  # t=0
    assert clock.line("sales/a: executing oracle") is True  # t=0.5, a step of a
    clock.answer("sales: verifying b")  # t=1.0 closes a

    def elsewhere() -> None:
        clock.answer("finance: self-testing c")  # t=1.25, another thread

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert clock.line("sales: case 'q' (expect answer)") is False  # t=2.0 closes b
    clock.done()  # t=3.0 closes c
    assert clock.seconds == {"sales/a": 1.0, "sales/b": 1.0, "finance/c": 1.75}


def test_json_gains_the_seconds_of_each_answer_and_nothing_else_changes(
    promoted_repo: Path,
) -> None:
    double_metric(promoted_repo, "units_sold")
    done = invoke(promoted_repo, "apply", "--format", "json")
    assert done.code == 1
    results = done.lens("sales")["results"]
    assert results and all(r["seconds"] >= 0 for r in results)
    assert all(set(r) - {"seconds", "notes", "transpiled"} == JSON_RESULT_KEYS for r in results)


JSON_RESULT_KEYS = {
    "answer",
    "outcome",
    "attempts",
    "detail",
    "flaky",
    "oracle_result",
    "generated_result",
    "trace",
}


def test_ci_check_text_is_the_compact_report(
    promoted_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    double_metric(promoted_repo, "units_sold")
    done = invoke(promoted_repo, "ci", "check", "--base", "HEAD~1")
    assert done.code == 1, done.stdout + done.stderr
    failed = [m for m in map(ANSWER_LINE.match, done.stdout.splitlines()) if m]
    assert sorted(m["answer"] for m in failed) == sorted(users)
    assert done.stdout.count("oracle result:") == len(users)
    assert [line for line in done.stdout.splitlines() if line.startswith("sales: ")] == [
        line for line in done.stdout.splitlines() if line.startswith("sales: BLOCKED")
    ]
    assert "executing oracle" not in done.stderr
    assert done.stderr.count("sales: verifying ") == len(users)
