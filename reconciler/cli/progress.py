"""Progress of long commands (``dst apply``, ``dst test``) on stderr.

Three modes, chosen once per invocation by :func:`progress_for`:

* stderr is a terminal: a rich progress bar (answers done of answers planned,
  elapsed time, the answer and step running now), redrawn in place;
* stderr is not a terminal (CI logs, pipes, tests): one plain line per answer
  as it starts, and every other line (warnings, behavioural cases), so logs stay
  greppable; an answer's own steps (``<lens>/<answer>: executing oracle`` …) only
  with ``--verbose``;
* ``--quiet``: nothing; errors and the report itself still print.

In every mode an :class:`AnswerClock` times each answer, for the report's
per-answer seconds. stdout is never touched: ``--format json`` stays one object there.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
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


class AnswerClock:
    """Wall-clock seconds of each answer, read from the progress a run emits.

    An answer starts when it is announced (``<lens>: <verb> <answer id>``) and ends
    at the next line its thread emits that is not one of its own steps
    (``<lens>/<answer id>: …``), or when its batch is done (a suite or self-test
    returned: :meth:`done`). The suite reports no end of a single answer, so in a
    parallel batch an answer a worker ran last is timed until the whole batch
    returned: an upper bound by at most the wait for the slowest worker.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._now = clock
        self._lock = threading.Lock()
        self._open: dict[threading.Thread, tuple[str, str, float]] = {}
        self.seconds: dict[str, float] = {}
        """``{"<lens>/<answer id>": seconds}`` of every answer that finished."""

    def answer(self, message: str) -> None:
        """An announce line: close this thread's answer and start the one named."""
        lens, _, rest = message.partition(": ")
        key = f"{lens}/{rest.rsplit(' ', 1)[-1]}"
        with self._lock:
            now = self._now()
            self._close(threading.current_thread(), now)
            self._open[threading.current_thread()] = (key, f"{key}: ", now)

    def line(self, message: str) -> bool:
        """Any other progress line; ``True`` when it is a step of the answer running
        on this thread (the steps plain mode leaves out without ``--verbose``)."""
        with self._lock:
            now = self._now()
            current = self._open.get(threading.current_thread())
            if current is not None and message.startswith(current[1]):
                return True
            self._close(threading.current_thread(), now)
            return False

    def done(self) -> None:
        """Close every answer still open (a batch returned, or the run is over)."""
        with self._lock:
            now = self._now()
            for thread in list(self._open):
                self._close(thread, now)

    def _close(self, thread: threading.Thread, now: float) -> None:
        opened = self._open.pop(thread, None)
        if opened is not None:
            self.seconds[opened[0]] = now - opened[2]


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
def progress_for(
    rt: Runtime, *, quiet: bool, verbose: bool = False, stream: TextIO | None = None
) -> Iterator[AnswerClock]:
    """Route ``rt``'s progress to a bar, to plain lines, or nowhere, for one command.

    Args:
        rt: the runtime whose ``progress``, ``on_expect`` and ``on_answer`` are set.
        quiet: ``--quiet``: print no progress at all.
        verbose: ``--verbose``: plain mode also prints each answer's steps.
        stream: where progress goes (default stderr); a bar only when it is a TTY.

    Yields:
        The clock timing each answer; its ``seconds`` are complete once the block exits,
        and ``rt``'s progress hooks are as they were before it.
    """
    out = stream if stream is not None else sys.stderr
    saved = rt.progress, rt.on_answer, rt.on_expect, rt.on_answers_done
    clock = AnswerClock()
    bar = AnswerBar(out) if not quiet and out.isatty() else None
    say: Callable[[str], None]
    if quiet:
        say = _quiet
    elif bar is not None:
        say = bar.step
        rt.on_expect = bar.expect
    else:
        say = rt.progress

    def step(message: str) -> None:
        if not clock.line(message) or verbose or bar is not None:
            say(message)

    def started(message: str) -> None:
        clock.answer(message)
        (bar.answer if bar is not None else say)(message)

    rt.progress, rt.on_answer, rt.on_answers_done = step, started, clock.done
    if bar is not None:
        bar.progress.start()
    try:
        yield clock
    finally:
        clock.done()
        if bar is not None:
            bar.finish()
        rt.progress, rt.on_answer, rt.on_expect, rt.on_answers_done = saved
