"""The repository's files on disk: read only from inside it, written atomically.

**Reading.** A lens (its files, its seeds, its skills, the program its ``command`` tier runs) is
read from the repository and nowhere else. A symlink in the working tree is only a
name for whatever the machine holds at its target: following ``seeds/creds.csv →
~/.aws/credentials`` would load that file into the embedded warehouse, from where
``dst ask`` would serve it, and a generator program linked out of the repository
would run code no review saw. So every path dst reads from the working tree is
checked here before it is opened:

* it is written inside the repository root (no ``..`` out of it, no absolute path
  elsewhere);
* no component of it, from the root down, is a symlink, wherever it points: a
  symlink inside the repository is refused too, with the file it names, because
  git stores only its target and the same lens read from a commit must not differ;
* the file itself is a regular file (not a directory, FIFO or device).

A refusal is a :class:`~reconciler.errors.LensLoadError` (exit 2) naming the
repository-relative path and the fix. The final open uses ``O_NOFOLLOW`` where the
platform has it, so a symlink swapped in after the check is refused as well.

**Writing.** ``dst certify`` and ``dst init`` create files a person then reviews and commits;
neither may clobber what is already there, and a reader (an editor, ``dst watch``,
a concurrent ``dst validate``) must never see a half-written file. The bytes go to
a temporary file in the target's directory, which is then hard-linked to the
target name: ``link(2)`` fails when the name exists, so the check and the creation
are one step and two writers racing for the same name cannot both win.
:func:`replace_file` is for the few files init amends (``.gitignore``).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import tempfile
from pathlib import Path

from reconciler.errors import LensLoadError

_FIX_SYMLINK = "replace the symlink with a copy of the file, committed in the repository"
_FIX_OUTSIDE = "keep the file inside the repository and name it by a path relative to it"
_FIX_REGULAR = "replace it with a file committed in the repository"


def relative(root: Path, path: Path) -> str | None:
    """``path`` as a POSIX path relative to ``root`` (lexically, ``..`` resolved), or
    ``None`` when it is written outside ``root``."""
    full = Path(os.path.normpath(root / path))
    try:
        rel = full.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix()


def symlink_refusal(rel: str, target: str) -> LensLoadError:
    """The error for a symlink at repository-relative ``rel`` pointing at ``target``."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if posixpath.isabs(target) or joined == ".." or joined.startswith("../"):
        where = "outside the repository"
    else:
        where = f"to {joined}"
    return LensLoadError(
        rel,
        f"is a symlink {where} ({target!r}); dst reads only regular files of the repository "
        "and never follows a symlink",
        fix=_FIX_SYMLINK,
    )


def check_path(root: Path, path: Path, *, shown: str | None = None) -> str:
    """Check that ``path`` is written inside ``root`` and that no component of it is a symlink.

    Args:
        root: the repository's working tree (resolved).
        path: absolute, or relative to ``root``; it need not exist.
        shown: how messages name ``path`` when it is outside (default: as given).

    Returns:
        ``path`` relative to ``root``, POSIX form.

    Raises:
        LensLoadError: ``path`` is outside ``root``, or a component is a symlink.
    """
    rel = relative(root, path)
    if rel is None:
        raise LensLoadError(
            shown or str(path),
            "resolves outside the repository; dst reads only files of the repository",
            fix=_FIX_OUTSIDE,
        )
    here = root
    parts = [] if rel == "." else rel.split("/")
    for i, part in enumerate(parts):
        here = here / part
        if here.is_symlink():
            raise symlink_refusal("/".join(parts[: i + 1]), os.readlink(here))
    return rel


def check_directory(root: Path, path: Path) -> str:
    """:func:`check_path`, for a directory dst walks (it need not exist).

    Raises:
        LensLoadError: as :func:`check_path`.
    """
    return check_path(root, path)


def read_file(root: Path, path: Path) -> bytes:
    """The bytes of the regular file ``path`` inside ``root`` (module docstring).

    Raises:
        LensLoadError: outside, through a symlink, not a regular file, or unreadable.
    """
    rel = check_path(root, path)
    full = root / rel
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(full, flags)
    except OSError as exc:
        if full.is_symlink():
            raise symlink_refusal(rel, os.readlink(full)) from None
        raise LensLoadError(rel, f"cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise LensLoadError(rel, "is not a regular file", fix=_FIX_REGULAR)
        return handle.read()


def check_file(root: Path, path: Path) -> str:
    """:func:`check_path`, and the file exists as a regular file.

    Raises:
        LensLoadError: as :func:`read_file`.
    """
    rel = check_path(root, path)
    try:
        mode = os.lstat(root / rel).st_mode
    except OSError as exc:
        raise LensLoadError(rel, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise LensLoadError(rel, "is not a regular file", fix=_FIX_REGULAR)
    return rel


def write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, atomically; refuse when it exists.

    Parent directories are created as needed. On a filesystem without hard links
    the temporary file is renamed into place after an existence check, which is
    atomic for readers but leaves a narrow race between two writers.

    Args:
        path: the file to create.
        data: its complete content.

    Raises:
        FileExistsError: ``path`` already exists (nothing is written).
        OSError: the directory cannot be created or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a lens file is an ordinary file
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:
            if path.exists():
                raise FileExistsError(str(path)) from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` atomically (temporary file, then rename over it), existing or not.

    Raises:
        OSError: the directory cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
