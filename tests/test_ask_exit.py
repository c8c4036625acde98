"""``dst ask`` exit codes (DESIGN §6): 0 data served, 1 nothing served, 2 bad input.

Through the real command line (in-process, :func:`tests.helpers.invoke`) on a copy
of the example lenses with every lens promoted; the reasons are also checked on
responses built in-process. The smart-tier route blocked by a gate after its SQL
ran is in ``tests/test_ask.py``, beside the other smart-tier cases.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reconciler.ask import AskResponse
from reconciler.trust import Evaluation
from tests.helpers import Result, invoke

CERTIFIED_Q = "average order value by quarter in 2023"
GENERATED_Q = "How many orders were placed in 2024?"
REFUSED_Q = "What is the average employee salary?"
CLARIFY_Q = "How is sales performance by region?"
# The fast tier does not know these words; the lens has no smart tier: a decline.
DECLINED_Q = "What is the total revenue from customers whose names start with A?"
NOTHING = "dst ask: nothing served: "


@pytest.fixture(scope="module")
def served(_promoted_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example lenses, all promoted (``dst ask`` writes nothing, so tests share it)."""
    path = tmp_path_factory.mktemp("ask_exit") / "repo"
    shutil.copytree(_promoted_template, path, symlinks=True)
    return path


def ask(repo: Path, question: str, *extra: str, lens: str = "sales") -> Result:
    return invoke(repo, "ask", question, "--lens", lens, *extra)


@pytest.mark.parametrize(
    ("question", "route"),
    [(CERTIFIED_Q, "certified_answer"), (GENERATED_Q, "generated")],
    ids=["certified", "generated"],
)
def test_served_data_exits_0_with_nothing_on_stderr(
    served: Path, question: str, route: str
) -> None:
    text = ask(served, question)
    assert text.code == 0, text.stderr
    assert text.stdout.startswith(f"sales: route {route}, trust ")
    assert NOTHING not in text.stderr
    js = ask(served, question, "--format", "json")
    assert js.code == 0 and js.json()["route"] == route and js.json()["row_count"] > 0


@pytest.mark.parametrize(
    ("question", "route", "reason"),
    [
        (REFUSED_Q, "refuse", "refused: this lens does not answer questions about"),
        (CLARIFY_Q, "clarify", "clarification needed: Which measure do you mean by performance"),
        (DECLINED_Q, "generated", "declined: "),
    ],
    ids=["refuse", "clarify", "declined"],
)
def test_nothing_served_exits_1_with_a_one_line_reason(
    served: Path, question: str, route: str, reason: str
) -> None:
    text = ask(served, question)
    assert text.code == 1, text.stdout + text.stderr
    assert text.stdout.startswith(f"sales: route {route}, trust ")
    lines = [line for line in text.stderr.splitlines() if line.startswith(NOTHING)]
    assert len(lines) == 1 and lines[0].startswith(NOTHING + reason), text.stderr
    js = ask(served, question, "--format", "json")
    assert js.code == 1, js.stderr
    out = js.json()
    assert out["command"] == "ask" and out["route"] == route and out["rows"] == []
    # the same one line on stderr: a script reading the JSON also learns why (issue 22)
    js_lines = [line for line in js.stderr.splitlines() if line.startswith(NOTHING)]
    assert js_lines == lines, js.stderr


def test_declined_reason_carries_the_generators_words(served: Path) -> None:
    text = ask(served, DECLINED_Q)
    assert text.code == 1 and "unrecognised words" in text.stderr


def test_unknown_lens_exits_2_listing_the_lenses(served: Path) -> None:
    idle = served / "lenses" / "drafts"
    idle.mkdir()
    (idle / "lens.yaml").write_text("name: drafts\n")
    try:
        unknown = ask(served, GENERATED_Q, lens="nosuch")
        never = ask(served, GENERATED_Q, lens="drafts")
    finally:
        shutil.rmtree(idle)
    assert unknown.code == 2 and unknown.stdout == ""
    assert "no lens 'nosuch'" in unknown.stderr
    assert "serving: finance, sales" in unknown.stderr
    assert "exist but do not serve: drafts" in unknown.stderr
    assert never.code == 2
    assert "lens 'drafts' has no serving version" in never.stderr
    assert "serving: finance, sales" in never.stderr and "dst apply --lens drafts" in never.stderr


def test_unserved_reasons_in_process() -> None:
    failed = Evaluation("execution", False, "blocking", "Binder Error:\n column x not found")
    blocked = AskResponse("sales", "q", "generated", sql="SELECT x FROM orders")
    blocked.evaluations, blocked.trust_state = (failed,), "blocked"
    assert blocked.exit_code == 1
    assert blocked.unserved_reason() == "blocked by execution: Binder Error: column x not found"
    research = AskResponse("sales", "q", "research", message="no answer")
    assert research.exit_code == 1 and research.unserved_reason() == "declined: no answer"
