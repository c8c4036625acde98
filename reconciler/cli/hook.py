"""The pre-push gate: which lenses a push changes, then the dry-run reconcile for them.

``dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]`` is what the installed
``.git/hooks/pre-push`` script execs. Git runs that hook after it has talked to
the remote and before it sends anything; a non-zero exit stops the whole push
(githooks(5), "pre-push"). The hook gets the remote's name and URL as arguments
(both the URL when the push names no configured remote) and one line per ref on
stdin; :mod:`reconciler.git.push` reads them and decides, line by line, which
lenses each pushed ref changes (its module docstring has the table). Any
failing line fails the push.

When no lens changed the hook exits 0 having imported only the standard library
and pygit2; the reconcile (SQLAlchemy, sqlglot, pydantic …) is imported only when
a lens changed. The gate itself is :func:`reconciler.reconcile.reconcile` with
``dry_run=True``: the same plan → suite → self-test → gate tuple as ``dst
apply``, without the promote step. Errors go through the command line's one
boundary (:func:`reconciler.cli.boundary.guard`) in fail-closed mode: a hook
that cannot decide blocks the push, saying why.

``dst hook-impl pre-commit-framework`` is the same gate for the pre-commit
framework's ``pre-push`` stage, which hands over one range per run in
``PRE_COMMIT_FROM_REF`` / ``PRE_COMMIT_TO_REF`` (and ``PRE_COMMIT_REMOTE_NAME``)
instead of stdin; with no range it checks every lens at ``HEAD``.

Bypasses: ``DST_SKIP=1`` makes the gate stand aside and say so;
``git push --no-verify`` skips every pre-push hook without running it.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.cli.boundary import Invocation, guard
from reconciler.errors import DstError, UsageError
from reconciler.git.push import (
    RefCheck,
    open_pushing_repo,
    parse_push_lines,
    scope_range,
    scope_ref,
)

BYPASS_HINT = (
    "to push anyway: `git push --no-verify` skips every pre-push hook; "
    "DST_SKIP=1 skips only dst's gate and says so"
)
USAGE = (
    "usage: dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]   (ref lines on stdin, from git)\n"
    "       dst hook-impl pre-commit-framework               (range from PRE_COMMIT_*_REF)"
)
PREFIX = "dst pre-push"
HOOK = Invocation("pre-push", fail_closed=True, hint=BYPASS_HINT)
_TRUE = frozenset({"1", "true", "yes", "on"})


def _say(message: str) -> None:
    print(f"{PREFIX}: {message}", file=sys.stderr, flush=True)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_gate(repo: Any, checks: Sequence[RefCheck]) -> int:
    """Print each check's note, then gate the lenses to verify, one candidate commit at a time.

    Lenses asked for by several refs at the same commit are gated once; an error at
    one commit fails that commit and the others are still gated. The reconcile and
    its dependencies are imported here, only when some lens is due.

    Args:
        repo: the ``pygit2.Repository`` being pushed from.
        checks: what each pushed ref asks to verify.

    Returns:
        0 when every gate passes (or there is nothing to check), 1 otherwise.

    Raises:
        StateError: this clone cannot say what serves (``dst sync --fetch`` first).
    """
    due: dict[str, set[str]] = {}
    for check in checks:
        _say(f"{check.label}: {check.note}")
        if check.commit is not None and check.lenses:
            due.setdefault(check.commit, set()).update(check.lenses)
    refused = [c for c in checks if c.refused is not None]
    if refused:
        # a forged record fails the push before any gate runs: nothing would make it pass
        _say(
            f"push rejected: {len(refused)} ref(s) under refs/dst/ are not dst records of their "
            "kind; push serving state with `dst sync --push`, which pushes what dst recorded; "
            f"{BYPASS_HINT}"
        )
        return 1
    if not due:
        return 0
    # lazy: the reconcile's dependencies load only when a push changes a lens
    from reconciler.cli.common import print_lines
    from reconciler.cli.progress import progress_for
    from reconciler.context import Runtime
    from reconciler.git.sync import require_known
    from reconciler.reconcile import reconcile
    from reconciler.render.text import to_lines

    require_known(repo)
    rt = Runtime(repo, progress=_progress)
    failed: list[str] = []
    try:
        for commit, lenses in due.items():
            names = sorted(lenses)
            _say(f"gating {', '.join(names)} at {commit[:12]} (dry run)")
            try:
                with progress_for(rt, quiet=False) as clock:
                    report = reconcile(rt, to=commit, only=names, dry_run=True)
            except DstError as exc:
                # this commit fails; the other pushed commits are still gated and reported
                _say(f"error: {exc.render()}")
                failed.append(commit)
                continue
            print_lines(to_lines(report, seconds=clock.seconds), sys.stderr)
            if report.exit_code != 0:
                failed.append(commit)
    finally:
        rt.close()
    if failed:
        _say(
            f"push rejected: the lens gate did not pass at {', '.join(c[:12] for c in failed)} "
            f"(the report above says why and what to do); {BYPASS_HINT}",
        )
        return 1
    return 0


STDIN_S = 30.0
"""How long the hook waits for git's ref list to end (seconds; ``DST_HOOK_STDIN_S``)."""


