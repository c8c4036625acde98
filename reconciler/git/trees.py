"""Reading lenses out of git (pygit2) and out of the working tree.

Lens trees are compared by tree id first: an unchanged lens subtree has the same
oid at serving and candidate and is never opened.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from reconciler import files as repofiles
from reconciler.errors import LensLoadError, UsageError
from reconciler.git import checked as checkmarks
from reconciler.ids import LENS_NAME_RE, Oid

if TYPE_CHECKING:
    # the lens model loads with the first lens: `dst status` reads refs, not lenses
    from reconciler.lens import Lens

LENSES_DIR = "lenses"


@dataclass(frozen=True)
class LensTree:
    """A lens directory at one commit: its name and tree id."""

    name: str
    tree: Oid


def open_repo(path: str | os.PathLike[str] | None) -> pygit2.Repository:
    """Open the repository containing ``path`` (default: the current directory).

    Git's owner check stays on: a repository owned by another user is refused,
    as git itself refuses it, and the message names the ``safe.directory``
    setting that lets the user vouch for it (git-config(1), "safe.directory").

    Raises:
        UsageError: ``path`` does not exist, no git repository there, or one owned by
            another user.
    """
    start = os.fspath(path or ".")
    if not os.path.exists(start):
        raise UsageError(
            f"{start}: no such directory",
            fix="pass --repo the path of an existing repository (or a folder inside one)",
        )
    found = pygit2.discover_repository(start)
    if found is None:
        raise UsageError(
            f"{start}: not inside a git repository",
            fix="run dst inside a git repository or pass --repo PATH",
        )
    try:
        return pygit2.Repository(found)
    except pygit2.GitError as exc:
        if "not owned by current user" not in str(exc):
            raise UsageError(
                f"{found}: git cannot open this repository ({exc})",
                fix="check the path and that the repository is not damaged (git fsck)",
            ) from None
        raise ownership_refusal(found, "pygit2 (libgit2, which dst reads git with)") from None


def _owner(path: str) -> str:
    """``name (uid N)`` of the owner of ``path`` (``uid N`` when the name is unknown)."""
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "an unknown user"
    try:
        import pwd  # POSIX only; elsewhere the uid alone is named

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def ownership_refusal(path: str, side: str) -> UsageError:
    """The error for a repository refused for its owner (git-config(1), "safe.directory").

    Args:
        path: the repository's git directory or working tree.
        side: which side refused: ``pygit2 (…)`` or ``the git command line``.

    Returns:
        A usage error naming the path, its owner, the current uid, the side and the fix.
    """
    trusted = path.rstrip("/")
    if trusted.endswith("/.git"):
        trusted = trusted[: -len("/.git")]
    me = os.geteuid() if hasattr(os, "geteuid") else "unknown"
    return UsageError(
        f"{trusted}: detected dubious ownership: it is owned by {_owner(trusted)} and dst runs "
        f"as uid {me}, so {side} refuses to read it",
        fix=f"if you trust it, run `git config --global --add safe.directory {trusted}` "
        f"(or run dst as the repository's owner)",
    )


def repo_root(repo: pygit2.Repository) -> Path:
    """The working tree root (the git dir's parent for a bare repository)."""
    return Path(repo.workdir or Path(repo.path).parent).resolve()


def checked_dir(repo: pygit2.Repository) -> Path | None:
    """Where loads leave their :mod:`reconciler.git.checked` markers: ``.dst/checked/``
    of the work tree; ``None`` for a bare repository (no markers)."""
    return None if repo.is_bare else repo_root(repo) / ".dst" / "checked"


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


def uncommitted_lens_paths(
    repo: pygit2.Repository, lenses: Collection[str] | None = None
) -> list[str]:
    """Paths under ``lenses/`` that differ from HEAD in the index or working tree, sorted.

    Asks ``git status`` limited to the pathspec ``lenses/`` (or ``lenses/<name>/``
    for each of ``lenses``), so only those files are compared with the index;
    libgit2's status has no pathspec and would stat every file of the working
    tree. Without a usable git CLI it falls back to that full walk.

    Args:
        repo: the repository (bare or unborn: no paths).
        lenses: lens names to look at; ``None`` for all of ``lenses/``.
    """
    if repo.is_bare or repo.head_is_unborn:
        return []
    specs = [f"{LENSES_DIR}/"] if lenses is None else [f"{LENSES_DIR}/{n}/" for n in lenses]
    if not specs:
        return []
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]
    try:
        root = repo_root(repo)
        # --no-optional-locks: a status that refreshes the index would take index.lock,
        # and a dst killed meanwhile would leave it for the user's next git command.
        where = [
            "--no-optional-locks",
            f"--git-dir={repo.path}",
            f"--work-tree={root}",
            "--literal-pathspecs",
        ]
        done = subprocess.run(
            ["git", *where, *args, "--", *specs], cwd=root, capture_output=True, check=False
        )
    except OSError:
        done = None
    if done is None or done.returncode != 0:
        status = repo.status(untracked_files="all", ignored=False)
        return sorted(
            p
            for p, flags in status.items()
            if p.startswith(tuple(specs)) and flags != pygit2.GIT_STATUS_CURRENT
        )
    # each entry is "XY <path>\0" (git-status(1), "Porcelain Format Version 1")
    entries = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted(e[3:] for e in entries if len(e) > 3 and e[3:].startswith(tuple(specs)))


