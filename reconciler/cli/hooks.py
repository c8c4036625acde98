"""``dst hooks install | uninstall``: put dst's pre-push gate into a repository's git hooks.

A typer sub-application; :mod:`reconciler.cli.app` mounts it as ``dst hooks``. The
file work is in :mod:`reconciler.git.hooks`; this module parses options and
renders; errors become exit codes at the boundary (0 done or nothing to do, 2 not
a repository / a legacy hook in the way).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.git import hooks

hooks_app = typer.Typer(
    no_args_is_help=True,
    help="Install or remove the git pre-push hook that gates lens changes before they leave.",
)


def _emit(command: str, change: hooks.HookChange, fmt: Format) -> int:
    if fmt is Format.json:
        obj = {"schema_version": 1, "command": command, "exit_code": 0, **change.record()}
        print(json.dumps(obj, indent=2))
    else:
        print(change.describe())
    return 0


def _hooks_dir(repo: Path | None) -> Path:
    git_repo = runtime(repo).repo
    return hooks.hooks_dir(Path(git_repo.workdir or git_repo.path))


@hooks_app.command()
def install(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> int:
    """Install the pre-push gate; an existing hook is kept as pre-push.legacy and runs first."""
    return _emit("hooks install", hooks.install(_hooks_dir(repo)), fmt)


@hooks_app.command()
def uninstall(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> int:
    """Remove the pre-push gate and restore pre-push.legacy, if dst kept one."""
    return _emit("hooks uninstall", hooks.uninstall(_hooks_dir(repo)), fmt)
