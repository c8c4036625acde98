"""The ``--format`` values of the ``dst`` commands (standard library only).

Kept apart from :mod:`reconciler.cli.options`, which builds typer's option types:
the commands run before typer loads (:mod:`reconciler.cli.lean`) name a format too.
"""

from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    """Output format."""

    text = "text"
    json = "json"
