"""Scratch clones and throwaway commits, for trying edits without touching the user's repository.

``dst mutate`` clones the repository with ``git clone --shared --no-checkout``
(objects borrowed from the source, no work tree, no ``refs/dst``) and commits
each edit on no branch there, so neither the user's refs nor their working tree
ever change.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pygit2

from reconciler.errors import UsageError
from reconciler.ids import Oid


def scratch_clone(repo: pygit2.Repository, dest: Path) -> pygit2.Repository:
    """A ``--shared --no-checkout`` clone of ``repo`` at ``dest`` (no refs/dst, no worktree).

    The clone keeps no remote: it is a sandbox of its own, never one that has yet to
    fetch the serving state its origin holds (which an apply would refuse).

    Raises:
        UsageError: git is missing or the clone failed (its stderr in the message; exit 2).
    """
    source = repo.workdir or repo.path
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(
        ["git", "clone", "--quiet", "--shared", "--no-checkout", source, str(dest)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise UsageError(
            f"cannot make a scratch clone of the repository: {done.stderr.strip()}",
            fix="check that git is installed and the repository is readable",
        )
    clone = pygit2.Repository(str(dest))
    for name in [r.name for r in clone.remotes if r.name]:
        clone.remotes.delete(name)
    return clone


def commit_file(
    repo: pygit2.Repository, base: Oid, path: str, content: bytes, *, message: str
) -> Oid:
    """A commit (on no branch) whose tree is commit ``base``'s with ``path`` set to ``content``.

    Args:
        repo: the (scratch) repository to write objects into.
        base: the parent commit's oid.
        path: a repository-relative file path (``lenses/sales/metrics/x.yaml``).
        content: the file's new bytes.
        message: the commit message.

    Returns:
        The new commit's oid; no ref points at it.
    """

    def rebuild(tree: pygit2.Tree | None, parts: list[str]) -> pygit2.Oid:
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        head, rest = parts[0], parts[1:]
        if not rest:
            builder.insert(head, repo.create_blob(content), pygit2.GIT_FILEMODE_BLOB)
        else:
            sub = repo[tree[head].id] if tree is not None and head in tree else None
            child = sub if isinstance(sub, pygit2.Tree) else None
            builder.insert(head, rebuild(child, rest), pygit2.GIT_FILEMODE_TREE)
        return builder.write()

    parent = repo[base].peel(pygit2.Commit)
    tree = rebuild(parent.tree, path.split("/"))
    sig = pygit2.Signature("dst mutate", "dst@localhost", int(time.time()), 0)
    return Oid(str(repo.create_commit(None, sig, sig, message, tree, [parent.id])))
