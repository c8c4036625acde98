"""Repository edge cases: bare, linked worktrees, packed refs, foreign owner, detached, empty."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pygit2
import pytest

from tests.helpers import commit, dst, git, invoke

SHOP = {
    "lenses/shop/lens.yaml": "name: shop\n",
    "lenses/shop/models/orders.yaml": "name: orders\ntable: orders\n",
}
SERVING = "refs/dst/serving/shop"


def serving(path: Path) -> str | None:
    found = pygit2.Repository(str(path)).references.get(SERVING)
    return None if found is None else str(found.target)


def test_a_bare_repository_plans_and_applies(repo: Path, tmp_path: Path) -> None:
    head = commit(repo, SHOP, "lens")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    planned = invoke(bare, "plan", "--repo", str(bare), "--format", "json")
    assert planned.code == 0, planned.stderr
    assert planned.lens("shop")["candidate"] == head
    applied = invoke(bare, "apply", "--repo", str(bare), "--format", "json")
    assert applied.code == 0, applied.stderr
    assert serving(bare) == applied.lens("shop")["serving_after"] is not None
    status = invoke(bare, "status", "--repo", str(bare), "--format", "json")
    assert status.code == 0 and status.json()["lenses"][0]["serving"] == serving(bare)


def test_a_linked_worktree_shares_serving_state(repo: Path, tmp_path: Path) -> None:
    commit(repo, SHOP, "lens")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    changed = commit(worktree, {"lenses/shop/lens.yaml": "name: shop\ndescription: v2\n"}, "v2")
    applied = invoke(worktree, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    assert applied.lens("shop")["candidate"] == changed
    # One ref store: the main working tree sees what the linked one promoted.
    assert serving(repo) == applied.lens("shop")["serving_after"]
    status = invoke(repo, "status", "--format", "json")
    assert status.json()["lenses"][0]["serving_meta"]["source"] == changed


def test_packed_refs_are_read_and_compare_and_swapped(repo: Path) -> None:
    commit(repo, SHOP, "lens")
    assert invoke(repo, "apply").code == 0
    first = serving(repo)
    git(repo, "pack-refs", "--all")
    assert first is not None and f"{first} {SERVING}" in (repo / ".git/packed-refs").read_text()
    assert not (repo / ".git" / SERVING).exists()
    assert invoke(repo, "status", "--format", "json").json()["lenses"][0]["serving"] == first
    commit(repo, {"lenses/shop/lens.yaml": "name: shop\ndescription: v2\n"}, "v2")
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    second = applied.lens("shop")["serving_after"]
    assert second != first and git(repo, "rev-parse", SERVING) == second
    assert git(repo, "rev-parse", f"{SERVING}^1") == first


def test_detached_head_is_a_candidate_like_any_commit(repo: Path) -> None:
    commit(repo, SHOP, "lens")
    git(repo, "checkout", "-q", "--detach")
    detached = commit(repo, {"lenses/shop/lens.yaml": "name: shop\ndescription: d\n"}, "detached")
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    assert applied.lens("shop")["candidate"] == detached
    assert git(repo, "rev-parse", f"{SERVING}^2") == detached


def test_an_empty_repository_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    for command in (["plan"], ["apply"], ["apply", "--dry-run"]):
        done = invoke(empty, *command, "--format", "json")
        assert done.code == 2, (command, done.stdout, done.stderr)
        assert done.json()["error"]["type"] == "UsageError"
        assert "no commits yet" in done.stderr and "fix:" in done.stderr
    status = invoke(empty, "status")
    assert status.code == 0, status.stderr
    assert list(pygit2.Repository(str(empty)).references) == []


def test_not_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    done = invoke(tmp_path, "status", "--repo", str(tmp_path / "nowhere"))
    assert done.code == 2 and "nowhere: no such directory" in done.stderr  # it does not exist
    (tmp_path / "plain").mkdir()
    done = invoke(tmp_path, "status", "--repo", str(tmp_path / "plain"))
    assert done.code == 2 and "not inside a git repository" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_repository_owned_by_another_user_names_safe_directory(repo: Path) -> None:
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no 'nobody' user on this machine")
    commit(repo, SHOP, "lens")
    assert invoke(repo, "apply").code == 0
    before = serving(repo)
    subprocess.run(["chown", "-R", f"{nobody.pw_uid}", str(repo)], check=True)
    try:
        # git itself refuses the repository the same way.
        refused = subprocess.run(
            ["git", "status"], cwd=repo, env={**os.environ, "HOME": str(repo.parent)},
            capture_output=True, text=True,
        )  # fmt: skip
        assert refused.returncode != 0 and "dubious ownership" in refused.stderr
        for command in (["status"], ["plan"], ["apply"]):
            done = invoke(repo, *command, "--format", "json")
            assert done.code == 2, (command, done.stdout, done.stderr)
            error = done.json()["error"]
            assert "dubious ownership" in error["message"]
            assert (
                f"owned by nobody (uid {nobody.pw_uid}) and dst runs as uid 0" in (error["message"])
            )
            assert "so pygit2 (libgit2, which dst reads git with) refuses" in error["message"]
            assert f"git config --global --add safe.directory {repo}" in error["fix"]
        # where only the git command line refuses (it alone reads GIT_CONFIG_GLOBAL), the
        # message says so instead of "does not resolve"
        from reconciler.errors import UsageError
        from reconciler.git.base import subprocess_git

        saved = os.environ.get("GIT_CONFIG_GLOBAL")
        os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
        try:
            with pytest.raises(UsageError, match="so the git command line refuses to read it"):
                subprocess_git(repo)(["rev-parse", "HEAD"])
        finally:
            os.environ.pop("GIT_CONFIG_GLOBAL")
            if saved is not None:
                os.environ["GIT_CONFIG_GLOBAL"] = saved
        # dst never turns the owner check off on its own: only the user's vouching does.
        git(repo, "config", "--global", "--add", "safe.directory", str(repo))
        # libgit2 reads the global configuration once per process: a new one sees the vouching.
        trusted = dst(repo, "status", "--format", "json")
        assert trusted.code == 0, trusted.stderr
        assert trusted.json()["lenses"][0]["serving"] == before
    finally:
        subprocess.run(["chown", "-R", f"{os.geteuid()}", str(repo)], check=True)
    assert serving(repo) == before
