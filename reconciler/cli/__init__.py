"""The command line: the typer app, its commands, the pre-push hook's entry, progress.

The console script is :func:`reconciler.cli.entry.main`; ``dst hook-impl`` is
dispatched there before typer loads. Only this package imports typer and rich.
"""
