"""Behavioural cases run beside the certified suite, in ``dst test`` and in the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.git import trees as gitstate
from reconciler.lens import load_lens
from tests.helpers import EXAMPLE_LENSES, PROJECT, commit, git, invoke


@pytest.mark.parametrize("name", ["sales", "finance"])
def test_example_lenses_cover_all_three_shapes(name: str) -> None:
    if not (EXAMPLE_LENSES / name / "lens.yaml").is_file():
        pytest.skip("example lenses are not present")
    lens = load_lens(name, gitstate.worktree_files(PROJECT, name))
    assert {c.expect for c in lens.cases} == {"clarify", "refuse", "answer"}


def test_dst_test_runs_every_case_and_passes(promoted_repo: Path) -> None:
    done = invoke(promoted_repo, "test", "--all", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    for name in ("sales", "finance"):
        cases = done.lens(name)["cases"]
        assert len(cases) == 7 and all(c["passed"] for c in cases), cases
        assert {c["got"] for c in cases} == {"clarify", "refuse", "answer"}


def regress(repo: Path, gate: str) -> None:
    """Make the sales lens refuse questions about categories (an answerable case)."""
    path = repo / "lenses" / "sales" / "lens.yaml"
    text = path.read_text().replace("eval_gate: block", f"eval_gate: {gate}")
    text = text.replace('exclusions: ["salary"', 'exclusions: ["category", "salary"')
    assert '"category"' in text
    commit(repo, {"lenses/sales/lens.yaml": text}, "sales: refuse category questions")


def test_a_lens_that_regresses_into_refusing_fails_dst_test(promoted_repo: Path) -> None:
    regress(promoted_repo, "warn")
    promoted = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    assert promoted.code == 0, promoted.stderr
    assert any("behavioural case" in m for m in promoted.lens("sales")["messages"])
    done = invoke(promoted_repo, "test", "sales", "--format", "json")
    assert done.code == 1
    failed = [c for c in done.lens("sales")["cases"] if not c["passed"]]
    assert [(c["question"], c["expect"], c["got"]) for c in failed] == [
        ("Net revenue by category in 2024", "answer", "refuse")
    ]
    text = invoke(promoted_repo, "test", "sales")
    assert text.code == 1 and "FAILED 'Net revenue by category in 2024'" in text.stdout


def test_the_gate_blocks_a_refusing_regression(promoted_repo: Path) -> None:
    before = git(promoted_repo, "rev-parse", "refs/dst/serving/sales")
    regress(promoted_repo, "block")
    blocked = invoke(promoted_repo, "apply", "--lens", "sales", "--format", "json")
    assert blocked.code == 1
    sales = blocked.lens("sales")
    assert sales["action"] == "blocked"
    assert any("behavioural case(s) failed" in m for m in sales["messages"])
    assert git(promoted_repo, "rev-parse", "refs/dst/serving/sales") == before
