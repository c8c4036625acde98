"""Two promoters racing on one lens: one promotes, the other refuses with "re-plan"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest

from reconciler import reconcile as apply_mod
from reconciler.context import Runtime
from reconciler.errors import RefConflict
from reconciler.git import refs as refstore
from tests.helpers import GIT_ENV, commit, dst, git


def _serving(repo: Path) -> str:
    return str(pygit2.Repository(str(repo)).references["refs/dst/serving/sales"].target)


def _edit(repo: Path) -> None:
    path = repo / "lenses/sales/skills/time.md"
    commit(
        repo,
        {str(path.relative_to(repo)): path.read_text() + "\nWeeks start on Monday.\n"},
        "edit a skill: every sales answer is stale",
    )


def test_loser_of_the_compare_and_swap_refuses_with_replan(
    promoted_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _serving(promoted_repo)
    _edit(promoted_repo)
    real_update = refstore.update_refs
    raced: dict[str, Any] = {}

    def racing_update(
        repo: pygit2.Repository, updates: Any, *, reason: str, env: str | None = None
    ) -> None:
        # Another process promotes the same candidate between our plan and our swap.
        if not raced:
            raced["other"] = dst(promoted_repo, "apply", "--lens", "sales")
        real_update(repo, updates, reason=reason, env=env)

    monkeypatch.setattr(refstore, "update_refs", racing_update)
    monkeypatch.chdir(promoted_repo)
    rt = Runtime(
        pygit2.Repository(str(promoted_repo)),
        progress=lambda _m: None,
        env={**os.environ, **GIT_ENV},
    )
    with pytest.raises(RefConflict) as info:
        apply_mod.reconcile(rt, only="sales")
    rt.close()
    assert raced["other"].code == 0, raced["other"].stderr
    assert "re-plan" in info.value.render()
    winner = _serving(promoted_repo)
    assert winner != base
    # the winner's update is not lost: it is what serves, and its parent is the base we all saw
    assert git(promoted_repo, "log", "-1", "--format=%P", winner).split()[0] == base


def test_two_processes_racing_never_lose_an_update(promoted_repo: Path) -> None:
    base = _serving(promoted_repo)
    _edit(promoted_repo)
    env = {**os.environ, **GIT_ENV, "HOME": str(promoted_repo)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "reconciler", "apply", "--lens", "sales"],
            cwd=promoted_repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    text = "\n".join(o + e for o, e in outs)
    promoted = text.count("sales: PROMOTED")
    replan = text.count("re-plan")
    unchanged = text.count("sales: UNCHANGED")
    # exactly one promotion; the other process either lost the swap or saw it done
    assert promoted == 1, text
    assert replan + unchanged == 1, text
    assert codes in ([0, 1], [0, 0]), text
    history = git(promoted_repo, "log", "--first-parent", "--format=%H", "refs/dst/serving/sales")
    assert history.splitlines()[1] == base
