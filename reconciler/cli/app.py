"""The ``dst`` typer app: built here, its commands registered, nothing else.

Each command lives in its own module (:mod:`reconciler.cli.reconcile` for
``plan``/``apply``/``test``, :mod:`reconciler.cli.serving` for ``status`` and
``rollback`` …); those modules import the shared options and helpers
(:mod:`reconciler.cli.options`, :mod:`reconciler.cli.common`), never this one.
A command parses its options, calls typed functions, renders, and returns the
exit code of what it rendered; errors propagate to the one boundary
(:mod:`reconciler.cli.boundary`), which :class:`DstGroup` wraps once around
every command.

Exit codes (STYLE §4, DESIGN §6): 0 ok or nothing to do; 1 gate blocked, stood
down, divergence, or a lost compare-and-swap (re-plan); 2 usage, configuration or
bad input; 3 unexpected (traceback written to a log file whose path is printed);
130 interrupted. Rendering never decides the exit code.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from reconciler import __version__
from reconciler.cli.boundary import Invocation, guard
from reconciler.cli.commands import DESCRIPTION, TABLE, VERSION_HELP
from reconciler.cli.options import COMMAND_KEY, FORMAT_KEY

# Every command as ``(name, "module:attribute")``, in the order `dst --help` lists
# them (:data:`reconciler.cli.commands.TABLE`). A command's module is imported when
# that command runs (or its help is drawn), so `dst status` never loads what
# `dst ask` or `dst ci` need.
COMMANDS: tuple[tuple[str, str], ...] = tuple((c.name, c.target) for c in TABLE)


def load_command(name: str, target: str) -> Any:
    """The click command for ``target`` (``"module:attribute"``: a function or a typer app).

    Returns:
        A ``typer.core.TyperCommand`` for a function, a ``TyperGroup`` for an app,
        named ``name``.
    """
    module, attribute = target.split(":")
    obj = getattr(importlib.import_module(module), attribute)
    command: Any
    if isinstance(obj, typer.Typer):
        command = typer.main.get_group(obj)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(obj)
        command = typer.main.get_command(single)
    command.name = name
    return command


# The command-line framework's own control flow, which it prints itself: ``--help``
# and ``typer.Exit``, an aborted prompt, a usage error (typer's click exceptions).
_FRAMEWORK = (typer.Exit, typer.Abort, typer.TyperException)


def _invocation(ctx: typer.Context) -> Invocation:
    """The invoked command and its ``--format``, as its ``--format`` callback recorded them."""
    command = ctx.meta.get(COMMAND_KEY) or ctx.invoked_subcommand or ""
    return Invocation(str(command), str(ctx.meta.get(FORMAT_KEY, "text")))


class DstGroup(TyperGroup):
    """The root group: runs whichever command is invoked inside the error boundary.

    Commands named in :data:`COMMANDS` load on first use; any command registered on
    :data:`app` directly is listed after them.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command name, :data:`COMMANDS` first, in registration order."""
        lazy = [name for name, _ in COMMANDS]
        return [*lazy, *(name for name in super().list_commands(ctx) if name not in lazy)]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """Resolve ``args[0]``; an unknown name loads every command first, for the suggestion."""
        if args and args[0] not in self.commands and args[0] not in dict(COMMANDS):
            for name in self.list_commands(ctx):
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, importing its module the first time; ``None`` if unknown."""
        if cmd_name not in self.commands:
            target = dict(COMMANDS).get(cmd_name)
            if target is None:
                return None
            self.commands[cmd_name] = load_command(cmd_name, target)
        return self.commands[cmd_name]

    def invoke(self, ctx: Any) -> Any:
        """Invoke the command; exit with the code it returned or the boundary chose.

        ``ctx`` is a ``typer.Context``: its base, typer's vendored click context, is private.

        Raises:
            typer.Exit: always, carrying the exit code.
        """

        def run() -> int:
            try:
                code = super(DstGroup, self).invoke(ctx)
            except typer.Abort as exc:
                # Ctrl-C at a prompt (`dst certify`) reaches here as the framework's Abort
                if isinstance(exc.__context__, KeyboardInterrupt):
                    raise KeyboardInterrupt from None
                raise
            return code if isinstance(code, int) else 0

        raise typer.Exit(guard(run, lambda: _invocation(ctx), passthrough=_FRAMEWORK))


app = typer.Typer(
    cls=DstGroup,
    add_completion=False,
    no_args_is_help=True,
    help=DESCRIPTION,
)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help=VERSION_HELP)] = False,
) -> None:
    if version:
        print(f"dst {__version__}")
        raise typer.Exit(0)
