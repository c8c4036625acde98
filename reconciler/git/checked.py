"""Lens trees whose SQL already passed the load-time read-only check, kept under ``.dst/checked/``.

Loading a lens runs the guard over every SQL string it holds (each answer's and
exemplar's query, each column, metric and filter expression): with sqlglot that
is most of what loading a lens costs. A plan loads the serving and the candidate
version of each changed lens on every run, though a lens tree id names the
tree's content exactly: if the tree loaded once, its SQL passed, and it passes
again as long as the rules are the same. So a successful load leaves an empty
marker file named by the SHA-256 of ``(schema, tool version, sqlglot version, the
bytes of the guard's and the loader's source, lens name, tree id)``, and a later
load of that tree skips the SQL checks (YAML, types and references are still
checked: the :class:`~reconciler.lens.Lens` is built as before). Another dst,
sqlglot or guard, or another tree, misses; a marker that cannot be written or
read is a miss. The load-time check is an early, friendly refusal: every
statement is checked again by the guard before it runs (the guarded warehouse),
marker or not. At most :data:`CHECKED_KEPT` markers are kept, the least recently
used pruned first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path

import reconciler
from reconciler import __version__
from reconciler.files import replace_file

CHECKED_SCHEMA = 1
CHECKED_KEPT = 4096
_HERE = Path(reconciler.__file__).parent
# Every file of the guard package (its modules and its function allow-lists) and the loader.
_RULES = (
    *sorted(
        p.relative_to(_HERE).as_posix()
        for p in (_HERE / "guard").rglob("*")
        if p.suffix in (".py", ".txt") and "__pycache__" not in p.parts
    ),
    "lens.py",
    "lensfiles.py",
)


@functools.lru_cache(maxsize=1)
def rules_fingerprint() -> str:
    """SHA-256 hex of what decides whether SQL passes the load-time check.

    The tool and sqlglot versions and the source bytes of the guard and the lens
    loader (:data:`_RULES`): an edited rule, even within one version, misses.
    """
    # the parser the guard's verdicts rest on, read from its metadata: importing
    # sqlglot only for its version would cost a plan that parses nothing
    from importlib import metadata  # lazy: only a lens load asks (`dst status` loads none)

    try:
        sqlglot_version = metadata.version("sqlglot")
    except metadata.PackageNotFoundError:
        sqlglot_version = ""
    digest = hashlib.sha256(f"{CHECKED_SCHEMA}\0{__version__}\0{sqlglot_version}".encode())
    for name in _RULES:
        digest.update(b"\0" + (_HERE / name).read_bytes())
    return digest.hexdigest()


def marker(directory: Path | None, name: str, tree: str) -> Path | None:
    """The marker of lens ``name`` at lens tree ``tree`` under ``directory`` (``None``: no memo)."""
    if directory is None:
        return None
    ident = json.dumps([rules_fingerprint(), name, tree])
    return directory / hashlib.sha256(ident.encode("utf-8")).hexdigest()


def seen(path: Path | None) -> bool:
    """Whether the tree of marker ``path`` loaded before; marks it recently used."""
    if path is None:
        return False
    try:
        os.utime(path)
    except OSError:
        return False
    return True


def remember(path: Path | None) -> None:
    """Leave marker ``path`` after a successful load (best effort), then prune."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, b"")
    except OSError:
        return  # a read-only checkout loads as before, just not faster
    _prune(path.parent)


def _prune(directory: Path) -> None:
    """Keep the :data:`CHECKED_KEPT` most recently used markers (best effort)."""
    with contextlib.suppress(OSError):
        entries = [e for e in os.scandir(directory) if e.is_file(follow_symlinks=False)]
        if len(entries) <= CHECKED_KEPT:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for old in entries[: len(entries) - CHECKED_KEPT]:
            os.unlink(old.path)
