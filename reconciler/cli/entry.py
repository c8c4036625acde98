"""The ``dst`` console script: a fast path for git hooks, typer for everything else.

A pre-push hook runs on every ``git push``; importing typer, rich, SQLAlchemy and
sqlglot there would cost more than the work of a push that touches no lens. So
``dst hook-impl …`` is dispatched here, before the command-line framework loads.
Both paths run inside the one error boundary (:mod:`reconciler.cli.boundary`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run ``dst`` with ``argv`` (default ``sys.argv[1:]``).

    Raises:
        SystemExit: always, with the exit code (0 ok, 1 blocked, 2 bad input,
            3 unexpected, 130 interrupted).
    """
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook-impl"]:
        # lazy: the hook's fast path must not load typer (or anything the app imports)
        from reconciler.cli.hook import main as hook_main

        sys.exit(hook_main(args[1:]))
    # lazy: importing the app loads typer and every command module; the hook needs neither
    from reconciler.cli.app import app

    app(args=args, prog_name="dst")
