"""Installing and removing dst's git pre-push hook (file operations only).

The installed hook is a short POSIX ``sh`` script (:data:`PRE_PUSH_SCRIPT`, the
same text as ``hooks/pre-push`` in the project) that hands over to
``dst hook-impl pre-push``. When every pushed ref is a fast-forward of a branch
whose ``lenses/`` tree is the same on both sides, the script answers by itself
(two ``git`` calls per ref) and dst is not started; every other stdin shape goes
to dst on the same bytes. It is recognised by its :data:`MARKER` line, so
re-installing is idempotent and dst never mistakes its own script for someone
else's. A hook that was already there is kept as ``pre-push.legacy``; the
script runs it first, feeding it the very bytes git wrote to stdin, and stops
the push if it fails. Uninstalling removes dst's script and puts the legacy
hook back.

The hooks directory is whatever git itself uses: ``git rev-parse --git-path
hooks`` honours ``core.hooksPath`` and resolves linked worktrees to the shared
directory.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reconciler.errors import UsageError

HOOK_NAME = "pre-push"
LEGACY_SUFFIX = ".legacy"
MARKER = "# dst-managed-hook"

PRE_PUSH_SCRIPT = """\
#!/bin/sh
# dst-managed-hook: written by `dst hooks install`, removed by `dst hooks uninstall`.
#
# Gates the lenses a push changes (a dry-run `dst apply` of the pushed commits).
# Git passes the remote's name and URL as arguments and one line per pushed ref
# on stdin. A hook that was here before dst is kept as pre-push.legacy and runs
# first, on the same stdin. Bypass: DST_SKIP=1 (dst says so), or
# `git push --no-verify` (skips every pre-push hook).
#
# Fast path: a push whose every ref is a fast-forward of a branch with the same
# lenses/ tree on both sides (or no lenses/ on either) changes no lens, and is let
# through here without starting dst. Everything else goes to dst on the same
# bytes: deletions, new refs, tags, force pushes, objects this clone lacks, refs
# under refs/dst/, DST_SKIP, and any line not in git's exact four-field shape.
note() {
    since=${4%"${4#????????????}"}
    notes="${notes}dst pre-push: $1 → $3: no lens changed (since $since), dst not started
"
}

