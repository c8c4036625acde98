"""Every ``dst`` command, where it lives and its one-line summary; the top-level help.

``dst --help`` (and ``dst`` alone) lists the commands. Drawing that list through
typer means importing typer, every command module (to read each docstring) and
typer's rich help renderer — several times the cost of the import of typer
itself. So, as ``git help`` does, the list is a table here and
:func:`top_level_help` prints it as plain text before any framework loads. Each
summary is the first paragraph of the command's docstring (or its typer app's
``help``); ``tests/test_cli_help.py`` fails when the two differ.

This module imports nothing beyond the standard library.
"""

from __future__ import annotations

from typing import NamedTuple

PROGRAM = "dst"
DESCRIPTION = "dst: plan, gate, promote and roll back text-to-SQL lenses from git."
VERSION_HELP = "Print the version."


class Command(NamedTuple):
    """One command: its name, ``"module:attribute"`` (a function or a typer app), its summary."""

    name: str
    target: str
    summary: str


# In the order `dst --help` lists them (single commands before command groups, as
# typer lists them when it draws a group's help).
TABLE: tuple[Command, ...] = (
    Command(
        "seed",
        "reconciler.cli.seed:seed",
        "Build the embedded DuckDB warehouse (.dst/) from every lens's seeds/*.csv.",
    ),
    Command(
        "plan",
        "reconciler.cli.reconcile:plan",
        "Show the plan: changed assets, stale answers, self-test. Runs nothing.",
    ),
    Command(
        "apply",
        "reconciler.cli.reconcile:apply",
        "Plan → gate → self-test → promote, or roll the whole apply back.",
    ),
    Command(
        "test",
        "reconciler.cli.reconcile:test",
        "Re-verify the whole active corpus of serving versions; green answers re-stamp.",
    ),
    Command(
        "status",
        "reconciler.cli.serving:status",
        "Serving version and last attempt of every lens in every environment "
        "(or ``--env``'s), and any lock file left on refs/dst/.",
    ),
    Command(
        "rollback",
        "reconciler.cli.serving:rollback",
        "Serve an earlier deployment's content again, as a new deployment commit.",
    ),
    Command(
        "watch",
        "reconciler.cli.watch:watch",
        "Re-plan and gate the working tree on every edit; re-verify serving lenses on a schedule.",
    ),
    Command(
        "coverage",
        "reconciler.cli.coverage:coverage",
        "Asset coverage (bound by a certified answer) and case coverage (metrics a case names).",
    ),
    Command(
        "log",
        "reconciler.cli.log:log",
        "Deployments, attempts and verifications of a lens, newest first, with its trend.",
    ),
    Command(
        "gc",
        "reconciler.cli.gc:gc",
        "Prune attempts and verifications to the newest N; serving and retired histories stay.",
    ),
    Command(
        "certify",
        "reconciler.cli.certify:certify",
        "Certify an answer: generate (or read) its SQL, execute it, show both, ask, write.",
    ),
    Command(
        "ask",
        "reconciler.cli.ask:ask",
        "Answer a question the way production does: certified match, else generation + gates.",
    ),
    Command(
        "mcp",
        "reconciler.cli.mcp:mcp",
        "Serve the lenses to AI agents over MCP (stdio, or --http): warm, read-only.",
    ),
    Command(
        "explain",
        "reconciler.cli.explain:explain",
        "Print the request (and each tier's payload) the suite would send for ANSWER.",
    ),
    Command(
        "report",
        "reconciler.cli.report:report",
        "Write a self-contained HTML report of a run: plan, results, divergences, scores.",
    ),
    Command(
        "init",
        "reconciler.cli.init:init",
        "Scaffold a dst repository and an example lens that validates; print the next steps.",
    ),
    Command(
        "mutate",
        "reconciler.cli.mutate:mutate",
        "Mutate a lens's assets in a scratch clone and report how many mutants the gate blocks.",
    ),
    Command(
        "import",
        "reconciler.cli.interop:import_app",
        "Turn other semantic layers into lenses.",
    ),
    Command(
        "hooks",
        "reconciler.cli.hooks:hooks_app",
        "Install or remove the git pre-push hook that gates lens changes before they leave.",
    ),
    Command(
        "sync",
        "reconciler.cli.sync:sync",
        "Fetch then push serving state (refs/dst/) with a remote; --fetch or --push for one.",
    ),
    Command(
        "ci",
        "reconciler.cli.ci:ci_app",
        "GitHub Actions: check pull requests, apply on the default branch.",
    ),
    Command(
        "validate",
        "reconciler.cli.validate:validate",
        "Check lens files in the working tree (no git): for editors, pre-commit.",
    ),
    Command(
        "export",
        "reconciler.cli.interop:export_app",
        "Write lenses in other semantic-layer formats.",
    ),
    Command(
        "evals",
        "reconciler.cli.evals:evals_app",
        "Behavioural cases: migrate legacy value cases.",
    ),
)


def is_top_level_help(args: list[str]) -> bool:
    """Whether ``args`` (``sys.argv[1:]``) asks for the top-level help: ``[]`` or ``["--help"]``.

    Anything else — a command, ``--version``, a command's own ``--help`` — goes to typer.
    """
    return args in ([], ["--help"])


def _rows(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Two columns: each name padded to the longest, its text wrapped to ``width`` characters."""
    import textwrap  # lazy: every command imports this module, only the help wraps text

    pad = max(len(name) for name, _ in rows) + 2
    lines = []
    for name, text in rows:
        wrapped = textwrap.wrap(text, max(width - pad - 2, 20), break_on_hyphens=False) or [""]
        lines.append(f"  {name.ljust(pad)}{wrapped[0]}".rstrip())
        lines.extend(" " * (pad + 2) + more for more in wrapped[1:])
    return lines


def top_level_help(width: int = 80) -> str:
    """The text of ``dst --help``: usage, description, two options, each command of :data:`TABLE`.

    Args:
        width: wrap the summaries to this many columns (at least 40 is sensible).

    Returns:
        Plain text (no colour, no box drawing), ending in a newline.
    """
    import textwrap  # lazy: as in _rows

    options = [("--version", VERSION_HELP), ("--help", "Show this message and exit.")]
    lines = [
        f"Usage: {PROGRAM} [OPTIONS] COMMAND [ARGS]...",
        "",
        *textwrap.wrap(DESCRIPTION, width),
        "",
        "Options:",
        *_rows(options, width),
        "",
        "Commands:",
        *_rows([(c.name, c.summary) for c in TABLE], width),
    ]
    return "\n".join(lines) + "\n"
