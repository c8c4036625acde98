"""The ``dst`` console script: a fast path for git hooks, typer for everything else.

A pre-push hook runs on every ``git push``; importing typer, rich, SQLAlchemy and
sqlglot there would cost more than the work of a push that touches no lens. So
``dst hook-impl …`` is dispatched here, before the command-line framework loads.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run ``dst`` with ``argv`` (default ``sys.argv[1:]``)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook-impl"]:
        from reconciler.cli.hook import main as hook_main

        sys.exit(hook_main(args[1:]))
    from reconciler.cli.app import app

    app(args=args, prog_name="dst")
