"""Ctrl-C at ``dst certify``'s prompt interrupts, even when dst started with SIGINT ignored.

A launcher (or a shell script run in the background that then hands over the
terminal) can start dst with SIGINT ignored; Python then raises no
KeyboardInterrupt and Ctrl-C at the prompt was lost, the prompt waiting on. The
command runs on a pseudo-terminal of its own, in its own session, so the test
depends neither on this process's terminal nor on SIGINT reaching pytest.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import command_env

pty = pytest.importorskip("pty")

PROMPT = b"[y/N]"


def _certify_and_press_ctrl_c(repo: Path, *, ignored: bool) -> tuple[int, bytes]:
    args = [sys.executable, "-m", "reconciler", "certify", "--lens", "sales"]
    args += ["--question", "total revenue by region", "--by", "Ana"]
    env = {**command_env(repo), "TERM": "dumb"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: on the pseudo-terminal, SIGINT as a launcher left it
        try:
            os.chdir(repo)
            if ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.execve(sys.executable, args, env)
        finally:
            os._exit(127)
    out, pressed, deadline = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal: it ended
                break
            if not chunk:
                break
            out += chunk
            if not pressed and PROMPT in out:
                os.write(fd, b"\x03")  # Ctrl-C, as typed: the terminal sends SIGINT
                pressed = True
                deadline = max(deadline, time.monotonic() + 60)  # a slow start leaves it time
    finally:
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)  # always reaped
        os.close(fd)
    assert pressed, out[-2000:]
    return os.waitstatus_to_exitcode(status), out


@pytest.mark.parametrize("ignored", [False, True], ids=["sigint default", "sigint ignored"])
def test_ctrl_c_at_the_certify_prompt_interrupts(promoted_repo: Path, ignored: bool) -> None:
    code, out = _certify_and_press_ctrl_c(promoted_repo, ignored=ignored)
    assert code == 130, out[-2000:]
    assert out.rstrip().endswith(b"interrupted"), out[-2000:]
    assert not list(
        (promoted_repo / "lenses" / "sales" / "answers").glob("total_revenue_by_region*")
    )
