"""Progress of long commands (``dst apply``, ``dst test``) on stderr.

Three modes, chosen once per invocation by :func:`progress_for`:

* stderr is a terminal: a rich progress bar (answers done of answers planned,
  elapsed time, the answer and step running now), redrawn in place;
* stderr is not a terminal (CI logs, pipes, tests): one plain line per step, as
  before, so logs stay greppable;
* ``--quiet``: nothing; errors and the report itself still print.

stdout is never touched: ``--format json`` stays one object there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import TaskID

    from reconciler.context import Runtime

BAR_WIDTH = 24
# Spinner, bar, "19/21 answers" and the elapsed time take about this many columns.
FIXED_COLUMNS = BAR_WIDTH + 30


def _quiet(_message: str) -> None:
    return None


class AnswerBar:
    """A rich bar counting answers: ``on_expect`` grows its total, ``on_answer`` advances it.

    An answer counts as done when the next one starts or the bar stops, so the
    bar never claims an answer that is still running.
    """

    def __init__(self, stream: TextIO) -> None:
        # lazy: rich loads only when a bar is drawn (stderr is a terminal), not for logs or json
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(file=stream, stderr=stream is sys.stderr)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(bar_width=BAR_WIDTH),
            MofNCompleteColumn(),
            TextColumn("answers"),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.width = max(12, min(72, self.console.width - FIXED_COLUMNS))
        self.task: TaskID = self.progress.add_task("planning", total=0)
        self.running = False

    def expect(self, answers: int) -> None:
        """Add ``answers`` to the total."""
        total = self.progress.tasks[0].total or 0
        self.progress.update(self.task, total=total + answers)

    def answer(self, message: str) -> None:
        """One answer starts: the previous one is done."""
        if self.running:
            self.progress.advance(self.task)
        self.running = True
        self._describe(message)

    def step(self, message: str) -> None:
        """Any other progress line (a step within an answer, a behavioural case …)."""
        self._describe(message)

    def _describe(self, text: str) -> None:
        if len(text) > self.width:
            text = text[: self.width - 1] + "…"
        self.progress.update(self.task, description=text.ljust(self.width))

    def finish(self) -> None:
        """Count the last answer and leave the final bar on screen."""
        if self.running:
            self.progress.advance(self.task)
            self.running = False
        done = int(self.progress.tasks[0].completed)
        self._describe(f"done: {done} answer(s) run")
        self.progress.stop()


@contextmanager
def progress_for(rt: Runtime, *, quiet: bool, stream: TextIO | None = None) -> Iterator[None]:
    """Route ``rt``'s progress to a bar, to plain lines, or nowhere, for one command.

    Args:
        rt: the runtime whose ``progress``, ``on_expect`` and ``on_answer`` are set.
        quiet: ``--quiet``: print no progress at all.
        stream: where progress goes (default stderr); a bar only when it is a TTY.
    """
    out = stream if stream is not None else sys.stderr
    if quiet:
        rt.progress = _quiet
        yield
        return
    if not out.isatty():
        yield
        return
    bar = AnswerBar(out)
    rt.progress, rt.on_expect, rt.on_answer = bar.step, bar.expect, bar.answer
    bar.progress.start()
    try:
        yield
    finally:
        bar.finish()