def tree_files(
    repo: pygit2.Repository, tree_oid: Oid, *, lens_root: str | None = None
) -> dict[str, bytes]:
    """Every blob under a tree as ``{posix relative path: bytes}``.

    Symlinks are skipped, unless ``lens_root`` (the tree's repository-relative
    path, for messages) is given: then a symlink is a load error.

    Raises:
        LensLoadError: with ``lens_root``, a symlink under the tree.
    """
    out: dict[str, bytes] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", repo[tree_oid].peel(pygit2.Tree))]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            path = f"{prefix}{entry.name}"
            obj = repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                stack.append((path + "/", obj))
            elif isinstance(obj, pygit2.Blob) and entry.filemode == pygit2.GIT_FILEMODE_LINK:
                if lens_root is not None:
                    target = bytes(obj.data).decode("utf-8", "replace")
                    raise symlink_error(f"{lens_root}/{path}", target)
            elif isinstance(obj, pygit2.Blob):
                out[path] = obj.data
    return out


def symlink_error(repo_path: str, target: str) -> LensLoadError:
    """The load error for a symlink at ``repo_path`` (repository-relative) to ``target``.

    A lens is read from git objects, where a symlink is only its target's
    name: following it would read whatever the machine has there, so dst
    never does, and a lens file that silently vanished would be worse.
    """
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), target))
    if posixpath.isabs(target) or joined == ".." or joined.startswith("../"):
        where = "outside the repository"
    else:
        where = f"to {joined}"
    return LensLoadError(
        repo_path,
        f"is a symlink {where} ({target!r}); dst does not follow symlinks in a lens",
        fix="replace the symlink with a copy of the file",
    )


# Lenses already loaded, by (name, tree id). A tree id names its content exactly, so
# the lens it yields is the same in any repository that holds it; a plan reloads
# the serving version on every run (watch, dst mutate), which this spares.
_LOADED: dict[tuple[str, str], Lens] = {}
_LOADED_MAX = 16


def load_lens_at(
    repo: pygit2.Repository, lens_tree: LensTree, *, checked: Path | None = None
) -> Lens:
    """Load a lens from a tree in the object database (memoized by tree id).

    Args:
        repo: the repository holding the tree.
        lens_tree: the lens's name and tree id.
        checked: the directory of :mod:`reconciler.git.checked` markers
            (``.dst/checked/``): a tree that loaded before skips the SQL checks
            then, and one that loads now leaves its marker; ``None``: no markers.

    Raises:
        LensLoadError: a file does not load, or the lens holds a symlink.
    """
    # lazy: the lens model (pydantic) loads only when a lens is, never for `dst status`
    from reconciler.lens import load_lens

    key = (lens_tree.name, str(lens_tree.tree))
    cached = _LOADED.pop(key, None)
    if cached is not None:
        _LOADED[key] = cached  # most recently used goes last; the first is evicted
        return cached
    root = f"{LENSES_DIR}/{lens_tree.name}"
    files = tree_files(repo, lens_tree.tree, lens_root=root)
    mark = checkmarks.marker(checked, lens_tree.name, str(lens_tree.tree))
    known = checkmarks.seen(mark)
    lens = load_lens(lens_tree.name, files, sql_checked=known)
    if not known:
        checkmarks.remember(mark)
    if len(_LOADED) >= _LOADED_MAX:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[key] = lens
    return lens


def worktree_lens_names(root: Path) -> list[str]:
    """Lens directory names in the working tree (those that hold a ``lens.yaml``)."""
    base = root / LENSES_DIR
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "lens.yaml").is_file())


def worktree_files(root: Path, name: str) -> dict[str, bytes]:
    """A lens directory in the working tree as ``{posix relative path: bytes}``.

    Raises:
        LensLoadError: the lens name is not a valid ref component, or the lens
            holds a symlink.
    """
    if not LENS_NAME_RE.match(name):
        raise LensLoadError(
            f"{LENSES_DIR}/{name}",
            "not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_'",
        )
    base = root / LENSES_DIR / name
    repofiles.check_directory(root, base)  # os.walk would follow a symlinked lens folder
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        # os.walk lists a symlinked directory among dirnames and never enters it.
        for fname in sorted(filenames) + [d for d in dirnames if Path(dirpath, d).is_symlink()]:
            full = Path(dirpath) / fname
            if full.is_symlink():
                rel = full.relative_to(root).as_posix()
                raise symlink_error(rel, os.readlink(full))
            out[full.relative_to(base).as_posix()] = full.read_bytes()
    return out


def file_at(repo: pygit2.Repository, commit: str, path: str) -> bytes | None:
    """The bytes of the file at repository-relative ``path`` in ``commit``, or ``None``.

    ``None`` when the commit or the path does not resolve, or the path is not a file.
    """
    try:
        obj = repo.revparse_single(f"{commit}:{path}")
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return bytes(obj.data) if isinstance(obj, pygit2.Blob) else None


def enclosing_root(path: Path) -> Path | None:
    """The working tree root of the repository holding ``path``, or ``None`` outside any.

    ``path`` need not exist yet: the search starts at its nearest existing ancestor.

    Raises:
        UsageError: the repository found is one git refuses to open (:func:`open_repo`).
    """
    probe = path
    while not probe.exists():
        probe = probe.parent
    if pygit2.discover_repository(str(probe)) is None:
        return None
    return repo_root(open_repo(probe))


def init_repository(path: Path) -> None:
    """``git init`` at ``path`` (which must exist): a repository with no commits."""
    pygit2.init_repository(str(path))


Repository = pygit2.Repository
"""The repository handle the core passes around without importing pygit2 itself."""


def contains(repo: pygit2.Repository, commit: Oid, ancestor: Oid) -> bool:
    """Whether ``commit`` is ``ancestor`` or one of its descendants."""
    return commit == ancestor or bool(repo.descendant_of(commit, ancestor))


def git_dir(repo: pygit2.Repository) -> Path:
    """The repository's git directory (``.git`` or wherever a worktree keeps it)."""
    return Path(repo.path)
