"""``dst sync`` with retired lenses, through a real bare origin and real clones.

A retirement removes ``refs/dst/serving/<lens>``: push deletes the remote's
copy under a lease on the deployment it retired, and fetch neither brings a
retired serving ref back nor keeps serving a lens the remote retired. The
lenses are the small uncertified ones of ``tests/test_retire.py`` (they publish
with the gate skipped), which keeps these tests about refs and fast.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from reconciler.git import sync
from reconciler.git.sync import SyncAction
from tests.helpers import commit, git, invoke
from tests.helpers.bare_lenses import FINANCE as FINANCE_FILES, SALES as SALES_FILES
from tests.helpers.sync import first_parents, hermetic_git, ref_entry, ref_value, repository

__all__ = ["hermetic_git"]  # autouse: every test here runs git hermetically

SERVING = "refs/dst/serving/sales"
RETIRED = "refs/dst/retired/sales"
FINANCE = "refs/dst/serving/finance"
TRACKED_SERVING = "refs/dst-remote/origin/serving/sales"
TRACKED_RETIRED = "refs/dst-remote/origin/retired/sales"


@pytest.fixture
def origin(repo: Path, tmp_path: Path) -> Path:
    """A bare origin whose main branch holds two small lenses (nothing serving yet)."""
    commit(repo, {**SALES_FILES, **FINANCE_FILES}, "two lenses")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return bare


def _clone(origin: Path, name: str) -> Path:
    git(origin.parent, "clone", "-q", str(origin), name)
    return origin.parent / name


def _apply(clone: Path, *args: str) -> None:
    done = invoke(clone, "apply", *args)
    assert done.code == 0, done.stdout + done.stderr


def _serve_both(origin: Path) -> tuple[Path, str]:
    """Clone ``a`` applies both lenses and pushes; returns it and sales' deployment."""
    a = _clone(origin, "a")
    _apply(a)
    assert sync.push(repository(a)).exit_code == 0
    served = ref_value(origin, SERVING)
    assert served is not None and served == ref_value(a, SERVING)
    return a, served


def _retire(clone: Path) -> str:
    """Delete the sales lens in a commit and apply it; returns the retirement deployment."""
    commit(clone, {"lenses/sales": None}, "drop the sales lens")
    _apply(clone, "--lens", "sales")
    assert ref_value(clone, SERVING) is None
    retired = ref_value(clone, RETIRED)
    assert retired is not None
    return retired


def _revise(clone: Path, text: str, lens: str = "sales") -> str:
    """Commit a new description for ``lens`` and promote it; returns the new deployment."""
    commit(clone, {f"lenses/{lens}/lens.yaml": f"name: {lens}\ndescription: {text}\n"}, text)
    _apply(clone, "--lens", lens)
    served = ref_value(clone, f"refs/dst/serving/{lens}")
    assert served is not None
    return served


def _parent(path: Path, oid: str) -> str:
    return str(pygit2.Repository(str(path))[oid].peel(pygit2.Commit).parent_ids[0])


