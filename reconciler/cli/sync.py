"""The ``dst sync`` command: share ``refs/dst/`` with a remote.

``sync_app`` is a typer app holding the one command; :mod:`reconciler.cli.app`
merges it into the main app with ``app.add_typer(sync_app)`` (no name, so the command is
``dst sync``). The sync work is in :mod:`reconciler.git.sync`; this module parses
options and renders.

Exit codes: 0 in sync; 1 a lens was rejected by the remote or diverged from it
(re-plan); 2 no such remote or git failed (the message names the remote and
lists those configured).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt

if TYPE_CHECKING:
    from reconciler.git.sync import SyncReport

sync_app = typer.Typer()


@sync_app.command("sync")
def sync(
    remote: Annotated[
        str, typer.Option("--remote", help="Remote to share refs/dst/ with.")
    ] = "origin",
    push: Annotated[
        bool, typer.Option("--push", help="Only push local serving state (never forced).")
    ] = False,
    fetch: Annotated[
        bool, typer.Option("--fetch", help="Only fetch, fast-forwarding local serving state.")
    ] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Fetch then push serving state (refs/dst/) with a remote; --fetch or --push for one."""
    # lazy: reconciler.git.sync loads the engines, which `dst --help` does not need
    from reconciler.git.sync import synchronize

    rt = runtime(repo)
    both = push == fetch
    report = synchronize(rt.repo, remote, do_fetch=fetch or both, do_push=push or both)
    if fmt is Format.json:
        print(json.dumps(report.record(), indent=2))
    else:
        for line in render_text(report):
            print(line)
    return report.exit_code


def render_text(report: SyncReport) -> list[str]:
    """Text lines for a sync report: one per ref (and its fix), the notes, a tally."""
    # lazy: reconciler.git.sync loads the engines, which `dst --help` does not need
    from reconciler.git.sync import tally

    lines = []
    for r in report.refs:
        lines.append(f"{r.phase}: {r.message}")
        if r.fix:
            lines.append(f"  fix: {r.fix}")
    lines += list(report.messages)
    counts = ", ".join(f"{n} {action}" for action, n in tally(report).items())
    lines.append(f"sync {report.remote}: {counts or 'no serving state on either side'}")
    return lines
