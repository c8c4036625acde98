"""Verifications: ``dst test`` and watch's schedule record under ``refs/dst/verify/<lens>``.

A verification never moves the serving ref, so a clone whose serving ref came from a
remote (CI promoted, the clone fetched) stays equal to it however often it verifies, and
``dst sync`` carries the verifications without conflict: two clones that verified the
same serving state both land in the remote's chain. Real temporary repositories, a real
bare origin, the real git executable and real DuckDB; crashes are real SIGKILLs
(``DST_CRASH_AT``, :mod:`reconciler.git.crash`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest

from reconciler.bindings import Bindings
from reconciler.context import Runtime
from reconciler.git import refs as refstore, verifications
from reconciler.git.push import _record_problem
from reconciler.git.sync import SyncAction, fetch as sync_fetch
from reconciler.state import DeploymentMeta, RunRecord
from reconciler.watch import scheduled_verify
from tests.helpers import command_env, commit, dst, git, invoke
from tests.helpers.sync import (
    Origin,
    first_parents,
    hermetic_git,
    ref_entry,
    ref_value,
    repository,
)

__all__ = ["hermetic_git"]  # autouse: every test here runs git hermetically

LENS = "sales"
SERVING = f"refs/dst/serving/{LENS}"
VERIFY = f"refs/dst/verify/{LENS}"


def _clone(origin: Origin, name: str) -> Path:
    """A clone of the origin with its warehouse seeded and its serving state fetched."""
    path = origin.clone(name)
    fetched = invoke(path, "sync", "--fetch")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    return path


@pytest.fixture
def origin(lens_repo: Path, tmp_path: Path) -> Origin:
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(lens_repo), str(bare))
    made = Origin(bare, tmp_path)
    ci = _clone(made, "ci")
    applied = invoke(ci, "apply", "--lens", LENS)
    assert applied.code == 0, applied.stdout + applied.stderr
    pushed = invoke(ci, "sync")
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    assert made.ref(SERVING) is not None
    return made


def _scheduled(path: Path) -> None:
    """What watch's schedule runs, in process: every serving lens re-verified."""
    rt = Runtime(pygit2.Repository(str(path)), env={}, progress=lambda _m: None)
    try:
        report = scheduled_verify(rt)
    finally:
        rt.close()
    assert report is not None and report.exit_code == 0, report and report.messages
    assert {r.plan.lens for r in report.lenses} == {LENS}


def test_a_scheduled_verification_keeps_the_serving_ref_the_remotes(origin: Origin) -> None:
    laptop = _clone(origin, "laptop")
    promoted = origin.ref(SERVING)
    assert ref_value(laptop, SERVING) == promoted
    for _ in range(3):
        _scheduled(laptop)
    assert ref_value(laptop, SERVING) == promoted, "a verification never moves the serving ref"
    assert len(first_parents(laptop, VERIFY)) == 4  # three verifications and the history root
    head = refstore.read_deployment(repository(laptop), ref_value(laptop, VERIFY) or "")
    assert head.info.action == "verify" and head.info.verified == promoted
    assert git(laptop, "rev-parse", f"{head.oid}^2") == promoted

    synced = invoke(laptop, "sync")
    assert synced.code == 0, synced.stdout + synced.stderr
    assert "diverged" not in synced.stdout
    assert ref_value(laptop, SERVING) == origin.ref(SERVING) == promoted
    assert origin.ref(VERIFY) == ref_value(laptop, VERIFY)

    # status and log say when it was last verified; the serving history stays the promote
    status = invoke(laptop, "status")
    assert "last verified" in status.stdout and f"verify/{LENS}" in status.stdout
    rows = invoke(laptop, "status", "--format", "json").json()["lenses"]
    row = next(r for r in rows if r["lens"] == LENS)
    assert row["last_verification"] == ref_value(laptop, VERIFY)
    assert row["last_verification_meta"]["verified"] == promoted
    log = invoke(laptop, "log", LENS, "--format", "json").json()
    assert [d["action"] for d in log["deployments"]] == ["promote"]
    assert [e["kind"] for e in log["history"]].count("verification") == 3

    # CI, which promoted, takes the verifications as a fast-forward
    ci = origin.base / "ci"
    again = invoke(ci, "sync")
    assert again.code == 0, again.stdout + again.stderr
    assert ref_value(ci, VERIFY) == origin.ref(VERIFY)
    assert ref_value(ci, SERVING) == promoted