lenses_unchanged() {
    [ -z "${DST_SKIP:-}" ] || return 1
    notes=
    while :; do
        IFS= read -r line || { [ -z "$line" ] && break; return 1; }
        set -f
        # shellcheck disable=SC2086 # split on purpose: git writes four fields
        set -- $line
        set +f
        [ "$#" -eq 4 ] && [ "$1 $2 $3 $4" = "$line" ] || return 1
        case $1 in refs/dst/* | refs/tags/*) return 1 ;; esac
        case $3 in refs/dst/*) return 1 ;; refs/heads/*) ;; *) return 1 ;; esac
        for oid in "$2" "$4"; do
            case ${#oid} in 40 | 64) ;; *) return 1 ;; esac
            case $oid in *[!0-9a-f]*) return 1 ;; *[!0]*) ;; *) return 1 ;; esac
        done
        # One git for the common case: both ids as commits, both lenses/ trees (the
        # slash: a tree only), and their merge bases (the remote's id is one when it is
        # an ancestor).
        seen=$(git rev-parse "$2^{commit}" "$4^{commit}" "$2:lenses/" "$4:lenses/" \\
            "$4...$2" </dev/null 2>/dev/null) && {
            {
                read -r local_commit
                read -r remote_commit
                read -r local_lenses
                read -r remote_lenses
            } <<EOF
$seen
EOF
            [ "$local_commit" = "$2" ] && [ "$remote_commit" = "$4" ] || return 1
            [ "$local_lenses" = "$remote_lenses" ] || return 1
            case "
$seen
" in
                *"
^$4
"*) ;;
                *) return 1 ;; # not a fast-forward: dst decides
            esac
            note "$@"
            continue
        }
        # It failed: an object missing, or no lenses/ tree on a side. One fact at a time.
        # not an ancestor (a force push) or not here (unseen history): dst decides
        git merge-base --is-ancestor "$4" "$2" </dev/null >/dev/null 2>&1 || return 1
        kinds=$(git cat-file --batch-check='%(objecttype) %(objectname)' 2>/dev/null <<EOF
$2
$4
$2:lenses
$4:lenses
EOF
        ) || return 1
        {
            read -r local_kind
            read -r remote_kind
            read -r local_lenses
            read -r remote_lenses
        } <<EOF
$kinds
EOF
        [ "$local_kind" = "commit $2" ] && [ "$remote_kind" = "commit $4" ] || return 1
        case $local_lenses in
            "tree "*) [ "$local_lenses" = "$remote_lenses" ] || return 1 ;;
            "$2:lenses missing") [ "$remote_lenses" = "$4:lenses missing" ] || return 1 ;;
            *) return 1 ;;
        esac
        note "$@"
    done
    [ -n "$notes" ] || return 1
    printf '%s' "$notes" >&2
}

case $0 in */*) hook_dir=${0%/*} ;; *) hook_dir=. ;; esac
legacy="$hook_dir/pre-push.legacy"
if [ -t 0 ]; then
    # Run by hand at a terminal: nothing to copy; dst says what it expects.
    if [ -x "$legacy" ]; then
        "$legacy" "$@" || exit $?
    fi
else
    # Read git's ref list once so the legacy hook and dst get identical bytes. Git
    # closes stdin at once; a caller that keeps it open is cut off after
    # DST_HOOK_STDIN_S seconds (default 30) and the push fails.
    refs=$(mktemp "${TMPDIR:-/tmp}/dst-pre-push.XXXXXX") || exit 1
    exec 3<&0
    cat <&3 >"$refs" 3<&- &
    reader=$!
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        sleep "${DST_HOOK_STDIN_S:-30}" &
        nap=$!
        wait "$nap"
        kill "$reader" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 3<&- &
    timer=$!
    wait "$reader"
    copied=$?
    kill "$timer" 2>/dev/null
    exec 3<&-
    if [ "$copied" -ne 0 ]; then
        rm -f -- "$refs"
        echo "dst pre-push: stdin did not end within ${DST_HOOK_STDIN_S:-30} s" >&2
        exit 1
    fi
    if [ -x "$legacy" ]; then
        "$legacy" "$@" <"$refs"
        status=$?
        if [ "$status" -ne 0 ]; then
            rm -f -- "$refs"
            echo "dst pre-push: the earlier hook pre-push.legacy failed (exit $status)" >&2
            exit "$status"
        fi
    fi
    if lenses_unchanged <"$refs"; then
        rm -f -- "$refs"
        exit 0
    fi
    # Keep the copy open as stdin, then unlink it: nothing is left behind after exec.
    exec <"$refs"
    rm -f -- "$refs"
fi
if command -v dst >/dev/null 2>&1; then
    exec dst hook-impl pre-push "$@"
fi
if python3 -c "import reconciler.cli.hook" >/dev/null 2>&1; then
    exec python3 -m reconciler hook-impl pre-push "$@"
fi
echo "dst pre-push: dst is not installed here (not on PATH, not importable by python3)." >&2
echo "  fix: activate the environment dst is installed in, or push with --no-verify" >&2
exit 1
"""


@dataclass(frozen=True)
class HookChange:
    """What ``install`` or ``uninstall`` did.

    Attributes:
        hook: path of the ``pre-push`` hook.
        action: ``installed`` (new), ``updated`` (an older dst script replaced),
            ``unchanged`` (already current), ``removed``, ``not_installed``
            (uninstall found no dst script), ``foreign`` (uninstall found someone
            else's hook and left it alone).
        legacy: the ``pre-push.legacy`` path when a foreign hook was kept there
            (install) or moved back from there (uninstall), else ``None``.
    """

    hook: Path
    action: str
    legacy: Path | None = None

    def describe(self) -> str:
        """One line for the text output."""
        text = {
            "installed": f"installed the dst pre-push hook at {self.hook}",
            "updated": f"updated the dst pre-push hook at {self.hook}",
            "unchanged": f"the dst pre-push hook at {self.hook} is already current",
            "removed": f"removed the dst pre-push hook from {self.hook}",
            "not_installed": f"no dst pre-push hook at {self.hook}: nothing to remove",
            "foreign": f"{self.hook} is not dst's hook: left alone",
        }[self.action]
        if self.legacy is not None and self.action in ("installed", "updated", "unchanged"):
            text += f"; the previous hook is kept as {self.legacy.name} and runs first"
        elif self.legacy is not None and self.action == "removed":
            text += f"; restored the previous hook from {self.legacy.name}"
        return text

    def record(self) -> dict[str, str | None]:
        """The JSON fields."""
        return {
            "hook": str(self.hook),
            "action": self.action,
            "legacy": str(self.legacy) if self.legacy else None,
        }


def hooks_dir(start: Path) -> Path:
    """The directory git reads hooks from, for the repository at (or above) ``start``.

    Raises:
        UsageError: git is not installed, or ``start`` is not in a git repository.
    """
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks"],
            cwd=start,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError(
            "git is not installed (or not on PATH)", fix="install git; hooks are run by git"
        ) from None
    if done.returncode != 0:
        raise UsageError(
            f"{start}: not inside a git repository ({done.stderr.strip()})",
            fix="run dst hooks inside a git repository or pass --repo PATH",
        )
    # The answer is relative to ``start`` unless core.hooksPath is absolute.
    return (start / done.stdout.strip()).resolve()


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a hook script dst wrote (it carries :data:`MARKER`)."""
    try:
        head = path.read_bytes()[:4096]
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False
    return MARKER.encode() in head


def _make_executable(path: Path) -> None:
    mode = path.stat().st_mode
    path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _write_script(path: Path) -> None:
    tmp = path.with_name(f".{path.name}.dst-tmp")
    tmp.write_bytes(PRE_PUSH_SCRIPT.encode())
    tmp.chmod(0o755)
    os.replace(tmp, path)


def install(directory: Path) -> HookChange:
    """Install the pre-push hook into ``directory`` (see :func:`hooks_dir`).

    A foreign ``pre-push`` (file or symlink) is renamed to ``pre-push.legacy``;
    dst's own script is rewritten in place when outdated and never moved.

    Raises:
        UsageError: a foreign ``pre-push`` and a ``pre-push.legacy`` both exist, so
            keeping the hook would overwrite the older one.
    """
    directory.mkdir(parents=True, exist_ok=True)
    hook = directory / HOOK_NAME
    legacy = directory / (HOOK_NAME + LEGACY_SUFFIX)
    kept = legacy if legacy.exists() or legacy.is_symlink() else None
    if is_ours(hook):
        current = not hook.is_symlink() and hook.read_bytes() == PRE_PUSH_SCRIPT.encode()
        if current:
            _make_executable(hook)
            return HookChange(hook, "unchanged", kept)
        # An older dst script, or a symlink to one: replace it, never keep it as legacy.
        _write_script(hook)
        return HookChange(hook, "updated", kept)
    if hook.exists() or hook.is_symlink():
        if kept is not None:
            raise UsageError(
                f"{hook} is not dst's hook and {legacy.name} already exists next to it",
                fix="merge or remove one of them, then run `dst hooks install` again",
            )
        os.replace(hook, legacy)
        kept = legacy
    _write_script(hook)
    return HookChange(hook, "installed", kept)


def uninstall(directory: Path) -> HookChange:
    """Remove dst's pre-push hook from ``directory`` and restore ``pre-push.legacy``.

    A foreign hook is left alone; with no hook at all this does nothing.
    """
    hook = directory / HOOK_NAME
    legacy = directory / (HOOK_NAME + LEGACY_SUFFIX)
    if not (hook.exists() or hook.is_symlink()):
        return HookChange(hook, "not_installed")
    if not is_ours(hook):
        return HookChange(hook, "foreign")
    hook.unlink()
    if legacy.exists() or legacy.is_symlink():
        os.replace(legacy, hook)
        return HookChange(hook, "removed", legacy)
    return HookChange(hook, "removed")
