"""Helpers the ``dst`` commands share: open the runtime, print a report, small renderings.

Commands import these (and :mod:`reconciler.cli.options`), never
:mod:`reconciler.cli.app`, which only assembles the typer app.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from reconciler.cli.boundary import silence_stdout
from reconciler.cli.formats import Format

if TYPE_CHECKING:
    from reconciler.render.text import Line

COLOURS = {"ok": "green", "fail": "bold red", "warn": "yellow", "muted": "dim", "strong": "bold"}
"""The colour of each :data:`reconciler.render.text.Style` on a terminal."""


def runtime(
    repo: Path | None,
    warehouse: str | None = None,
    jobs: int | None = None,
    environment: str | None = None,
) -> Any:
    """The :class:`reconciler.context.Runtime` of the repository at (or above) ``repo``.

    Args:
        repo: ``--repo`` (default: the current directory).
        warehouse: ``--warehouse`` URL, overriding the configured one.
        jobs: ``--jobs``, answers verified at once.
        environment: ``--env``, the named environment (``None``: the default one).

    Raises:
        UsageError: no git repository there, or one owned by another user.
    """
    # lazy: the runtime loads the engines; `dst --help` and light commands do not need them
    from reconciler.context import Runtime
    from reconciler.git.trees import open_repo

    return Runtime(open_repo(repo), warehouse_url=warehouse, jobs=jobs, environment=environment)


def emit(
    report: Any,
    fmt: Format,
    explain: bool = False,
    *,
    verbose: bool = False,
    seconds: Mapping[str, float] | None = None,
) -> int:
    """Print a run report (``--format text|json``) and return its exit code.

    Text is the compact layout (``verbose``: the full listing), with each answer's
    ``seconds`` when given, coloured where :func:`print_lines` colours.
    A reader that went away mid-print (``dst plan | head``) is not an error: the
    rest of the output is dropped and the report's exit code still stands.
    """
    # lazy: the renderer imports the report model and sqlglot
    from reconciler.render import text as render

    try:
        if fmt is Format.json:
            print(render.to_json(report, explain=explain, seconds=seconds), flush=True)
        else:
            lines = render.to_lines(report, explain=explain, verbose=verbose, seconds=seconds)
            print_lines(lines)
    except BrokenPipeError:
        silence_stdout()
    return int(report.exit_code)


def colour_wanted(stream: TextIO) -> bool:
    """Colour on ``stream``: never when ``NO_COLOR`` is set and non-empty
    (https://no-color.org) or ``TERM=dumb``; else when ``FORCE_COLOR`` is non-empty
    (https://force-color.org) or ``TTY_COMPATIBLE=1``; else when it is a terminal.

    Decided without rich (as rich decides), so plain output never loads it.
    """
    env = os.environ
    if env.get("NO_COLOR") or env.get("TERM", "").lower() in ("dumb", "unknown"):
        return False
    if env.get("TTY_COMPATIBLE") in ("0", "1"):
        return env["TTY_COMPATIBLE"] == "1"
    if "FORCE_COLOR" in env:
        return env["FORCE_COLOR"] != ""
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


def print_lines(lines: Sequence[Line], stream: TextIO | None = None) -> None:
    """Print styled report lines on ``stream`` (default stdout): coloured by
    :data:`COLOURS` where :func:`colour_wanted`, else their plain text."""
    out = stream if stream is not None else sys.stdout
    if not colour_wanted(out):
        print("\n".join("".join(text for text, _ in line) for line in lines), file=out, flush=True)
        return
    # lazy: rich loads only to colour a terminal; plain output (logs, pipes) never needs it
    from rich.console import Console
    from rich.text import Text

    console = Console(
        file=out, force_terminal=True, highlight=False, markup=False, emoji=False, soft_wrap=True
    )
    for line in lines:
        text = Text()
        for part, style in line:
            text.append(part, style=COLOURS[style] if style else "")
        console.print(text)
    out.flush()


def plain(obj: Any) -> dict[str, Any]:
    """A dataclass (or dict) as a plain dict for ``--format json``; else ``{"result": str}``."""
    if hasattr(obj, "__dataclass_fields__"):
        return {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    return dict(obj) if isinstance(obj, dict) else {"result": str(obj)}


def short_score(score: Any) -> str:
    """``correct/total`` of a recorded score, ``n/a`` when there is none."""
    if not score:
        return "n/a"
    return f"{score.get('correct', 0)}/{score.get('total', 0)}"


@contextlib.contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """Around a prompt on the terminal: Ctrl-C interrupts even when SIGINT came in ignored.

    A process started with SIGINT ignored (by a launcher, or a shell script run in
    the background, which then hands the terminal over) gets no KeyboardInterrupt
    from Python, so Ctrl-C at a prompt did nothing and the prompt kept waiting. The
    terminal sends SIGINT to its foreground process group only: a Ctrl-C that
    reaches a process waiting at its prompt was meant for it. So the default
    handler is installed for the prompt and the inherited disposition restored
    after it; outside prompts nothing changes.
    """
    if (
        signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
