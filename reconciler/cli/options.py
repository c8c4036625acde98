"""Options shared by the ``dst`` commands, as annotated types a command's signature names.

``--format`` also tells the error boundary (:mod:`reconciler.cli.boundary`) how
the command was invoked: its callback records the command's name and the format
in the click context's ``meta`` (shared by every context of one invocation), so
an error raised later is reported as that command's, in that format.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from reconciler.cli.formats import Format as Format

COMMAND_KEY = "dst.command"
FORMAT_KEY = "dst.format"

E = TypeVar("E", bound=Enum)


def command_name(ctx: typer.Context) -> str:
    """The command as typed after ``dst``: the names of the contexts below the root.

    ``dst hooks install`` gives ``hooks install``; a context with no parent gives its
    own name.
    """
    names: list[str] = []
    node: Any = ctx  # its parents are typer's vendored click contexts, a private type
    while node.parent is not None:
        names.append(node.info_name or "")
        node = node.parent
    return " ".join(reversed(names)) if names else str(ctx.info_name or "")


def record_invocation(ctx: typer.Context, value: E) -> E:
    """``--format`` callback: note the command and its format for the error boundary."""
    ctx.meta[COMMAND_KEY] = command_name(ctx)
    ctx.meta[FORMAT_KEY] = str(value.value)
    return value


RepoOpt = Annotated[Path | None, typer.Option("--repo", help="Repository path (default: cwd).")]
FormatOpt = Annotated[
    Format,
    # eager: recorded before any other option's check can fail, so that error is JSON too
    typer.Option(
        "--format",
        help="text or json (json on stdout).",
        callback=record_invocation,
        is_eager=True,
    ),
]


def _warehouse_url(value: str | None) -> str | None:
    """``--warehouse`` checked when parsed: a URL that does not parse is exit 2 at once,
    even for a command that never connects (an apply with nothing stale)."""
    if value is None:
        return None
    # lazy: URL parsing loads SQLAlchemy, which `dst --help` does not need
    from reconciler.errors import UsageError
    from reconciler.warehouse.urls import url_facts

    try:
        url_facts(value)
    except ValueError:
        raise UsageError(
            "--warehouse is not a SQLAlchemy URL",
            fix="write it as dialect+driver://user@host/database, e.g. "
            "postgresql://analyst@db:5432/analytics or duckdb:///path/to/file.duckdb",
        ) from None
    return value


WarehouseOpt = Annotated[
    str | None,
    typer.Option(
        "--warehouse",
        help="SQLAlchemy URL; overrides DST_WAREHOUSE_URL, lens and dst.yaml.",
        callback=_warehouse_url,
    ),
]
EnvOpt = Annotated[
    str | None,
    typer.Option(
        "--env",
        help="Environment from dst.yaml environments: (its refs and warehouse); "
        "default: the unnamed one.",
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress on stderr (a bar on a terminal, else lines)."),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        min=1,
        max=64,
        help="Answers verified at once (default: the lens's jobs:, else 1).",
    ),
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option("--profile", help="Write cProfile stats of the command to this file."),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Call the smart and command tiers afresh instead of replaying .dst/cache/.",
    ),
]
