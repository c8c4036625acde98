"""Figures that long-running tests measure, printed in pytest's terminal summary.

``tests/conftest.py``'s ``pytest_terminal_summary`` prints every recorded line at
the end of the session, so the figures show under ``-q`` as well as ``-s``.
"""

from __future__ import annotations

_LINES: list[str] = []


def record(line: str) -> None:
    """Keep one summary line for the end of the session."""
    _LINES.append(line)


def recorded() -> list[str]:
    """Every line recorded so far, in order."""
    return list(_LINES)
