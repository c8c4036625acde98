"""Whether this clone can say what serves: its remotes and what it has fetched.

Kept apart from :mod:`reconciler.git.sync` (which re-exports these), so that
``dst status``, which only asks, does not load what moves refs between remotes.
"""

from __future__ import annotations

import pygit2

DST = "refs/dst/"
TRACKING = "refs/dst-remote/"
UNKNOWN_STATE = "serving state unknown — run dst sync --fetch"


def remotes(repo: pygit2.Repository) -> list[str]:
    """Names of the configured remotes, sorted."""
    return sorted(str(name) for name in repo.remotes.names() if name)


def state_known(repo: pygit2.Repository) -> bool:
    """Whether this repository can say what serves.

    True when the repository has no remote (its own refs are the whole truth),
    any ``refs/dst/*`` or ``refs/dst-remote/*`` ref exists, or a fetch has been
    recorded (``dst.<remote>.lastfetch`` in git config). A fresh clone has
    none of these: ``dst status`` should then say :data:`UNKNOWN_STATE`, not
    "nothing serving".
    """
    if not remotes(repo):
        return True
    if any(name.startswith((DST, TRACKING)) for name in repo.references):
        return True
    return any(
        entry.name.startswith("dst.") and entry.name.endswith(".lastfetch") for entry in repo.config
    )
