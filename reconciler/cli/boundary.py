"""The one error boundary of ``dst``: what a command raises, turned into an exit code.

It is wrapped once around the typer app (:class:`reconciler.cli.app.DstGroup`
runs every command inside :func:`guard`) and once around the pre-push hook
(:func:`reconciler.cli.hook.main`, in fail-closed mode). Nothing else in the
command line catches errors to pick an exit code: commands return the code of
the report they rendered (0, or 1 for a gate that blocked), and raise.

- a :class:`~reconciler.errors.DstError` exits with its class's ``exit_code`` (1 or
  2) and prints ``dst <command>: error: <message>`` and its fix on stderr; with
  ``--format json`` first ``{"schema_version", "command", "exit_code", "error":
  {"type", "message", "fix"}}`` on stdout, with ``--format github`` first an
  ``::error`` workflow command on stdout;
- ``BrokenPipeError`` exits 0 and prints nothing: the reader went away
  (``dst status | head``) and the work is done;
- ``KeyboardInterrupt`` exits 130 and prints ``interrupted`` on stderr;
- anything else exits 3: its traceback is written, once, to a new
  ``dst-crash-*.log`` in the temporary directory, and stderr gets
  ``dst <command>: unexpected error; traceback written to <path>``.

Fail-closed mode (the pre-push hook, githooks(5)): a hook that cannot decide must
not wave a push through, so every error exits 1 (the push stops), a broken pipe
too; an interrupt still exits 130. Every line starts with ``dst <command>:``
(the hook's output is interleaved with git's), an error ends with the hint saying
how to push anyway, and an unexpected error names its type and message, since
the blocked push has to say why; its traceback goes to ``dst-hook-crash-*.log``.

This module imports only the standard library and :mod:`reconciler.errors`: the
hook's fast path goes through it on every ``git push``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from reconciler.errors import DstError

EXIT_OK = 0
EXIT_BLOCKED = 1
EXIT_USAGE = 2
EXIT_UNEXPECTED = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Invocation:
    """What the boundary needs to know about the command it guards, to word its messages.

    Attributes:
        command: the command as typed after ``dst`` (``apply``, ``hooks install``,
            ``pre-push``).
        fmt: the ``--format`` value: ``text``, ``json`` or ``github``.
        fail_closed: every error exits 1 (see the module docstring).
        hint: a line appended to every error message (the hook's bypass), or ``None``.
    """

    command: str
    fmt: str = "text"
    fail_closed: bool = False
    hint: str | None = None

    @property
    def crash_log_prefix(self) -> str:
        """File name prefix of the traceback log in the temporary directory."""
        return "dst-hook-crash-" if self.fail_closed else "dst-crash-"

    def say(self, message: str) -> None:
        """Print ``dst <command>: <message>`` (and the hint) to stderr."""
        tail = f"\n  {self.hint}" if self.hint else ""
        print(f"dst {self.command}: {message}{tail}", file=sys.stderr, flush=True)


def guard(
    body: Callable[[], int],
    describe: Callable[[], Invocation],
    *,
    passthrough: tuple[type[BaseException], ...] = (),
) -> int:
    """Run ``body`` and return its exit code, or the code of what it raised.

    Args:
        body: the command; returns its exit code.
        describe: the invocation, asked for only when something was raised (a command's
            options are parsed by then).
        passthrough: exception types re-raised untouched: the command-line framework's
            own control flow (``--help``, usage errors), which it prints itself.

    Returns:
        The exit code (table in the module docstring).

    Raises:
        BaseException: an instance of ``passthrough``; ``SystemExit``.
    """
    try:
        return body()
    except passthrough:
        raise
    except KeyboardInterrupt:
        return _interrupted(describe())
    except DstError as exc:
        return _expected(exc, describe())
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BLOCKED if describe().fail_closed else EXIT_OK
    except Exception as exc:
        return _unexpected(exc, describe())


def _interrupted(invocation: Invocation) -> int:
    if invocation.fail_closed:
        print(f"dst {invocation.command}: interrupted", file=sys.stderr, flush=True)
    else:
        print("interrupted", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _expected(exc: DstError, invocation: Invocation) -> int:
    code = EXIT_BLOCKED if invocation.fail_closed else exc.exit_code
    if invocation.fmt == "json":
        error = {"type": type(exc).__name__, "message": exc.message, "fix": exc.fix}
        obj = {
            "schema_version": 1,
            "command": invocation.command,
            "exit_code": code,
            "error": error,
        }
        print(json.dumps(obj, indent=2), flush=True)
    elif invocation.fmt == "github":
        # lazy: only this error path needs the workflow-command renderer
        from reconciler.render.github import error_commands

        print("\n".join(error_commands(exc, f"dst {invocation.command}")), flush=True)
    invocation.say(f"error: {exc.render()}")
    return code


def _unexpected(exc: Exception, invocation: Invocation) -> int:
    path = write_crash_log(invocation.crash_log_prefix)
    if invocation.fail_closed:
        invocation.say(
            f"unexpected error ({type(exc).__name__}: {exc}); traceback written to {path}"
        )
        return EXIT_BLOCKED
    invocation.say(f"unexpected error; traceback written to {path}")
    return EXIT_UNEXPECTED


def write_crash_log(prefix: str) -> str:
    """Write the traceback being handled to a new file in the temporary directory.

    Args:
        prefix: the file name's start (``dst-crash-``); the name ends in ``.log``.

    Returns:
        The file's path.
    """
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".log")
    with os.fdopen(fd, "w") as log:
        log.write(traceback.format_exc())
    return name


def silence_stdout() -> None:
    """Point stdout at the null device, after the reader of a pipe went away.

    Python flushes stdout at exit; after a broken pipe that flush would fail too.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