def test_two_clones_that_verified_meanwhile_both_land_without_conflict(origin: Origin) -> None:
    a, b = _clone(origin, "a"), _clone(origin, "b")
    promoted = origin.ref(SERVING)
    assert invoke(a, "test", LENS).code == 0
    _next_second()
    assert invoke(b, "test", LENS).code == 0
    mine = ref_value(b, VERIFY)
    assert invoke(a, "sync").code == 0

    done = invoke(b, "sync", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    fetched = next(r for r in done.json()["refs"] if r["phase"] == "fetch" and r["ref"] == VERIFY)
    assert fetched["action"] == SyncAction.REBASED.value
    chain = first_parents(origin.bare, VERIFY)
    assert len(chain) == 3 and chain[1] == ref_value(a, VERIFY)  # a's first, then b's on top
    rebased = refstore.read_deployment(repository(origin.bare), chain[0])
    original = refstore.read_deployment(repository(b), mine or "")
    assert (rebased.lens_tree, rebased.bindings, rebased.info.recorded_at) == (
        original.lens_tree,
        original.bindings,
        original.info.recorded_at,
    )
    assert rebased.info.previous == chain[1] and rebased.info.verified == promoted
    for clone in (a, b):
        assert invoke(clone, "sync").code == 0
        assert ref_value(clone, SERVING) == origin.ref(SERVING) == promoted
        assert ref_value(clone, VERIFY) == origin.ref(VERIFY)


def test_a_push_rejected_on_a_verification_says_to_sync_again_and_sync_settles_it(
    origin: Origin,
) -> None:
    a, b = _clone(origin, "a"), _clone(origin, "b")
    assert invoke(a, "test", LENS).code == 0
    assert invoke(a, "sync").code == 0
    _next_second()
    assert invoke(b, "test", LENS).code == 0
    # b has not fetched a's verification: its push alone is rejected, and says what to do
    done = invoke(b, "sync", "--push")
    assert done.code == 1
    assert "another clone recorded a verification of lens sales" in done.stdout
    assert "fix: run `dst sync --remote origin` again" in done.stdout
    retried = invoke(b, "sync")
    assert retried.code == 0, retried.stdout + retried.stderr
    assert len(first_parents(origin.bare, VERIFY)) == 3
    assert ref_value(b, SERVING) == origin.ref(SERVING)


def test_two_verifications_in_one_clone_at_once_both_record(origin: Origin) -> None:
    laptop = _clone(origin, "laptop")
    promoted = ref_value(laptop, SERVING)
    env = command_env(laptop)
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "reconciler", "test", LENS],
            cwd=laptop,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in running]
    assert [p.returncode for p in running] == [0, 0], outs
    assert ref_value(laptop, SERVING) == promoted
    chain = verifications.chain(repository(laptop), ref_value(laptop, VERIFY) or "")
    assert len(chain) == 2 and all(v.info.verified == promoted for v in chain)
    assert invoke(laptop, "sync").code == 0


@pytest.mark.parametrize(
    "step", ["restamp-before", "deployment-written", "ref-locked", "refs-set", "restamp-after"]
)
def test_a_verification_killed_between_steps_leaves_the_refs_consistent(
    origin: Origin, step: str
) -> None:
    laptop = _clone(origin, "laptop")
    promoted = ref_value(laptop, SERVING)
    killed = dst(laptop, "test", LENS, env={"DST_CRASH_AT": step})
    assert killed.code == -9, killed.stdout + killed.stderr
    assert ref_value(laptop, SERVING) == promoted
    head = ref_value(laptop, VERIFY)
    landed = step in ("refs-set", "restamp-after")
    assert (head is not None) == landed
    if head is not None:
        assert refstore.read_deployment(repository(laptop), head).info.verified == promoted
    locks = list((laptop / ".git").rglob("*.lock"))
    if step == "ref-locked":  # dst never deletes a lock a killed process left; status names it
        assert locks == [laptop / ".git" / f"{VERIFY}.lock"]
        assert f"{VERIFY}.lock" in invoke(laptop, "status").stdout
        locks[0].unlink()  # what the warning tells the user to do once nothing runs
    else:
        assert locks == []
    git(laptop, "fsck", "--no-dangling", "--no-progress")
    assert dst(laptop, "test", LENS).code == 0
    assert len(first_parents(laptop, VERIFY)) == (3 if landed else 2)
    synced = invoke(laptop, "sync")
    assert synced.code == 0, synced.stdout + synced.stderr
    assert ref_value(laptop, SERVING) == origin.ref(SERVING) == promoted


def test_plan_and_apply_read_the_bindings_of_the_newest_verification(origin: Origin) -> None:
    laptop = _clone(origin, "laptop")
    repo = repository(laptop)
    serving = refstore.read_deployment(repo, ref_value(laptop, SERVING) or "")
    answer = sorted(serving.bindings.answers)[0]
    # a verification whose run saw this answer flake five times (only the stamp matters here)
    seen = replace(serving.bindings.answers[answer], flakes=5)
    stamps = Bindings({**serving.bindings.answers, answer: seen})
    meta = DeploymentMeta(action="verify", lens=LENS, source=serving.source)
    verifications.record(
        repo,
        serving,
        env=None,
        bindings=stamps,
        run=RunRecord(lens=LENS, source=serving.source),
        meta=meta,
        message=f"verify {LENS}",
        reason="test",
    )
    assert verifications.with_verified(repo, serving).bindings.answers[answer].flakes == 5
    assert ref_value(laptop, SERVING) == serving.oid
    # the next promotion carries the verification's stamp forward, not the deployment's
    path = f"lenses/{LENS}/skills/time.md"
    commit(laptop, {path: (laptop / path).read_text() + "\nWeeks start on Monday.\n"}, "skill")
    applied = invoke(laptop, "apply", "--lens", LENS)
    assert applied.code == 0, applied.stdout + applied.stderr
    promoted = refstore.read_deployment(repo, ref_value(laptop, SERVING) or "")
    assert promoted.oid != serving.oid
    assert promoted.bindings.answers[answer].flakes == 5


