"""``dst evals migrate``: legacy value cases become certified answers a person vouches for."""

from __future__ import annotations

from pathlib import Path

import yaml

from reconciler.git import trees as gitstate
from reconciler.lens import load_lens
from tests.helpers import commit, git, invoke

LEGACY = """\
cases:
  - question: Net revenue in 2023
    sql: |
      SELECT SUM(quantity * unit_price - discount) AS net_revenue FROM orders
      WHERE status = 'completed' AND EXTRACT(year FROM order_date) = 2023
  - question: Who are our best customers?
    expect: clarify
    term: best
  - question: Number of orders in 2024
    expected_sql: SELECT COUNT(*) AS orders FROM orders WHERE EXTRACT(year FROM order_date) = 2024
"""


def with_legacy(repo: Path) -> Path:
    path = repo / "lenses" / "sales" / "evals" / "cases.yaml"
    path.write_text(LEGACY)
    return path


def test_legacy_cases_stop_the_lens_loading_with_the_migration_as_fix(lens_repo: Path) -> None:
    with_legacy(lens_repo)
    done = invoke(lens_repo, "validate", "lenses/sales")
    assert done.code == 2
    assert "lenses/sales/evals/cases.yaml:2" in done.stderr
    assert "dst evals migrate --lens sales" in done.stderr


def test_migrate_writes_answers_keeps_behavioural_cases_and_applies(lens_repo: Path) -> None:
    cases = with_legacy(lens_repo)
    dry = invoke(lens_repo, "evals", "migrate", "--lens", "sales", "--by", "Ada", "--dry-run")
    assert dry.code == 0, dry.stderr
    assert "would write lenses/sales/answers/net_revenue_in_2023.yaml" in dry.stdout
    assert cases.read_text() == LEGACY  # a dry run writes nothing
    done = invoke(
        lens_repo, "evals", "migrate", "--lens", "sales", "--by", " Ada ", "--format", "json"
    )
    assert done.code == 0, done.stderr
    assert done.json()["answer_files"] == [
        "lenses/sales/answers/net_revenue_in_2023.yaml",
        "lenses/sales/answers/number_of_orders_in_2024.yaml",
    ]
    lens = load_lens("sales", gitstate.worktree_files(lens_repo, "sales"))
    assert [c.question for c in lens.cases] == ["Who are our best customers?"]
    answer = lens.answers["net_revenue_in_2023"]
    assert answer.status == "active" and answer.provenance.certified_by == "Ada"
    assert answer.provenance.source == "dst evals migrate (evals/cases.yaml:2)"
    raw = yaml.safe_load(
        (lens_repo / "lenses/sales/answers/number_of_orders_in_2024.yaml").read_text()
    )
    assert raw["sql"].startswith("SELECT COUNT(*)")
    commit(lens_repo, {}, "migrate legacy value cases")
    applied = invoke(lens_repo, "apply", "--lens", "sales", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    self_test = {r["answer"]: r["outcome"] for r in applied.lens("sales")["self_test"]}
    assert set(self_test) >= {"net_revenue_in_2023", "number_of_orders_in_2024"}
    assert git(lens_repo, "rev-parse", "refs/dst/serving/sales")


def test_migrate_needs_a_person_and_something_to_migrate(lens_repo: Path) -> None:
    nothing = invoke(lens_repo, "evals", "migrate", "--lens", "sales", "--by", "Ada")
    assert nothing.code == 2 and "no legacy value case" in nothing.stderr
    cases = with_legacy(lens_repo)
    blank = invoke(lens_repo, "evals", "migrate", "--lens", "sales", "--by", "  ")
    assert blank.code == 2 and "only a named person certifies" in blank.stderr
    assert cases.read_text() == LEGACY
    assert not (lens_repo / "lenses/sales/answers/net_revenue_in_2023.yaml").exists()


def test_a_broken_legacy_entry_is_named_and_nothing_is_written(lens_repo: Path) -> None:
    path = lens_repo / "lenses" / "sales" / "evals" / "cases.yaml"
    path.write_text(
        "cases:\n  - question: fine\n    sql: SELECT 1\n  - question: ''\n    sql: SELECT 2\n"
    )
    done = invoke(lens_repo, "evals", "migrate", "--lens", "sales", "--by", "Ada")
    assert done.code == 2
    assert "evals/cases.yaml:4" in done.stderr and "needs both question" in done.stderr
    assert not (lens_repo / "lenses/sales/answers/fine.yaml").exists()
