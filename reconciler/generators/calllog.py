"""The local log of one external-tier call: what a generator printed, kept whole, never in git.

A generator program's stderr (and, when its reply could not be used, its stdout)
may hold anything its environment held, so it is written whole only here, under
``.dst/logs/<tier>/`` in the working tree (``.dst/`` is git-ignored: its own
``.gitignore`` holds ``*``). What crosses into run records, webhooks and reports
is the exit status, the byte counts, this log's repository-relative path and a
tail redacted by value (:mod:`reconciler.generators.redaction`).

One file per call: ``<UTC time>-<process id>-<n>.log``, with a header line per
fact, then each stream under a ``--- <name> (<n> bytes) ---`` line. The logs are
never read back by dst; delete the folder whenever you like.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

LOGS_DIR = ".dst/logs"
_COUNTER = itertools.count(1)
_LOCK = threading.Lock()


def write(
    root: Path | None, tier: str, facts: Sequence[str], streams: Sequence[tuple[str, bytes]]
) -> str | None:
    """Write one call's log; returns its path relative to ``root``, or ``None``.

    Args:
        root: the repository's working tree; ``None`` (a bare repository): no log.
        tier: the tier's name (the log's folder).
        facts: header lines (program, exit status …).
        streams: ``(name, bytes)`` of each stream, written whole.

    A log that cannot be written (a read-only checkout, a full disk) is skipped:
    ``None``, and the record says the stream was not kept.
    """
    if root is None:
        return None
    with _LOCK:
        n = next(_COUNTER)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rel = f"{LOGS_DIR}/{tier}/{stamp}-{os.getpid()}-{n}.log"
    path = root / rel
    try:
        dst_dir = root / ".dst"
        dst_dir.mkdir(exist_ok=True)
        ignore = dst_dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            for line in facts:
                out.write(line.encode("utf-8", "replace") + b"\n")
            for name, data in streams:
                out.write(f"--- {name} ({len(data)} bytes) ---\n".encode())
                out.write(data)
                if data and not data.endswith(b"\n"):
                    out.write(b"\n")
    except OSError:
        return None
    return rel
