"""The uncommitted-changes note: `git status` limited to `lenses/` (or the planned lens)."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from reconciler.git.trees import uncommitted_lens_paths
from tests.helpers import git, invoke


def _dirty(repo: Path) -> list[str]:
    """Edit, stage, delete and add files in and out of ``lenses/``; the lens paths touched."""
    skill = next((repo / "lenses" / "finance" / "skills").glob("*.md"))
    skill.write_text(skill.read_text() + "\nOne more line.\n")
    staged = next((repo / "lenses" / "sales" / "metrics").glob("*.yaml"))
    staged.write_text(staged.read_text() + "\n")
    git(repo, "add", staged.relative_to(repo).as_posix())
    gone = next((repo / "lenses" / "sales" / "exemplars").glob("*.yaml"))
    gone.unlink()
    nested = repo / "lenses" / "sales" / "answers" / "drafts" / "new answer.yaml"
    nested.parent.mkdir()
    nested.write_text("id: new\n")
    (repo / "README.md").write_text("outside the lenses\n")
    (repo / "lenses" / "sales" / ".dst").mkdir()
    return sorted(p.relative_to(repo).as_posix() for p in (skill, staged, gone, nested))


def test_every_kind_of_change_under_lenses_and_nothing_else(lens_repo: Path) -> None:
    expected = _dirty(lens_repo)
    repo = pygit2.Repository(str(lens_repo))
    assert uncommitted_lens_paths(repo) == expected
    # the same set libgit2's full status walk reports
    walked = sorted(
        p
        for p, flags in repo.status(untracked_files="all").items()
        if p.startswith("lenses/") and flags != pygit2.GIT_STATUS_CURRENT
    )
    assert walked == expected


def test_limited_to_the_lenses_asked_for(lens_repo: Path) -> None:
    expected = _dirty(lens_repo)
    repo = pygit2.Repository(str(lens_repo))
    assert uncommitted_lens_paths(repo, ["finance"]) == [
        p for p in expected if p.startswith("lenses/finance/")
    ]
    assert uncommitted_lens_paths(repo, []) == []


def test_plan_of_one_lens_notes_only_its_own_changes(lens_repo: Path) -> None:
    _dirty(lens_repo)
    finance = invoke(lens_repo, "plan", "--lens", "finance", "--format", "json")
    notes = [m for m in finance.json()["messages"] if "uncommitted" in m]
    assert len(notes) == 1 and "1 uncommitted change(s)" in notes[0], notes
    everything = invoke(lens_repo, "plan", "--format", "json")
    notes = [m for m in everything.json()["messages"] if "uncommitted" in m]
    assert len(notes) == 1 and "4 uncommitted change(s)" in notes[0], notes


def test_without_a_git_command_the_walk_gives_the_same_paths(
    lens_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _dirty(lens_repo)
    repo = pygit2.Repository(str(lens_repo))
    monkeypatch.setenv("PATH", str(lens_repo / "no-such-bin"))
    assert uncommitted_lens_paths(repo) == expected
    assert uncommitted_lens_paths(repo, ["finance"]) == [
        p for p in expected if p.startswith("lenses/finance/")
    ]
