"""Lock files on dst's refs: tell a peer's brief lock from one a killed process left.

git and libgit2 update a ref by creating ``<ref>.lock`` next to it (and
``packed-refs.lock`` when the packed file changes), writing the new value there
and renaming it over the ref. A process killed in between leaves the ``.lock``
behind, and every later update of that ref fails until someone removes it. dst
holds such a lock for milliseconds, so a lock file that stays *the same file*
(inode and modification time unchanged) for the whole bounded wait is reported
as stale, with its age and the fix. It is never deleted automatically: dst
cannot know that no other process is writing it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2

from reconciler.errors import StaleLock

LOCK_WAIT_ENV = "DST_LOCK_WAIT_S"
DEFAULT_LOCK_WAIT_S = 2.0
_DST_REFS = "refs/dst"
_PACKED = "packed-refs.lock"


@dataclass(frozen=True)
class RefLock:
    """A lock file found under the git directory.

    Attributes:
        path: the lock file's absolute path.
        name: its path relative to the git directory (``refs/dst/serving/x.lock``).
        age_s: seconds since it was last modified.
    """

    path: str
    name: str
    age_s: float

    def describe(self) -> str:
        """One line for ``dst status``: the file, its age and the fix."""
        return (
            f"lock file {self.path} is {self.age_s:.0f} s old; if no dst or git process is "
            f"running in this repository, remove it"
        )


def lock_wait_s() -> float:
    """How long to wait out a lock held by another process (``DST_LOCK_WAIT_S``, seconds)."""
    raw = os.environ.get(LOCK_WAIT_ENV)
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_LOCK_WAIT_S
    except ValueError:
        return DEFAULT_LOCK_WAIT_S


def _identity(path: Path) -> tuple[int, int, float] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_mtime


def _candidates(repo: pygit2.Repository) -> list[Path]:
    gitdir = Path(repo.path)
    found = sorted((gitdir / _DST_REFS).rglob("*.lock")) if (gitdir / _DST_REFS).is_dir() else []
    return [*found, gitdir / _PACKED]


def ref_locks(repo: pygit2.Repository) -> list[RefLock]:
    """Lock files on ``refs/dst/`` and ``packed-refs.lock`` present now, oldest first.

    Reads the file system only; waits for nothing. ``dst status`` lists these.
    """
    gitdir = Path(repo.path)
    now = time.time()
    out = []
    for path in _candidates(repo):
        ident = _identity(path)
        if ident is not None:
            name = path.relative_to(gitdir).as_posix()
            out.append(RefLock(str(path), name, max(0.0, now - ident[2])))
    return sorted(out, key=lambda lock: -lock.age_s)


def wait_out(repo: pygit2.Repository, refs: Iterable[str] | None = None) -> None:
    """Wait (bounded by :func:`lock_wait_s`) until every present lock file goes away.

    Args:
        refs: full ref names whose locks matter (plus ``packed-refs.lock``);
            ``None`` for every lock under ``refs/dst/``.

    Raises:
        StaleLock: a lock file stayed the same file for the whole wait; the
            oldest such file is named with its age.
    """
    gitdir = Path(repo.path)
    paths = (
        _candidates(repo)
        if refs is None
        else [*(gitdir / f"{r}.lock" for r in refs), gitdir / _PACKED]
    )
    seen = {p: ident for p in paths if (ident := _identity(p)) is not None}
    deadline = time.monotonic() + lock_wait_s()
    delay = 0.005
    while seen:
        # A lock that vanished or was replaced belonged to a live writer.
        seen = {p: ident for p, ident in seen.items() if _identity(p) == ident}
        if not seen:
            return
        if time.monotonic() >= deadline:
            path, ident = min(seen.items(), key=lambda item: item[1][2])
            raise StaleLock(str(path), max(0.0, time.time() - ident[2]))
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
