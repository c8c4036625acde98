"""Whether this clone may apply: it holds the remote's serving state, or the remote has none.

``refs/dst/*`` is never cloned. A clone that never fetched it sees "nothing serves",
so an apply there would plan every answer as new (new answers only alert) and start a
second serving history beside the remote's. :func:`require_fetched` refuses that.

The cost, and when it is paid: nothing at all when the repository has no remote, has
recorded a fetch (``dst.<remote>.lastfetch``, written by ``dst sync --fetch``), holds
``refs/dst-remote/*``, or holds a ref in the namespace being applied. Only in a clone
with none of these (a fresh clone's first apply) is each remote asked once, with
``git ls-remote <remote> 'refs/dst/*'``: one round trip that lists refs and fetches no
objects (bounded by :data:`LS_REMOTE_S`). A remote that holds no ``refs/dst/*`` of the
namespace lets the apply go on, and that apply's own refs make the next one free.
"""

from __future__ import annotations

import os
import subprocess

import pygit2

from reconciler.errors import StateError
from reconciler.git import refs as refstore
from reconciler.git.sync import TRACKING, remotes

LS_REMOTE_S = 30.0
"""How long one ``git ls-remote`` may take, in seconds."""


def _fetched(repo: pygit2.Repository) -> bool:
    if any(name.startswith(TRACKING) for name in repo.references):
        return True
    return any(
        entry.name.startswith("dst.") and entry.name.endswith(".lastfetch") for entry in repo.config
    )


def _ours(name: str, env: str | None) -> bool:
    """``name`` (a full ref) is in ``env``'s namespace (the default one excludes ``env/``)."""
    space = refstore.namespace(env)
    return name.startswith(space) and (env is not None or not name.startswith("refs/dst/env/"))


def _listed(repo: pygit2.Repository, remote: str) -> list[str]:
    """The ``refs/dst/*`` names ``remote`` advertises.

    Raises:
        StateError: git cannot ask it (network, credentials, a missing executable).
    """
    cannot = f"cannot tell whether remote {remote!r} holds serving state this clone lacks"
    fix = "run `dst sync --fetch` when the remote is reachable, then apply again"
    try:
        done = subprocess.run(
            ["git", "ls-remote", "--refs", remote, "refs/dst/*"],
            cwd=str(repo.workdir or repo.path),
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LS_REMOTE_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StateError(f"{cannot} ({type(exc).__name__})", fix=fix) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise StateError(f"{cannot}: `git ls-remote {remote}` failed: {last}", fix=fix)
    return [line.split("\t", 1)[1] for line in done.stdout.splitlines() if "\t" in line]


def require_fetched(repo: pygit2.Repository, env: str | None = None) -> None:
    """Refuse to apply in ``env`` in a clone whose remote holds serving state it never fetched.

    Raises:
        StateError: a remote holds ``refs/dst/*`` of the namespace and this clone has
            never fetched them (the fix is ``dst sync --fetch``), or a remote cannot
            be asked (exit 2; nothing moved).
    """
    names = remotes(repo)
    if not names or _fetched(repo):
        return
    if any(_ours(name, env) for name in repo.references):
        return
    for remote in names:
        theirs = [name for name in _listed(repo, remote) if _ours(name, env)]
        if theirs:
            raise StateError(
                f"remote {remote!r} holds serving state this clone never fetched ({len(theirs)} "
                f"ref(s) such as {theirs[0]}): applying here would plan against nothing "
                "serving and start a second history",
                fix=f"run `dst sync --fetch --remote {remote}` first, then apply again",
            )
