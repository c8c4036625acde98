"""A serving ref proves its gate (DESIGN §3): every serving read refuses a ref that does not
point at a deployment whose recorded gate passed, or at a rollback (or verify) of one.

Real repositories: the example lenses promoted with the real CLI; the forged refs are
set with the git CLI, as a person would set them by hand.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from reconciler.git import serving as proven
from tests.helpers import commit, git, invoke
from tests.helpers.examples import double_metric, serving

QUESTION = "What is the average order value for the Enterprise segment?"
REF = "refs/dst/serving/sales"


def _blocked_attempt(repo: Path) -> str:
    double_metric(repo, "units_sold")
    blocked = invoke(repo, "apply")
    assert blocked.code == 1, blocked.stdout + blocked.stderr
    return git(repo, "rev-parse", "refs/dst/attempts/sales")


def test_a_serving_ref_pointed_at_a_blocked_attempt_is_refused_by_every_serving_read(
    promoted_repo: Path,
) -> None:
    good = serving(promoted_repo, "sales")
    assert good is not None
    assert invoke(promoted_repo, "ask", QUESTION, "--lens", "sales").code == 0
    attempt = _blocked_attempt(promoted_repo)
    git(promoted_repo, "update-ref", REF, attempt)

    for args in (
        ("ask", QUESTION, "--lens", "sales"),
        ("status",),
        ("test", "sales"),
        ("apply",),
        ("plan",),
    ):
        done = invoke(promoted_repo, *args)
        assert done.code == 2, (args, done.stdout, done.stderr)
        assert f"{REF} points at {attempt[:12]}, a blocked attempt" in done.stderr, done.stderr
        # the reflog remembers what served before the hand edit: the fix names it
        assert f"git update-ref {REF} {good} {attempt}" in done.stderr, done.stderr
    assert serving(promoted_repo, "sales") == attempt  # nothing moved it

    git(promoted_repo, "update-ref", REF, good, attempt)  # the printed fix
    assert invoke(promoted_repo, "ask", QUESTION, "--lens", "sales").code == 0


def test_a_branch_commit_at_a_serving_ref_is_not_a_deployment_record(promoted_repo: Path) -> None:
    head = git(promoted_repo, "rev-parse", "HEAD")
    git(promoted_repo, "update-ref", REF, head)
    done = invoke(promoted_repo, "ask", QUESTION, "--lens", "sales", "--format", "json")
    assert done.code == 2
    assert f"{REF} points at {head[:12]}, which is not a dst deployment record" in done.stderr
    assert done.json()["error"]["type"] == "ServingRefError" and "rows" not in done.stdout


def test_a_record_of_another_lens_is_refused(promoted_repo: Path) -> None:
    finance = serving(promoted_repo, "finance")
    assert finance is not None
    git(promoted_repo, "update-ref", REF, finance)
    done = invoke(promoted_repo, "ask", QUESTION, "--lens", "sales")
    assert done.code == 2
    assert "a record of lens 'finance', not of 'sales'" in done.stderr, done.stderr


def test_verify_and_rollback_records_prove_their_gate_through_what_they_follow(
    promoted_repo: Path,
) -> None:
    first = serving(promoted_repo, "sales")
    metric = promoted_repo / "lenses/sales/metrics/units_sold.yaml"
    commit(promoted_repo, {str(metric.relative_to(promoted_repo)): metric.read_text() + "#\n"}, "c")
    assert invoke(promoted_repo, "apply").code == 0
    tested = invoke(promoted_repo, "test", "sales")
    assert tested.code == 0, tested.stdout + tested.stderr
    verified = git(promoted_repo, "rev-parse", "refs/dst/verify/sales")
    assert git(promoted_repo, "show", "-s", "--format=%s", verified).startswith("verify")
    assert invoke(promoted_repo, "ask", QUESTION, "--lens", "sales").code == 0
    # a verification proves nothing as a serving ref: it belongs on refs/dst/verify/
    repo = pygit2.Repository(str(promoted_repo))
    assert "which never serves" in str(proven.why_not(repo, "sales", proven.Oid(verified)))

    rolled = invoke(promoted_repo, "rollback", "sales", "--to", str(first))
    assert rolled.code == 0, rolled.stdout + rolled.stderr
    assert invoke(promoted_repo, "ask", QUESTION, "--lens", "sales").code == 0
    assert invoke(promoted_repo, "status").code == 0

    rollback = serving(promoted_repo, "sales")
    assert rollback is not None
    assert proven.why_not(repo, "sales", proven.Oid(rollback)) is None
    # a rollback "to" a blocked attempt proves nothing, however it is spelled
    attempt = _blocked_attempt(promoted_repo)
    assert "blocked attempt" in str(proven.why_not(repo, "sales", proven.Oid(attempt)))


def test_serving_ref_updates_are_in_the_reflog(promoted_repo: Path) -> None:
    first = serving(promoted_repo, "sales")
    metric = promoted_repo / "lenses/sales/metrics/units_sold.yaml"
    commit(promoted_repo, {str(metric.relative_to(promoted_repo)): metric.read_text() + "#\n"}, "c")
    assert invoke(promoted_repo, "apply").code == 0
    head = git(promoted_repo, "rev-parse", "HEAD")
    log = git(promoted_repo, "reflog", "show", "--format=%H %gs", REF).splitlines()
    assert log == [
        f"{serving(promoted_repo, 'sales')} dst apply {head[:12]}",
        f"{first} dst apply {git(promoted_repo, 'rev-parse', 'HEAD~1')[:12]}",
    ]
    _blocked_attempt(promoted_repo)
    attempts = git(promoted_repo, "reflog", "show", "--format=%gs", "refs/dst/attempts/sales")
    assert attempts.startswith("dst apply") and "(blocked)" in attempts
