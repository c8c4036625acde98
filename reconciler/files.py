"""Writing files atomically: a new file never over an existing one, or a replacement.

``dst certify`` and ``dst init`` create files a person then reviews and commits;
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
import tempfile
from pathlib import Path


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
