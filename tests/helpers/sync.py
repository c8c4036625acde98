"""Serving-state sync tests: a hermetic git environment and readers of refs and history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest

from reconciler.git import refs as refstore, sync
from tests.helpers import GIT_ENV, git, invoke


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Autouse where imported: git sees only the test identity and a temporary HOME."""
    # sync runs the real git executable with this process's environment
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(tmp_path))


def repository(path: Path) -> pygit2.Repository:
    """The repository at ``path``."""
    return pygit2.Repository(str(path))


def ref_value(path: Path, name: str) -> str | None:
    """The oid ref ``name`` holds in the repository at ``path``, or ``None``."""
    return refstore.ref_target(repository(path), name)


def ref_entry(report: sync.SyncReport, phase: str, ref: str) -> sync.RefSync:
    """The line of ``report`` for ``ref`` in ``phase`` (``fetch`` or ``push``)."""
    return next(r for r in report.refs if r.phase == phase and r.ref == ref)


def first_parents(path: Path, ref: str) -> list[str]:
    """The first-parent history of ``ref``, newest first."""
    return git(path, "log", "--first-parent", "--format=%H", ref).splitlines()


@dataclass
class Origin:
    """A bare origin holding the example lenses, and a place for its clones."""

    bare: Path
    base: Path

    def clone(self, name: str, *options: str, url: str | None = None) -> Path:
        """``git clone`` the origin into ``name`` and seed its warehouse."""
        git(self.base, "clone", "-q", *options, url or str(self.bare), name)
        path = self.base / name
        seeded = invoke(path, "seed")
        assert seeded.code == 0, seeded.stderr
        return path

    def ref(self, name: str) -> str | None:
        """The origin's value of ``name``."""
        return ref_value(self.bare, name)