def test_gc_prunes_verifications_but_keeps_the_newest_of_the_serving_tree(
    origin: Origin,
) -> None:
    laptop = _clone(origin, "laptop")
    for _ in range(3):
        _next_second()
        assert invoke(laptop, "test", LENS).code == 0
    assert invoke(laptop, "sync").code == 0
    newest = refstore.read_deployment(repository(laptop), ref_value(laptop, VERIFY) or "")
    done = invoke(laptop, "gc", "--keep", "1")
    assert done.code == 0, done.stdout + done.stderr
    assert "kept 1 of 3 verifications" in done.stdout
    chain = verifications.chain(repository(laptop), ref_value(laptop, VERIFY) or "")
    assert len(chain) == 1
    assert (chain[0].info.recorded_at, chain[0].bindings) == (
        newest.info.recorded_at,
        newest.bindings,
    )
    # the pruned chain is this clone's business: sync neither conflicts nor overwrites
    synced = invoke(laptop, "sync")
    out = synced.stdout + synced.stderr
    assert synced.code == 0, out
    assert "pruned here by dst gc" in out and "diverged" not in out
    assert len(first_parents(origin.bare, VERIFY)) == 4
    # a later verification re-records on top of the remote's chain and is pushed
    _next_second()
    assert invoke(laptop, "test", LENS).code == 0
    again = invoke(laptop, "sync")
    assert again.code == 0, again.stdout + again.stderr
    assert len(first_parents(origin.bare, VERIFY)) == 5


def test_the_pre_push_check_takes_a_verification_and_refuses_it_elsewhere(
    origin: Origin,
) -> None:
    laptop = _clone(origin, "laptop")
    assert invoke(laptop, "test", LENS).code == 0
    oid = ref_value(laptop, VERIFY)
    assert oid is not None
    repo = repository(laptop)
    assert _record_problem(repo, VERIFY, oid) is None
    assert "which never serves" in str(_record_problem(repo, SERVING, oid))
    assert _record_problem(repo, f"refs/dst/attempts/{LENS}", oid) is not None
    # the fetch side takes an unknown remote's chain as a plain fetch
    fresh = _clone(origin, "fresh")
    assert ref_value(fresh, VERIFY) is None
    assert invoke(laptop, "sync").code == 0
    fetched = sync_fetch(repository(fresh))
    assert ref_entry(fetched, "fetch", VERIFY).action is SyncAction.FETCHED


def test_an_environment_keeps_its_own_verify_chain_and_sync_carries_it(
    lens_repo: Path, tmp_path: Path
) -> None:
    staging = "duckdb:///.dst/staging.duckdb"
    seeded = invoke(lens_repo, "seed", "--warehouse", f"duckdb:///{lens_repo}/.dst/staging.duckdb")
    assert seeded.code == 0, seeded.stderr
    commit(lens_repo, {"dst.yaml": f"environments:\n  staging:\n    warehouse: {staging}\n"}, "env")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(lens_repo), str(bare))
    git(lens_repo, "remote", "add", "origin", str(bare))
    applied = invoke(lens_repo, "apply", "--env", "staging", "--lens", LENS)
    assert applied.code == 0, applied.stdout + applied.stderr
    assert invoke(lens_repo, "sync").code == 0
    ref = f"refs/dst/env/staging/verify/{LENS}"
    served = ref_value(lens_repo, f"refs/dst/env/staging/serving/{LENS}")

    other = _clone(Origin(bare, tmp_path), "other")
    assert invoke(other, "seed", "--warehouse", f"duckdb:///{other}/.dst/staging.duckdb").code == 0
    for clone in (lens_repo, other):
        _next_second()
        tested = invoke(clone, "test", LENS, "--env", "staging")
        assert tested.code == 0, tested.stdout + tested.stderr
        assert ref_value(clone, f"refs/dst/env/staging/serving/{LENS}") == served
        assert ref_value(clone, VERIFY) is None  # the default environment's chain is its own
    assert invoke(lens_repo, "sync").code == 0
    done = invoke(other, "sync")
    assert done.code == 0, done.stdout + done.stderr
    assert "re-recorded on top of origin's" in done.stdout
    assert len(first_parents(bare, ref)) == 3
    assert ref_value(bare, f"refs/dst/env/staging/serving/{LENS}") == served


def _next_second() -> None:
    """Wait for the clock's next second: two clones that record the same verification
    in one second write the very same commit (same tree, parents and time), which is
    nothing to re-record; the tests want two different records."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)