def test_the_apply_workflow_retires_a_deleted_lens_on_the_remote(origin: Path) -> None:
    a, served = _serve_both(origin)
    finance = ref_value(origin, FINANCE)

    # what .github/workflows/lens-apply.yml runs on the default branch
    runner = _clone(origin, "runner")
    assert invoke(runner, "sync", "--fetch").code == 0
    commit(runner, {"lenses/sales": None}, "drop the sales lens")
    applied = invoke(runner, "ci", "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    retired = ref_value(runner, RETIRED)
    assert retired is not None and _parent(runner, retired) == served
    pushed = invoke(runner, "sync", "--push", "--format", "json")
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    record = pushed.json()
    sales = {
        (r["kind"], r["action"], r["old"], r["new"]) for r in record["refs"] if r["lens"] == "sales"
    }
    assert sales == {("retired", "pushed", None, retired), ("serving", "retired", served, None)}
    assert ref_value(origin, SERVING) is None, "the remote no longer serves a retired lens"
    assert ref_value(origin, RETIRED) == retired
    assert ref_value(origin, FINANCE) == finance
    assert ref_value(runner, TRACKED_SERVING) is None
    assert ref_value(runner, TRACKED_RETIRED) == retired

    again = invoke(runner, "sync", "--push")
    assert again.code == 0, again.stdout + again.stderr
    assert "lens sales: retired up to date" in again.stdout
    assert "serving retired" not in again.stdout

    # the other promoter takes the retirement as a fast-forward
    fetched = invoke(a, "sync", "--fetch")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    assert f"lens sales: serving retired by {retired[:12]} from origin" in fetched.stdout
    assert "1 retired" in fetched.stdout
    assert (ref_value(a, SERVING), ref_value(a, RETIRED)) == (None, retired)
    status = invoke(a, "status")
    assert f"retired by {retired[:12]}" in status.stdout
    quiet = sync.fetch(repository(a))
    assert quiet.exit_code == 0
    assert ref_entry(quiet, "fetch", RETIRED).action is SyncAction.UP_TO_DATE
    assert all(r.ref != SERVING for r in quiet.refs)
    assert ref_value(a, SERVING) is None


def test_fetch_keeps_a_local_retirement_and_push_retires_a_lagging_remote(
    origin: Path,
) -> None:
    _, served = _serve_both(origin)
    b = _clone(origin, "b")
    assert sync.fetch(repository(b)).exit_code == 0
    unpushed = _revise(b, "v2")
    retired = _retire(b)
    assert _parent(b, retired) == unpushed

    fetched = sync.fetch(repository(b))
    assert fetched.exit_code == 0
    entry = ref_entry(fetched, "fetch", SERVING)
    assert (entry.action, entry.old, entry.new) == (SyncAction.AHEAD, served, None)
    assert "dst sync --push" in entry.message
    assert ref_value(b, SERVING) is None, "the remote's copy of a retired lens is not brought back"
    assert ref_value(b, TRACKED_SERVING) == served

    # origin still serves the deployment before the unpushed one: the retirement's
    # history holds it, so the lease expects it and the deletion goes through
    pushed = sync.push(repository(b))
    assert pushed.exit_code == 0, [r.message for r in pushed.refs]
    deletion = ref_entry(pushed, "push", SERVING)
    assert (deletion.action, deletion.old, deletion.new) == (SyncAction.RETIRED, served, None)
    assert ref_value(origin, SERVING) is None
    assert ref_value(origin, RETIRED) == retired
    assert first_parents(origin, RETIRED)[:3] == [retired, unpushed, served]


def test_a_lens_promoted_again_on_the_remote_is_not_retired_there(origin: Path) -> None:
    a, served = _serve_both(origin)
    finance = ref_value(origin, FINANCE)
    b = _clone(origin, "b")
    assert sync.fetch(repository(b)).exit_code == 0
    promoted = _revise(a, "promoted again")
    assert sync.push(repository(a)).exit_code == 0
    retired = _retire(b)
    assert _parent(b, retired) == served
    _revise(b, "budgets", lens="finance")

    refused = invoke(b, "sync", "--push", "--format", "json")
    assert refused.code == 1, refused.stdout + refused.stderr
    entries = {(r["ref"], r["action"]): r for r in refused.json()["refs"]}
    deletion = entries[(SERVING, "rejected")]
    assert "promoted again on origin" in deletion["message"]
    assert "re-plan" in deletion["message"]
    assert (deletion["old"], deletion["new"]) == (served, None)
    assert "atomic push" in entries[(FINANCE, "rejected")]["message"]
    assert ref_value(origin, SERVING) == promoted, "the lease kept the newer promotion serving"
    assert ref_value(origin, RETIRED) is None
    assert ref_value(origin, FINANCE) == finance, "the atomic push moved nothing"
    text = invoke(b, "sync", "--push")
    assert text.code == 1 and "rejected: lens sales was promoted again on origin" in text.stdout

    fetched = sync.fetch(repository(b))
    assert fetched.exit_code == 1
    diverged = ref_entry(fetched, "fetch", SERVING)
    assert diverged.action is SyncAction.DIVERGED
    assert diverged.message.startswith("diverged: lens sales was retired here")
    assert "re-plan" in diverged.message
    assert diverged.new == promoted
    assert ref_value(b, SERVING) is None and ref_value(b, RETIRED) == retired


def test_a_remote_retirement_does_not_remove_a_newer_local_promotion(origin: Path) -> None:
    a, served = _serve_both(origin)
    b = _clone(origin, "b")
    assert sync.fetch(repository(b)).exit_code == 0
    retired = _retire(a)
    assert sync.push(repository(a)).exit_code == 0
    newer = _revise(b, "newer here")

    fetched = sync.fetch(repository(b))
    assert fetched.exit_code == 1
    serving, record = ref_entry(fetched, "fetch", SERVING), ref_entry(fetched, "fetch", RETIRED)
    assert (serving.action, serving.old) == (SyncAction.DIVERGED, newer)
    assert serving.message.startswith("diverged: lens sales was retired on origin")
    assert record.action is SyncAction.DIVERGED
    assert (ref_value(b, SERVING), ref_value(b, RETIRED)) == (newer, None), "nothing moved"
    assert sync.synchronize(repository(b)).exit_code == 1
    assert ref_value(origin, SERVING) is None, "a diverged clone does not push"

    # the fix, taken literally, takes the retirement
    assert serving.fix is not None
    command = serving.fix.split("`")[1].split()
    assert command[:3] == ["git", "update-ref", "-d"]
    git(b, *command[1:])
    taken = sync.fetch(repository(b))
    assert taken.exit_code == 0
    assert (ref_value(b, SERVING), ref_value(b, RETIRED)) == (None, retired)
    assert _parent(b, retired) == served


def test_a_lens_retired_then_served_again_elsewhere_stays_served(origin: Path) -> None:
    a, served = _serve_both(origin)
    b, c = _clone(origin, "b"), _clone(origin, "c")
    assert sync.fetch(repository(b)).exit_code == 0
    retired = _retire(a)
    assert sync.push(repository(a)).exit_code == 0
    assert sync.fetch(repository(c)).exit_code == 0
    assert (ref_value(c, SERVING), ref_value(c, RETIRED)) == (None, retired)
    commit(a, dict(SALES_FILES), "sales is back")
    _apply(a, "--lens", "sales")
    back = ref_value(a, SERVING)
    assert back is not None
    assert sync.push(repository(a)).exit_code == 0
    assert ref_value(origin, SERVING) == back

    # c knew the retirement before the lens came back: its push deletes nothing
    stale = sync.push(repository(c))
    assert stale.exit_code == 0
    assert all(r.action is not SyncAction.RETIRED for r in stale.refs)
    assert ref_value(origin, SERVING) == back
    assert ref_entry(sync.fetch(repository(c)), "fetch", SERVING).action is SyncAction.FETCHED
    assert ref_value(c, SERVING) == back

    # b still serves what was retired: it moves on to what serves now
    moved = ref_entry(sync.fetch(repository(b)), "fetch", SERVING)
    assert (moved.action, moved.old, moved.new) == (SyncAction.FAST_FORWARDED, served, back)
    assert (ref_value(b, SERVING), ref_value(b, RETIRED)) == (back, retired)


def test_a_lens_retired_twice_pushes_both_retirements(origin: Path) -> None:
    a, _served = _serve_both(origin)
    first = _retire(a)
    assert sync.push(repository(a)).exit_code == 0
    commit(a, SALES_FILES, "bring the sales lens back")
    _apply(a, "--lens", "sales")
    back = ref_value(a, SERVING)
    assert back is not None and first_parents(a, back)[1] == first
    assert sync.push(repository(a)).exit_code == 0
    second = _retire(a)
    report = sync.push(repository(a))
    assert report.exit_code == 0
    assert ref_value(origin, RETIRED) == second and ref_value(origin, SERVING) is None
