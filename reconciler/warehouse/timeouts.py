"""One timer thread for every statement timeout (DuckDB/SQLite interrupts).

A statement timeout on DuckDB or SQLite is a call to the connection's
``interrupt()`` once the deadline passes. Starting a ``threading.Timer`` per
statement costs a new OS thread each time — on a suite of small queries, a
sizeable share of the time the warehouse itself spends. Here one daemon thread
keeps every pending deadline in a heap and calls what is due; disarming marks
an entry dead (it is dropped when its deadline comes round).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress


class Alarm:
    """A pending call; :meth:`cancel` makes sure it never runs (if it has not yet)."""

    __slots__ = ("call",)

    def __init__(self, call: Callable[[], None]) -> None:
        self.call: Callable[[], None] | None = call

    def cancel(self) -> None:
        """Drop the call; idempotent. A call already running is not stopped."""
        self.call = None


class Watchdog:
    """Calls each scheduled function once its deadline (``time.monotonic``) passes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def schedule(self, delay_s: float, call: Callable[[], None]) -> Alarm:
        """Run ``call`` on the watchdog thread in ``delay_s`` seconds, unless cancelled."""
        alarm = Alarm(call)
        deadline = time.monotonic() + delay_s
        with self._cond:
            # A forked child inherits the state but not the thread: start its own.
            if self._thread is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="dst-timeouts", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (deadline, next(self._order), alarm))
            self._cond.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, alarm = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                call = alarm.call
                alarm.call = None
            if call is not None:
                # A failing call must not stop the thread every later timeout relies on.
                with suppress(Exception):
                    call()


WATCHDOG = Watchdog()
