"""``dst hooks install | uninstall``: put dst's pre-push gate into a repository's git hooks.

A typer sub-application; ``cli.py`` mounts it as ``dst hooks``. The file work is
in :mod:`reconciler.git.hooks`; this module parses options, renders, and leaves
exit codes to :func:`reconciler.cli.app._guarded` (0 done or nothing to do, 2 not a
repository / a legacy hook in the way).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

# Created before importing reconciler.cli.app, which mounts this object as `dst hooks` when it
# loads: whichever of the two modules is imported first, the other then finds it.
hooks_app = typer.Typer(
    no_args_is_help=True,
    help="Install or remove the git pre-push hook that gates lens changes before they leave.",
)

from reconciler.cli.app import Format, FormatOpt, RepoOpt, _guarded, _runtime  # noqa: E402
from reconciler.git import hooks  # noqa: E402


def _emit(command: str, change: hooks.HookChange, fmt: Format) -> int:
    if fmt is Format.json:
        obj = {"schema_version": 1, "command": command, "exit_code": 0, **change.record()}
        print(json.dumps(obj, indent=2))
    else:
        print(change.describe())
    return 0


def _hooks_dir(repo: Path | None) -> Path:
    git_repo = _runtime(repo).repo
    return hooks.hooks_dir(Path(git_repo.workdir or git_repo.path))


@hooks_app.command()
def install(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> None:
    """Install the pre-push gate; an existing hook is kept as pre-push.legacy and runs first."""

    def body() -> int:
        return _emit("hooks install", hooks.install(_hooks_dir(repo)), fmt)

    _guarded("hooks install", fmt, body)


@hooks_app.command()
def uninstall(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> None:
    """Remove the pre-push gate and restore pre-push.legacy, if dst kept one."""

    def body() -> int:
        return _emit("hooks uninstall", hooks.uninstall(_hooks_dir(repo)), fmt)

    _guarded("hooks uninstall", fmt, body)
