"""The ``dst`` console script: a fast path for git hooks, typer for everything else.

A pre-push hook runs on every ``git push``; importing typer, rich, SQLAlchemy and
sqlglot there would cost more than the work of a push that touches no lens. So
``dst hook-impl …`` is dispatched here, before the command-line framework loads.
Both paths run inside the one error boundary (:mod:`reconciler.cli.boundary`).
``dst --help`` (and ``dst`` alone) is printed here too, from the command table
(:mod:`reconciler.cli.commands`), without typer: drawing it through typer's rich
help cost three times the import of typer. ``dst status`` and ``dst ask`` of a
plain argument shape run before typer too (:mod:`reconciler.cli.lean`): building
a command through typer cost more than their own work.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run ``dst`` with ``argv`` (default ``sys.argv[1:]``).

    ``dst`` and ``dst --help`` print the command list (exit 2 and 0).

    Raises:
        SystemExit: always, with the exit code (0 ok, 1 blocked, 2 bad input,
            3 unexpected, 130 interrupted).
    """
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook-impl"]:
        # lazy: the hook's fast path must not load typer (or anything the app imports)
        from reconciler.cli.hook import main as hook_main

        sys.exit(hook_main(args[1:]))
    # lazy: the command table, after the hook's fast path (which needs nothing of it)
    from reconciler.cli.commands import is_top_level_help, top_level_help

    if is_top_level_help(args):
        import shutil  # lazy: the terminal's width, for the help alone

        sys.stdout.write(top_level_help(shutil.get_terminal_size().columns))
        sys.stdout.flush()
        # as a command-line framework does: asked for help, 0; no command at all, a usage error
        sys.exit(0 if args else 2)
    # lazy: `dst status` and `dst ask` of a plain shape run here, before typer builds them
    from reconciler.cli.lean import main as lean_main

    lean_main(args)
    # lazy: importing the app loads typer and every command module; the hook needs neither
    from reconciler.cli.app import app

    app(args=args, prog_name="dst")
