"""A real pseudo-terminal for the ``dst`` prompts (``dst certify`` asks on a terminal)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import GIT_ENV

INTERRUPT = "<Ctrl-C>"
"""A reply to :func:`on_terminal` that interrupts the command at that prompt."""


READ_FIRST_S = 0.5
"""Seconds between a prompt showing and the :data:`INTERRUPT` sent to it."""


def ctrl_c_deliverable() -> None:
    """Give the child about to exec the default SIGINT disposition (a ``preexec_fn``).

    A shell without job control starts a background job (``pytest … &``) with SIGINT
    ignored, an ignored signal stays ignored across exec, and Python then installs
    no KeyboardInterrupt handler: the child would never see the Ctrl-C a test sends.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def on_terminal(repo: Path, args: list[str], replies: list[tuple[str, str]]) -> tuple[int, str]:
    """Run ``dst`` with a pseudo-terminal as stdin/stdout; answer each prompt in turn.

    ``replies`` are ``(text the prompt shows, reply)``; the reply :data:`INTERRUPT`
    sends SIGINT instead, as Ctrl-C on the terminal would. Returns the exit code and
    everything the terminal showed.
    """
    env = {**os.environ, **GIT_ENV, "HOME": str(repo), "COLUMNS": "120"}
    env.pop("DST_WAREHOUSE_URL", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        cwd=repo,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=ctrl_c_deliverable,
    )
    os.close(slave)
    out = b""
    seen = 0
    pending = list(replies)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if pending and pending[0][0].encode() in out[seen:]:
                seen = len(out)
                reply = pending.pop(0)[1]
                if reply == INTERRUPT:
                    # A person reads the prompt before pressing Ctrl-C. A SIGINT sent the
                    # instant the text shows was seen lost now and then (the prompt then
                    # waited for ever): it lands before the prompt reads the terminal.
                    time.sleep(READ_FIRST_S)
                    proc.send_signal(signal.SIGINT)  # what Ctrl-C at the prompt delivers
                else:
                    os.write(master, reply.encode() + b"\r")
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            waiting = [text for text, _ in pending]
            raise AssertionError(
                f"dst {' '.join(args)} still runs; waiting for {waiting}; the terminal showed:\n"
                + out.decode("utf-8", "replace")
            ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, out.decode("utf-8", "replace")
