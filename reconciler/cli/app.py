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

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from reconciler import __version__
from reconciler.cli.ask import ask
from reconciler.cli.boundary import Invocation, guard
from reconciler.cli.certify import certify
from reconciler.cli.ci import ci_app
from reconciler.cli.coverage import coverage
from reconciler.cli.evals import evals_app
from reconciler.cli.explain import explain
from reconciler.cli.gc import gc
from reconciler.cli.hooks import hooks_app
from reconciler.cli.init import init
from reconciler.cli.interop import export_app, import_app
from reconciler.cli.log import log
from reconciler.cli.mutate import mutate
from reconciler.cli.options import COMMAND_KEY, FORMAT_KEY
from reconciler.cli.reconcile import apply, plan, test
from reconciler.cli.report import report
from reconciler.cli.seed import seed
from reconciler.cli.serving import rollback, status
from reconciler.cli.sync import sync_app
from reconciler.cli.validate import validate_app
from reconciler.cli.watch import watch

# The command-line framework's own control flow, which it prints itself: ``--help``
# and ``typer.Exit``, an aborted prompt, a usage error (typer's click exceptions).
_FRAMEWORK = (typer.Exit, typer.Abort, typer.TyperException)


def _invocation(ctx: typer.Context) -> Invocation:
    """The invoked command and its ``--format``, as its ``--format`` callback recorded them."""
    command = ctx.meta.get(COMMAND_KEY) or ctx.invoked_subcommand or ""
    return Invocation(str(command), str(ctx.meta.get(FORMAT_KEY, "text")))


class DstGroup(TyperGroup):
    """The root group: runs whichever command is invoked inside the error boundary."""

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
    help="dst: plan, gate, promote and roll back text-to-SQL lenses from git.",
)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        print(f"dst {__version__}")
        raise typer.Exit(0)


# Registration order is the order `dst --help` lists the commands in.
app.add_typer(import_app, name="import")
app.command("seed")(seed)
app.command("plan")(plan)
app.command("apply")(apply)
app.command("test")(test)
app.command("status")(status)
app.command("rollback")(rollback)
app.add_typer(hooks_app, name="hooks")
app.add_typer(sync_app)
app.add_typer(ci_app, name="ci")
app.command("watch")(watch)
app.command("coverage")(coverage)
app.add_typer(validate_app)
app.command("log")(log)
app.command("gc")(gc)
app.command("certify")(certify)
app.command("ask")(ask)
app.command("explain")(explain)
app.command("report")(report)
app.command("init")(init)
app.command("mutate")(mutate)
app.add_typer(export_app, name="export")
app.add_typer(evals_app)
