"""Test hook: kill dst at a named step boundary, to prove its writes are crash-consistent.

Inert unless the environment variable ``DST_CRASH_AT`` is set; nothing in normal
operation sets it. Its value is a comma-separated list of ``step`` or
``step@N`` (the N-th time the process reaches that step, 1-based; plain
``step`` means the first time). When the process reaches a listed step it sends
itself SIGKILL: no ``finally``, no ``atexit``, no flush, exactly what a power
cut or the OOM killer leaves behind. ``tests/test_crash.py`` drives it.

Steps (where they sit):

=====================  ==========================================================
``deployment-written``  a deployment or attempt commit is in the object database,
                        no ref names it yet (:func:`refstore.write_deployment`)
``intent-written``      ``refs/dst/applying`` names the intent record, no lens ref
                        has moved (multi-lens :func:`refstore.update_refs`)
``ref-locked``          a ref's ``.lock`` file is held inside a reference
                        transaction, before anything is set
``refs-set``            a reference transaction has committed; for a multi-lens
                        apply the intent record is still there
``intent-cleared``      the intent record has been removed
``recover-rolled``      :func:`refstore.recover` rolled an interrupted apply's
                        refs forward and has not yet removed its intent record
``restamp-before``      ``dst test`` ran the suite, no re-stamped deployment written
``restamp-after``       ``dst test`` moved ``refs/dst/verify/<lens>`` to its verification
=====================  ==========================================================
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "DST_CRASH_AT"
_reached: dict[str, int] = {}


def crash_point(step: str) -> None:
    """SIGKILL this process if ``DST_CRASH_AT`` names ``step`` (at this hit count).

    Args:
        step: one of the step names in the module docstring.
    """
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    _reached[step] = count = _reached.get(step, 0) + 1
    for item in wanted.split(","):
        name, _, nth = item.strip().partition("@")
        if name == step and count == (int(nth) if nth else 1):
            os.kill(os.getpid(), signal.SIGKILL)
