"""``dst sync``: sharing refs/dst/ through a real bare origin and real clones.

Two clones promote the same lens from different commits and push: exactly one
wins, the other is told to re-plan, and no update is ever lost.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.git import refs as refstore, sync
from reconciler.git.sync import SyncAction
from reconciler.history import status
from reconciler.ids import Oid
from tests.helpers import PROJECT, commit, git, invoke
from tests.helpers.sync import (
    Origin,
    first_parents,
    hermetic_git,
    ref_entry,
    ref_value,
    repository,
)

__all__ = ["hermetic_git"]  # autouse: every test here runs git hermetically

SALES = "refs/dst/serving/sales"
FINANCE = "refs/dst/serving/finance"
TRACKED_SALES = "refs/dst-remote/origin/serving/sales"


@functools.cache
def _sync_wired() -> bool:
    return invoke(PROJECT, "sync", "--help").code == 0


needs_cli = pytest.mark.skipif(
    not _sync_wired(), reason="`dst sync` is not registered in reconciler/cli/app.py yet"
)


@pytest.fixture
def origin(lens_repo: Path, tmp_path: Path) -> Origin:
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(lens_repo), str(bare))
    return Origin(bare, tmp_path)


def _promote(clone: Path, note: str, lens: str = "sales", skill: str = "time.md") -> str:
    """Commit an edit to one skill of ``lens``, apply it, return the new serving commit."""
    path = f"lenses/{lens}/skills/{skill}"
    commit(clone, {path: (clone / path).read_text() + f"\n{note}\n"}, note)
    done = invoke(clone, "apply", "--lens", lens)
    assert done.code == 0, done.stdout + done.stderr
    oid = ref_value(clone, f"refs/dst/serving/{lens}")
    assert oid is not None
    return oid


def test_two_promoters_push_exactly_one_wins_and_the_loser_re_plans(origin: Origin) -> None:
    a, b = origin.clone("a"), origin.clone("b")
    won_dep = _promote(a, "Weeks start on Monday.")
    lost_dep = _promote(b, "Revenue excludes tax.", skill="revenue.md")
    assert won_dep != lost_dep

    won = sync.push(repository(a))
    assert won.exit_code == 0
    assert ref_entry(won, "push", SALES).action is SyncAction.PUSHED
    lost = sync.push(repository(b))
    assert lost.exit_code == 1
    rejected = ref_entry(lost, "push", SALES)
    assert rejected.action is SyncAction.REJECTED
    assert "another promoter won lens sales" in rejected.message
    assert "re-plan" in rejected.message
    assert origin.ref(SALES) == won_dep
    assert ref_value(b, SALES) == lost_dep

    fetched = sync.fetch(repository(b))
    assert fetched.exit_code == 1
    diverged = ref_entry(fetched, "fetch", SALES)
    assert diverged.action is SyncAction.DIVERGED
    assert diverged.message.startswith(
        "diverged: local and remote both promoted lens sales — re-plan"
    )
    assert (diverged.old, diverged.new) == (lost_dep, won_dep)
    assert ref_value(b, SALES) == lost_dep, "a diverged local ref is never overwritten"
    assert ref_value(b, TRACKED_SALES) == won_dep

    # the suggested fix, taken literally, leads to a fast-forward push on top of the winner
    assert diverged.fix is not None
    take_remote = re.findall(r"`([^`]+)`", diverged.fix)[0].split()
    assert take_remote[:2] == ["git", "update-ref"]
    git(b, *take_remote[1:])
    merge = re.findall(r"`([^`]+)`", diverged.fix)[1].split()
    assert merge[:3] == ["git", "merge", "--no-edit"]
    git(b, *merge[1:])  # the winner's change is kept, not rewound
    replanned = invoke(b, "apply", "--lens", "sales")
    assert replanned.code == 0, replanned.stdout + replanned.stderr
    again = sync.push(repository(b))
    assert again.exit_code == 0
    assert ref_entry(again, "push", SALES).old == won_dep
    history = first_parents(origin.bare, SALES)
    assert history[:2] == [ref_value(b, SALES), won_dep], "the winner's deployment is never lost"
    assert lost_dep not in history


def test_fetch_creates_then_fast_forwards_through_a_separate_tracking_area(
    origin: Origin,
) -> None:
    a, b = origin.clone("a"), origin.clone("b")
    first = _promote(a, "Weeks start on Monday.")
    assert sync.push(repository(a)).exit_code == 0

    created = sync.fetch(repository(b))
    assert created.exit_code == 0
    entry = ref_entry(created, "fetch", SALES)
    assert (entry.action, entry.old, entry.new) == (SyncAction.FETCHED, None, first)
    assert ref_value(b, TRACKED_SALES) == first
    assert ref_value(b, SALES) == first

    second = _promote(a, "Quarters are calendar quarters.")
    pushed = ref_entry(sync.push(repository(a)), "push", SALES)
    assert (pushed.action, pushed.old, pushed.new) == (SyncAction.PUSHED, first, second)
    forwarded = ref_entry(sync.fetch(repository(b)), "fetch", SALES)
    assert (forwarded.action, forwarded.old, forwarded.new) == (
        SyncAction.FAST_FORWARDED,
        first,
        second,
    )
    assert ref_entry(sync.fetch(repository(b)), "fetch", SALES).action is SyncAction.UP_TO_DATE

    # a local deployment the remote lacks is left alone by fetch and sent by push; b first
    # merges what serves (a's commits are on no branch: the fetched deployment has them)
    git(
        b,
        "merge",
        "-q",
        "--no-edit",
        json.loads(git(b, "show", f"{second}:state/meta.json"))["source"],
    )
    third = _promote(b, "Years are calendar years.")
    assert ref_entry(sync.fetch(repository(b)), "fetch", SALES).action is SyncAction.AHEAD
    assert ref_value(b, SALES) == third
    both = sync.synchronize(repository(b))
    assert [(r.phase, r.action) for r in both.refs if r.ref == SALES] == [
        ("fetch", SyncAction.AHEAD),
        ("push", SyncAction.PUSHED),
    ]
    assert origin.ref(SALES) == third
    assert first_parents(origin.bare, SALES)[:3] == [third, second, first]


def test_a_fresh_clone_does_not_know_its_serving_state_until_it_fetches(
    origin: Origin, lens_repo: Path
) -> None:
    assert sync.state_known(repository(lens_repo)), "without a remote, local refs are the truth"
    empty = origin.clone("empty")
    assert not sync.state_known(repository(empty))
    nothing = sync.fetch(repository(empty))
    assert (nothing.exit_code, nothing.refs) == (0, ())
    assert sync.state_known(repository(empty)), "a fetch of an empty namespace is still a fetch"

    a = origin.clone("a")
    served = _promote(a, "Weeks start on Monday.")
    assert sync.push(repository(a)).exit_code == 0
    fresh = origin.clone("fresh")
    assert not sync.state_known(repository(fresh))
    sync.fetch(repository(fresh))
    assert sync.state_known(repository(fresh))
    rows = {r.lens: r for r in status(Runtime(repository(fresh), progress=lambda _m: None))}
    assert rows["sales"].serving == served
    assert rows["finance"].serving is None


def test_no_depth_and_no_force_is_ever_passed_even_from_a_shallow_clone(
    origin: Origin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = origin.clone("a")
    served = _promote(a, "Weeks start on Monday.")
    assert sync.push(repository(a)).exit_code == 0
    shallow = origin.clone("shallow", "--depth", "1", url=origin.bare.as_uri())
    assert repository(shallow).is_shallow
    trace = tmp_path / "git-trace.log"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    fetched = sync.fetch(repository(shallow))
    assert ref_entry(fetched, "fetch", SALES).action is SyncAction.FETCHED
    assert refstore.read_deployment(repository(shallow), Oid(served)).oid == served
    assert sync.push(repository(shallow)).exit_code == 0

    commands = [
        line.split("built-in: ", 1)[1]
        for line in trace.read_text().splitlines()
        if "built-in: git fetch" in line or "built-in: git push" in line
    ]
    assert any("refs/dst-remote/origin/*" in c for c in commands), commands
    assert any(c.startswith("git push") for c in commands), commands
    for c in commands:
        for option in ("--depth", "--deepen", "--unshallow", "--shallow", "--force", " -f "):
            assert option not in c, c
        if c.startswith("git push"):
            assert " +refs/" not in c and " '+refs/" not in c, c


def test_an_atomic_push_moves_every_lens_or_none(origin: Origin) -> None:
    a, b = origin.clone("a"), origin.clone("b")
    _promote(a, "Weeks start on Monday.")
    # b promotes before a pushes (an apply after would refuse: never fetched), then a wins
    _promote(b, "Fiscal weeks start on Sunday.")
    _promote(b, "Budgets are annual.", lens="finance", skill="finance.md")
    assert sync.push(repository(a)).exit_code == 0

    lost = sync.push(repository(b))
    assert lost.exit_code == 1
    assert {r.ref: r.action for r in lost.refs} == {
        FINANCE: SyncAction.REJECTED,
        SALES: SyncAction.REJECTED,
    }
    assert "atomic push" in ref_entry(lost, "push", FINANCE).message
    assert origin.ref(FINANCE) is None, "the loser's other lens did not slip through"


def test_sync_does_not_push_after_a_diverged_fetch(origin: Origin) -> None:
    a, b = origin.clone("a"), origin.clone("b")
    won = _promote(a, "Weeks start on Monday.")
    _promote(b, "Fiscal weeks start on Sunday.")  # racing a, before a's push lands
    assert sync.push(repository(a)).exit_code == 0

    report = sync.synchronize(repository(b))
    assert report.exit_code == 1
    assert {r.phase for r in report.refs} == {"fetch"}
    assert any("push skipped" in m for m in report.messages)
    assert origin.ref(SALES) == won

    record = json.loads(json.dumps(report.record()))
    assert (record["schema_version"], record["command"], record["remote"]) == (1, "sync", "origin")
    assert record["exit_code"] == 1
    assert {
        (r["phase"], r["kind"], r["lens"], r["action"]) for r in record["refs"] if r["ref"] == SALES
    } == {("fetch", "serving", "sales", "diverged")}


def test_nothing_to_push_is_not_an_error(origin: Origin) -> None:
    empty = origin.clone("empty")
    report = sync.push(repository(empty))
    assert (report.exit_code, report.refs) == (0, ())
    assert "nothing to push" in report.messages[0]


def test_an_unknown_remote_is_named_with_the_remotes_there_are(origin: Origin) -> None:
    a = origin.clone("a")
    for operation in (sync.fetch, sync.push, sync.synchronize):
        with pytest.raises(UsageError) as info:
            operation(repository(a), "upstream")
        assert "'upstream'" in info.value.message
        assert "remotes: origin" in info.value.message
        assert info.value.exit_code == 2


def test_an_unreachable_remote_is_a_usage_error_naming_it(origin: Origin, tmp_path: Path) -> None:
    a = origin.clone("a")
    git(a, "remote", "add", "gone", str(tmp_path / "no-such-origin.git"))
    with pytest.raises(UsageError) as info:
        sync.fetch(repository(a), "gone")
    assert "git fetch gone" in info.value.message
    assert not sync.state_known(repository(a))


PORCELAIN = (
    "To example.com:team/lenses.git\n"
    "=\trefs/dst/serving/finance:refs/dst/serving/finance\t[up to date]\n"
    " \trefs/dst/serving/sales:refs/dst/serving/sales\t1a2b3c4..5d6e7f8\n"
    "*\trefs/dst/attempts/sales:refs/dst/attempts/sales\t[new reference]\n"
    "!\trefs/dst/serving/ops:refs/dst/serving/ops\t[rejected] (non-fast-forward)\n"
    "!\trefs/dst/serving/hr:refs/dst/serving/hr\t[remote rejected] (hook declined)\n"
    "Done\n"
)


def test_push_porcelain_is_read_per_ref() -> None:
    lines = [(p.flag, p.dst, p.summary, p.reason) for p in sync.parse_porcelain(PORCELAIN)]
    assert lines == [
        ("=", "refs/dst/serving/finance", "[up to date]", None),
        (" ", "refs/dst/serving/sales", "1a2b3c4..5d6e7f8", None),
        ("*", "refs/dst/attempts/sales", "[new reference]", None),
        ("!", "refs/dst/serving/ops", "[rejected]", "non-fast-forward"),
        ("!", "refs/dst/serving/hr", "[remote rejected]", "hook declined"),
    ]


# The command line: written against the wiring in reconciler/cli/app.py; skipped until it is there.


@needs_cli
def test_cli_race_one_push_wins_the_other_is_told_to_re_plan(origin: Origin) -> None:
    a, b = origin.clone("a"), origin.clone("b")
    won = _promote(a, "Weeks start on Monday.")
    lost = _promote(b, "Fiscal weeks start on Sunday.")

    first = invoke(a, "sync", "--push")
    assert first.code == 0, first.stdout + first.stderr
    second = invoke(b, "sync", "--push")
    assert second.code == 1, second.stdout + second.stderr
    assert "rejected: another promoter won lens sales" in second.stdout
    assert "re-plan" in second.stdout
    assert origin.ref(SALES) == won

    fetched = invoke(b, "sync", "--fetch", "--format", "json")
    assert fetched.code == 1, fetched.stderr
    record = fetched.json()
    assert record["exit_code"] == 1
    [entry] = [r for r in record["refs"] if r["ref"] == SALES]
    assert (entry["action"], entry["old"], entry["new"]) == ("diverged", lost, won)
    assert "re-plan" in entry["message"]
    assert ref_value(b, SALES) == lost


@needs_cli
def test_cli_status_says_unknown_until_sync_fetch(origin: Origin) -> None:
    a = origin.clone("a")
    _promote(a, "Weeks start on Monday.")
    synced = invoke(a, "sync")
    assert synced.code == 0, synced.stdout + synced.stderr
    assert "lens sales: serving pushed to origin" in synced.stdout

    fresh = origin.clone("fresh")
    before = invoke(fresh, "status")
    assert before.code == 0, before.stderr
    assert "serving state unknown — run dst sync --fetch" in before.stdout
    assert "nothing serving" not in before.stdout
    fetched = invoke(fresh, "sync", "--fetch")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    after = invoke(fresh, "status")
    assert "sales: serving" in after.stdout
    assert "serving state unknown" not in after.stdout


@needs_cli
def test_cli_unknown_remote_exits_2_naming_it(origin: Origin) -> None:
    a = origin.clone("a")
    done = invoke(a, "sync", "--remote", "upstream")
    assert done.code == 2, done.stdout + done.stderr
    assert "'upstream'" in done.stderr
    assert "remotes: origin" in done.stderr


def test_gates_refuse_a_clone_that_never_fetched_serving_state(
    promoted_repo: Path, tmp_path: Path
) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(promoted_repo, "push", "-q", str(origin), "main", "refs/dst/*:refs/dst/*")
    clone = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    assert invoke(clone, "seed").code == 0
    git(clone, "checkout", "-q", "-b", "change")
    skill = clone / "lenses/sales/skills/time.md"
    commit(clone, {"lenses/sales/skills/time.md": skill.read_text() + "\nMore.\n"}, "edit")
    check = invoke(clone, "ci", "check", "--base", "main")
    assert check.code == 2, check.stdout + check.stderr
    assert "serving state unknown" in check.stderr and "dst sync --fetch" in check.stderr
    assert invoke(clone, "sync", "--fetch").code == 0
    again = invoke(clone, "ci", "check", "--base", "main")
    assert again.code == 0, again.stdout + again.stderr
