"""Reading lenses out of git (pygit2) and out of the working tree.

Lens trees are compared by tree id first: an unchanged lens subtree has the same
oid at serving and candidate and is never opened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from reconciler.errors import LensLoadError, UsageError
from reconciler.lens import LENS_NAME_RE, Lens, Oid, load_lens

LENSES_DIR = "lenses"


@dataclass(frozen=True)
class LensTree:
    """A lens directory at one commit: its name and tree id."""

    name: str
    tree: Oid


def open_repo(path: str | os.PathLike[str] | None) -> pygit2.Repository:
    """Open the repository containing ``path`` (default: the current directory).

    Raises:
        UsageError: no git repository there.
    """
    start = os.fspath(path or ".")
    found = pygit2.discover_repository(start)
    if found is None:
        raise UsageError(
            f"{start}: not inside a git repository",
            fix="run dst inside a git repository or pass --repo PATH",
        )
    return pygit2.Repository(found)


def repo_root(repo: pygit2.Repository) -> Path:
    """The working tree root (the git dir's parent for a bare repository)."""
    return Path(repo.workdir or Path(repo.path).parent).resolve()


def resolve_commit(repo: pygit2.Repository, rev: str) -> Oid:
    """Resolve a revision (branch, tag, oid prefix, ``HEAD~2``) to a commit oid, peeling tags.

    Raises:
        UsageError: the revision does not name a commit.
    """
    if rev == "HEAD" and repo.head_is_unborn:
        raise UsageError(
            "the repository has no commits yet",
            fix="commit your lenses first (git add lenses && git commit)",
        )
    try:
        obj = repo.revparse_single(rev)
        commit = obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise UsageError(
            f"revision {rev!r} does not resolve to a commit",
            fix="pass a branch, tag or commit id to --to",
        ) from None
    return Oid(str(commit.id))


def lens_trees(repo: pygit2.Repository, commit: Oid) -> dict[str, LensTree]:
    """Lens directories under ``lenses/`` at ``commit``, by name."""
    tree = repo[commit].peel(pygit2.Tree)
    if LENSES_DIR not in tree:
        return {}
    lenses_tree = repo[tree[LENSES_DIR].id]
    if not isinstance(lenses_tree, pygit2.Tree):
        return {}
    return {
        str(entry.name): LensTree(str(entry.name), Oid(str(entry.id)))
        for entry in lenses_tree
        if entry.type_str == "tree"
    }


def uncommitted_lens_paths(repo: pygit2.Repository) -> list[str]:
    """Paths under ``lenses/`` that differ from HEAD in the index or working tree, sorted."""
    if repo.is_bare or repo.head_is_unborn:
        return []
    status = repo.status(untracked_files="all", ignored=False)
    return sorted(
        p
        for p, flags in status.items()
        if p.startswith(LENSES_DIR + "/") and flags != pygit2.GIT_STATUS_CURRENT
    )


def tree_files(repo: pygit2.Repository, tree_oid: Oid) -> dict[str, bytes]:
    """Every blob under a tree as ``{posix relative path: bytes}``."""
    out: dict[str, bytes] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", repo[tree_oid].peel(pygit2.Tree))]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            path = f"{prefix}{entry.name}"
            obj = repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                stack.append((path + "/", obj))
            elif isinstance(obj, pygit2.Blob) and entry.filemode != pygit2.GIT_FILEMODE_LINK:
                out[path] = obj.data
    return out


def load_lens_at(repo: pygit2.Repository, lens_tree: LensTree) -> Lens:
    """Load a lens from a tree in the object database."""
    return load_lens(lens_tree.name, tree_files(repo, lens_tree.tree))


def worktree_lens_names(root: Path) -> list[str]:
    """Lens directory names in the working tree (those that hold a ``lens.yaml``)."""
    base = root / LENSES_DIR
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "lens.yaml").is_file())


def worktree_files(root: Path, name: str) -> dict[str, bytes]:
    """A lens directory in the working tree as ``{posix relative path: bytes}``.

    Raises:
        LensLoadError: the lens name is not a valid ref component.
    """
    if not LENS_NAME_RE.match(name):
        raise LensLoadError(
            f"{LENSES_DIR}/{name}",
            "not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_'",
        )
    base = root / LENSES_DIR / name
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fname in sorted(filenames):
            full = Path(dirpath) / fname
            if full.is_symlink():
                continue
            out[full.relative_to(base).as_posix()] = full.read_bytes()
    return out
