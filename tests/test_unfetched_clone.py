"""A clone whose remote holds ``refs/dst/*`` it never fetched refuses to apply (DESIGN §3).

Real repositories: a promoted repository as the remote, ``git clone`` of it (which never
brings ``refs/dst/*``), the real CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import git, invoke


def _clone(origin: Path, where: Path) -> Path:
    git(where.parent, "clone", "-q", str(origin), str(where))
    return where


def test_an_unfetched_clone_refuses_to_apply_and_names_dst_sync_fetch(
    promoted_repo: Path, tmp_path: Path
) -> None:
    clone = _clone(promoted_repo, tmp_path / "clone")
    assert git(clone, "for-each-ref", "refs/dst/") == ""
    done = invoke(clone, "apply")
    assert done.code == 2, done.stdout + done.stderr
    assert "remote 'origin' holds serving state this clone never fetched" in done.stderr
    assert "dst sync --fetch" in done.stderr
    assert git(clone, "for-each-ref", "refs/dst/") == ""  # nothing promoted

    fetched = invoke(clone, "sync", "--fetch")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    again = invoke(clone, "apply", "--format", "json")
    assert again.code == 0, again.stdout + again.stderr
    assert {x["action"] for x in again.json()["lenses"]} == {"unchanged"}


def test_a_clone_of_a_remote_without_serving_state_applies(lens_repo: Path, tmp_path: Path) -> None:
    clone = _clone(lens_repo, tmp_path / "clone")
    done = invoke(clone, "apply", "--dry-run")
    assert "never fetched" not in done.stderr
    done = invoke(clone, "apply")
    assert "never fetched" not in done.stderr, done.stderr
    assert done.code in (0, 1), done.stdout + done.stderr  # gated (or stood down), not refused
