"""A warm ``dst`` launcher for the crash and race tests: import once, fork per command.

Starting Python and importing dst's dependencies takes most of a small command's
run time, so the crash harness and the race would spend their budget on imports.
This script imports them once, then, for each request read from stdin (one JSON
object a line: ``{"argv", "cwd", "env", "out", "err"}``), forks a child that runs
the real command line (:func:`reconciler.cli.entry.main`) in ``cwd`` with exactly
``env``, stdout and stderr going to the files ``out`` and ``err`` (the command
tree typer builds is built once, too). Each child is
an ordinary process: it exits with the command's code, or dies of the signal it
gets. The launcher answers ``{"pid": N}`` as soon as the child exists, then
``{"pid": N, "status": S}`` when it ends (``S`` = exit code, or ``-signal``). A
request with ``"kill_after": seconds`` has its child sent SIGKILL after that long
unless it ended first.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import sys
import time
import traceback
from typing import Any

import duckdb_engine  # noqa: F401  (the dialect SQLAlchemy would load lazily)
import rich.console  # noqa: F401  (progress output imports it lazily)
import sqlglot.dialects.duckdb  # noqa: F401
import typer.main
from sqlalchemy.dialects import registry

import reconciler.cli.app
import reconciler.history
import reconciler.reconcile
import reconciler.render.text
from reconciler.cli import entry

registry.load("duckdb")
# typer rebuilds the click command tree, evaluating every command's type hints,
# on each call: more than a small command's own work. Build it once, before forking.
typer.main.get_command = functools.cache(typer.main.get_command)
typer.main.get_command(reconciler.cli.app.app)
_ = (reconciler.reconcile, reconciler.cli.app, reconciler.history, reconciler.render.text)


def _child(req: dict[str, Any]) -> None:
    code = 3
    try:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        try:
            entry.main(list(req["argv"]))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _kill_after(pid: int, seconds: float) -> None:
    # Only the launcher kills: until it reaps the child, the pid cannot be reused,
    # so the signal reaches the child (or its zombie, which ignores it), never a stranger.
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        time.sleep(seconds)
    else:
        select.select([fd], [], [], seconds)
        os.close(fd)
    os.kill(pid, signal.SIGKILL)


def main() -> None:
    """Serve requests until stdin closes."""
    reply = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            reply.close()
            _child(req)
        print(json.dumps({"pid": pid}), file=reply, flush=True)
        if req.get("kill_after") is not None:
            _kill_after(pid, float(req["kill_after"]))
        _, raw = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(raw)
        print(json.dumps({"pid": pid, "status": status}), file=reply, flush=True)


if __name__ == "__main__":
    main()
