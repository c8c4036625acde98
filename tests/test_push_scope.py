"""The push scope never takes a local-only branch as its base.

A push to a URL, or from a clone without ``refs/remotes/<remote>/*``, used to
compare against the local ``main``; a broken lens commit already on that local
``main`` then looked unchanged. These tests push for real, through the
installed hook, with the broken commit on the local ``main`` first.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from reconciler.git.push import PushedRef, scope_ref
from tests.helpers import git
from tests.helpers.push import (
    ZERO,
    PushPair,
    break_sales,
    copy_pair,
    touch_readme,
    with_hook,
)


@pytest.fixture
def pair(_push_template: tuple[Path, Path], tmp_path: Path) -> PushPair:
    """Origin and clone (lenses promoted) with dst's pre-push hook installed in the clone."""
    return with_hook(copy_pair(_push_template, tmp_path))


NOTE = "checking every lens the pushed commits touch"


def _broken_main_then_branch(clone: Path, branch: str) -> None:
    """A broken lens commit on the local main (never pushed), then a docs-only branch off it."""
    break_sales(clone)
    git(clone, "checkout", "-q", "-b", branch)
    touch_readme(clone)


def _drop_tracking_refs(clone: Path) -> None:
    refs = git(clone, "for-each-ref", "--format=%(refname)", "refs/remotes/")
    for ref in refs.split():
        git(clone, "update-ref", "-d", "--no-deref", ref)
    assert not git(clone, "for-each-ref", "refs/remotes/")


def test_a_url_push_of_a_branch_off_a_broken_local_main_is_rejected(pair: PushPair) -> None:
    url = str(pair.origin)
    _broken_main_then_branch(pair.clone, "feature")
    done = pair.push(url, "feature")
    assert done.code != 0
    assert f"no remote-tracking ref for {url}: {NOTE}" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert "push rejected" in done.stderr
    assert pair.remote("refs/heads/feature") is None


def test_a_url_push_of_a_good_branch_is_accepted(pair: PushPair) -> None:
    url = str(pair.origin)
    git(pair.clone, "checkout", "-q", "-b", "feature")
    new = touch_readme(pair.clone)
    done = pair.push(url, "feature")
    assert done.code == 0, done.stderr
    assert f"no remote-tracking ref for {url}: {NOTE}" in done.stderr
    assert "sales: UNCHANGED" in done.stderr and "finance: UNCHANGED" in done.stderr
    assert pair.remote("refs/heads/feature") == new


def test_a_clone_without_tracking_refs_rejects_a_branch_off_a_broken_main(
    pair: PushPair,
) -> None:
    _drop_tracking_refs(pair.clone)
    _broken_main_then_branch(pair.clone, "feature")
    done = pair.push("origin", "feature")
    assert done.code != 0
    assert f"no remote-tracking ref for origin: {NOTE}" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert pair.remote("refs/heads/feature") is None


def test_a_clone_without_tracking_refs_accepts_a_good_branch(pair: PushPair) -> None:
    _drop_tracking_refs(pair.clone)
    git(pair.clone, "checkout", "-q", "-b", "feature")
    new = touch_readme(pair.clone)
    done = pair.push("origin", "feature")
    assert done.code == 0, done.stderr
    assert f"no remote-tracking ref for origin: {NOTE}" in done.stderr
    assert pair.remote("refs/heads/feature") == new


def test_the_remote_oid_bounds_the_walk_when_the_remote_has_it(pair: PushPair) -> None:
    """A branch the remote has at a known commit is compared from there, not the root."""
    _drop_tracking_refs(pair.clone)
    known = git(pair.clone, "rev-parse", "HEAD")
    new = touch_readme(pair.clone)
    repo = pygit2.Repository(str(pair.clone))
    line = PushedRef("refs/heads/main", new, "refs/heads/main", known)
    check = scope_ref(repo, line, str(pair.origin))
    assert check.lenses == ()
    assert check.note == f"no lens changed (since {known[:12]})"
    fresh = PushedRef("refs/heads/main", new, "refs/heads/new", ZERO)
    check = scope_ref(repo, fresh, str(pair.origin))
    assert check.lenses == ("finance", "sales")
    assert NOTE in check.note
