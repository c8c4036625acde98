"""``--profile FILE``: where a ``dst plan`` or ``dst apply`` spends its time (cProfile).

The file is cProfile's binary stats; read it with ``python -m pstats FILE``
(``sort cumulative``, ``stats 30``) or a viewer such as snakeviz. Only the
command's own work is profiled, not interpreter start-up or imports done
before it began.
"""

from __future__ import annotations

import cProfile
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def profiled(path: Path | None) -> Iterator[None]:
    """Profile the body into ``path`` (nothing when ``None``); say where on stderr."""
    if path is None:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(str(path))
        print(f"profile written to {path} (read it: python -m pstats {path})", file=sys.stderr)