def stdin_bound(env: Mapping[str, str]) -> float:
    """``DST_HOOK_STDIN_S`` as seconds (default :data:`STDIN_S`).

    Raises:
        UsageError: it is set to something that is not a positive number.
    """
    raw = env.get("DST_HOOK_STDIN_S", "").strip()
    if not raw:
        return STDIN_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < 86400:
        raise UsageError(
            f"DST_HOOK_STDIN_S={raw!r} is not a number of seconds",
            fix="set it to a positive number such as 30, or unset it",
        )
    return value


def read_refs(fd: int, bound_s: float) -> bytes:
    """Everything on ``fd`` up to end of file, which must come within ``bound_s`` seconds.

    Git writes its ref lines and closes the hook's stdin at once; a caller that keeps
    the pipe open would otherwise hold the push for ever.

    Raises:
        UsageError: the end did not come in time (the push fails closed).
    """
    deadline = time.monotonic() + bound_s
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            raise UsageError(
                f"stdin did not end within {bound_s:g} s: git writes its ref list and closes "
                "the hook's stdin at once, so whatever runs this hook kept it open",
                fix="run the hook through `git push`, or close its stdin; DST_HOOK_STDIN_S "
                "sets the bound in seconds",
            )
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _skipped(env: Mapping[str, str]) -> bool:
    return env.get("DST_SKIP", "").strip().lower() in _TRUE


def pre_push(args: Sequence[str], stdin: int = 0) -> int:
    """``dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]``: gate what git is about to push.

    Args:
        args: the hook's arguments (the remote's name and URL), possibly empty.
        stdin: file descriptor carrying git's ref lines; a terminal is not read.

    Returns:
        0 to let the push proceed, 1 to stop it.

    Raises:
        DstError: the repository does not open, a stdin line is malformed, the
            serving state is unknown (the boundary turns it into exit 1).
    """
    if _skipped(os.environ):
        _say("DST_SKIP is set: the lens gate is SKIPPED for this push")
        return 0
    if os.isatty(stdin):
        _say(
            "stdin is a terminal, not git's ref list: nothing to check. Git runs this "
            "hook on `git push` (install it with `dst hooks install`)",
        )
        return 0
    data = read_refs(stdin, stdin_bound(os.environ))
    remote = args[0] if args else None
    repo = open_pushing_repo(os.environ, os.getcwd())
    checks = [scope_ref(repo, p, remote) for p in parse_push_lines(data)]
    if not checks:
        _say("no refs pushed: nothing to check")
        return 0
    return run_gate(repo, checks)


def pre_commit_framework(env: Mapping[str, str]) -> int:
    """``dst hook-impl pre-commit-framework``: the gate under pre-commit's pre-push stage.

    Args:
        env: the environment; reads ``PRE_COMMIT_FROM_REF``, ``PRE_COMMIT_TO_REF``
            and ``PRE_COMMIT_REMOTE_NAME`` (set by pre-commit for each pushed ref),
            ``GIT_DIR`` and ``DST_SKIP``.

    Returns:
        0 to let the push proceed, 1 to stop it.

    Raises:
        DstError: as :func:`pre_push`; also a ``PRE_COMMIT_TO_REF`` that is not a commit.
    """
    if _skipped(env):
        _say("DST_SKIP is set: the lens gate is SKIPPED for this push")
        return 0
    repo = open_pushing_repo(env, os.getcwd())
    to_rev = env.get("PRE_COMMIT_TO_REF") or ""
    from_rev = env.get("PRE_COMMIT_FROM_REF") or None
    if not to_rev:
        check = scope_range(repo, None, "HEAD")
        check = RefCheck(
            "HEAD", check.commit, check.lenses, "no push range from pre-commit: " + check.note
        )
    else:
        check = scope_range(repo, from_rev, to_rev)
    remote = env.get("PRE_COMMIT_REMOTE_NAME")
    if remote:
        check = RefCheck(f"{check.label} → {remote}", check.commit, check.lenses, check.note)
    return run_gate(repo, [check])


def main(argv: list[str]) -> int:
    """Entry point for ``dst hook-impl …`` (dispatched before the CLI framework loads).

    Runs the hook inside the command line's error boundary in fail-closed mode
    (:mod:`reconciler.cli.boundary`): any error blocks the push with its message.

    Args:
        argv: the arguments after ``hook-impl``: ``["pre-push", REMOTE, URL]`` or
            ``["pre-commit-framework"]``.

    Returns:
        The exit code: 0 the push may proceed, 1 it must not (the gate failed, or
        the hook could not decide), 2 usage error, 130 interrupted.
    """
    mode, rest = (argv[0], argv[1:]) if argv else ("", [])
    if mode == "pre-push" and len(rest) <= 2:
        return guard(lambda: pre_push(rest), lambda: HOOK)
    if mode == "pre-commit-framework" and not rest:
        return guard(lambda: pre_commit_framework(os.environ), lambda: HOOK)
    print(USAGE, file=sys.stderr)
    return 2
