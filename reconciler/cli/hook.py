"""The pre-push gate: which lenses a push changes, then the dry-run reconcile for them.

``dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]`` is what the installed
``.git/hooks/pre-push`` script execs. Git runs that hook after it has talked to
the remote and before it sends anything; a non-zero exit stops the whole push
(githooks(5), "pre-push"). The hook gets the remote's name and URL as arguments
(both the URL when the push names no configured remote) and one line per ref on
stdin::

    <local ref> SP <local oid> SP <remote ref> SP <remote oid> LF

- ``local ref`` is the full ref name when git could expand what the user typed,
  otherwise the text as typed (``HEAD``, ``HEAD~1``, a bare oid); a deletion
  shows ``(delete)``. Only the oid is trusted here, never this name.
- ``local oid`` is what the remote ref will point at: a commit, or a tag object
  for an annotated tag. All zeros means the remote ref is being deleted.
- ``remote oid`` is what the remote ref points at now, as the remote reported
  it; all zeros when the ref is new there. It may be missing from this
  repository (someone pushed commits this clone never fetched), which is how a
  force-push over unseen history looks.

Every line decides on its own and any failing line fails the push:

====================================  ==========================================
line                                  what is checked
====================================  ==========================================
deletion (local oid all zeros)        nothing
``refs/dst/*`` on either side         nothing: serving state is pushed as recorded
remote oid present locally            lenses whose tree differs, remote → local
remote oid all zeros (new ref)        lenses the commits new to the remote touch:
                                      commits not reachable from any
                                      ``refs/remotes/<remote>/*``; with no such
                                      refs, changes since the merge base with
                                      the serving branch; every lens for new
                                      history (a root commit)
remote oid absent locally             every lens, in full ("history rewritten")
====================================  ==========================================

The serving branch is ``git config dst.servingBranch`` if set, else the branch
``refs/remotes/<remote>/HEAD`` names, else ``main``. Tags are peeled to their
commit, so a tag on a commit the remote already has adds nothing to check. Lens
directories are compared by tree id: an unchanged lens subtree has the same oid
on both sides and is never opened. When no lens changed the hook exits 0
having imported only the standard library and pygit2; the reconcile
(SQLAlchemy, sqlglot, pydantic …) is imported only when a lens changed. The
gate itself is :func:`reconciler.reconcile.reconcile` with
``dry_run=True``: the same plan → suite → self-test → gate tuple as
``dst apply``, without the promote step.

``dst hook-impl pre-commit-framework`` is the same gate for the pre-commit
framework's ``pre-push`` stage, which hands over one range per run in
``PRE_COMMIT_FROM_REF`` / ``PRE_COMMIT_TO_REF`` (and ``PRE_COMMIT_REMOTE_NAME``)
instead of stdin; with no range it checks every lens at ``HEAD``.

Bypasses: ``DST_SKIP=1`` makes the gate stand aside and say so;
``git push --no-verify`` skips every pre-push hook without running it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pygit2

from reconciler.errors import DstError, UsageError

LENSES_DIR = "lenses"
DST_REFS = "refs/dst/"
SERVING_PREFIX = "refs/dst/serving/"
SERVING_BRANCH_KEY = "dst.servingBranch"
DEFAULT_SERVING_BRANCH = "main"
BYPASS_HINT = (
    "to push anyway: `git push --no-verify` skips every pre-push hook; "
    "DST_SKIP=1 skips only dst's gate and says so"
)
USAGE = (
    "usage: dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]   (ref lines on stdin, from git)\n"
    "       dst hook-impl pre-commit-framework               (range from PRE_COMMIT_*_REF)"
)
_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class PushedRef:
    """One line of the pre-push stdin protocol.

    Attributes:
        local_ref: the local side as git reports it (full ref name, or the text the
            user typed such as ``HEAD`` or an oid, or ``(delete)``).
        local_oid: hex oid the remote ref will point at; all zeros for a deletion.
        remote_ref: the full remote ref name (``refs/heads/main``).
        remote_oid: hex oid the remote ref points at now; all zeros when it is new.
    """

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str

    @property
    def deletion(self) -> bool:
        """The push deletes ``remote_ref``."""
        return _is_zero(self.local_oid)

    @property
    def new_on_remote(self) -> bool:
        """The remote has no ``remote_ref`` yet."""
        return _is_zero(self.remote_oid)

    def label(self) -> str:
        """``local → remote`` for messages."""
        return f"{self.local_ref} → {self.remote_ref}"


@dataclass(frozen=True)
class RefCheck:
    """What the gate has to verify for one pushed ref (or one pre-commit range).

    Attributes:
        label: what was pushed, for messages (``refs/heads/main → refs/heads/main``).
        commit: hex oid of the candidate commit the lenses are read at; ``None`` when
            there is nothing to check.
        lenses: names of the lenses to gate, sorted; empty when nothing is to check.
        note: one line saying why, printed to the user.
    """

    label: str
    commit: str | None
    lenses: tuple[str, ...]
    note: str


def _is_zero(oid: str) -> bool:
    return not oid.strip("0")


def _is_hex_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def parse_push_lines(data: bytes) -> list[PushedRef]:
    """Parse the pre-push stdin protocol (see the module docstring).

    Args:
        data: everything git wrote to the hook's stdin.

    Returns:
        One :class:`PushedRef` per non-empty line, in order.

    Raises:
        UsageError: a line does not have the four fields, or an oid is not hex.
    """
    pushed = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.rstrip(b"\r").decode("utf-8", "surrogateescape")
        if not line.strip():
            continue
        # The remote side is always full ref names and oids; only the local ref is
        # "as typed" and could hold a space (``HEAD@{1 day ago}``), so split from the right.
        fields = line.rsplit(" ", 3)
        if len(fields) != 4 or not all(fields):
            raise UsageError(
                f"pre-push stdin line {number}: expected '<local ref> <local oid> <remote ref> "
                f"<remote oid>', got {line!r}",
                fix="this command is run by git's pre-push hook; run `dst hooks install`",
            )
        local_ref, local_oid, remote_ref, remote_oid = fields
        for oid in (local_oid, remote_oid):
            if not _is_hex_oid(oid):
                raise UsageError(
                    f"pre-push stdin line {number}: {oid!r} is not an object id",
                    fix="this command is run by git's pre-push hook; run `dst hooks install`",
                )
        pushed.append(PushedRef(local_ref, local_oid, remote_ref, remote_oid))
    return pushed


def _peel_commit(repo: pygit2.Repository, oid: str) -> pygit2.Commit | None:
    """The commit ``oid`` names (peeling tags), or ``None`` if absent or not a commit."""
    try:
        obj = repo.get(oid)
        if obj is None:
            return None
        peeled = obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    return peeled if isinstance(peeled, pygit2.Commit) else None


def _lens_entries(repo: pygit2.Repository, commit: pygit2.Commit) -> dict[str, pygit2.Oid]:
    """``{lens name: tree id}`` of the directories under ``lenses/`` at ``commit``."""
    tree = commit.tree
    if LENSES_DIR not in tree:
        return {}
    lenses = repo.get(tree[LENSES_DIR].id)
    if not isinstance(lenses, pygit2.Tree):
        return {}
    return {str(e.name): e.id for e in lenses if e.type_str == "tree"}


def _lenses_tree_id(commit: pygit2.Commit) -> pygit2.Oid | None:
    tree = commit.tree
    return tree[LENSES_DIR].id if LENSES_DIR in tree else None


def changed_lenses(repo: pygit2.Repository, base: pygit2.Commit, head: pygit2.Commit) -> set[str]:
    """Names of the lens directories whose tree differs between two commits.

    A lens present on one side only counts as changed. The ``lenses/`` trees are
    compared first, so a push that leaves ``lenses/`` alone opens nothing.
    """
    if _lenses_tree_id(base) == _lenses_tree_id(head):
        return set()
    old, new = _lens_entries(repo, base), _lens_entries(repo, head)
    return {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}


def served_lenses(repo: pygit2.Repository) -> set[str]:
    """Names of the lenses with a ``refs/dst/serving/<lens>`` ref in this repository."""
    return {
        name[len(SERVING_PREFIX) :] for name in repo.references if name.startswith(SERVING_PREFIX)
    }


def _gateable(
    repo: pygit2.Repository, head: pygit2.Commit, names: Iterable[str]
) -> tuple[str, ...]:
    """The names that exist at ``head`` or are serving (a lens gone from both is moot)."""
    present = set(_lens_entries(repo, head)) | served_lenses(repo)
    return tuple(sorted(n for n in set(names) if n in present))


def _every_lens(repo: pygit2.Repository, head: pygit2.Commit) -> tuple[str, ...]:
    return tuple(sorted(set(_lens_entries(repo, head)) | served_lenses(repo)))


def _tracking_tips(repo: pygit2.Repository, remote: str | None) -> list[pygit2.Oid]:
    """Commits that ``refs/remotes/<remote>/*`` point at (symbolic refs resolved)."""
    if not remote:
        return []
    prefix = f"refs/remotes/{remote}/"
    tips = []
    for name in repo.references:
        if not name.startswith(prefix):
            continue
        try:
            target = repo.references[name].resolve().target
        except (KeyError, pygit2.GitError):
            continue
        commit = _peel_commit(repo, str(target))
        if commit is not None:
            tips.append(commit.id)
    return tips


def _serving_branch(repo: pygit2.Repository, remote: str | None) -> pygit2.Commit | None:
    """The tip of the branch lenses are served from, or ``None`` if it does not resolve.

    The branch is ``git config dst.servingBranch``, else the one the remote's
    ``HEAD`` names, else ``main``.
    """
    try:
        rev = str(repo.config[SERVING_BRANCH_KEY])
    except KeyError:
        rev = DEFAULT_SERVING_BRANCH
        head = repo.references.get(f"refs/remotes/{remote}/HEAD") if remote else None
        if head is not None and isinstance(head.target, str):
            rev = head.target
    try:
        return _peel_commit(repo, str(repo.revparse_single(rev).id))
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def _new_ref_bases(
    repo: pygit2.Repository, head: pygit2.Commit, remote: str | None
) -> tuple[list[pygit2.Commit] | None, str]:
    """Where the commits new to the remote start, for a ref the remote does not have.

    Returns:
        ``(bases, why)``. With remote-tracking refs for ``remote``, the bases are the
        parents of the oldest commits reachable from ``head`` but from none of
        ``refs/remotes/<remote>/*`` (an empty list when there are no such commits).
        Without them, the base is the merge base with the serving branch. ``None``
        instead of a list means there is no base to trust (new history, or nothing
        known about the remote) and every lens has to be checked.
    """
    tips = _tracking_tips(repo, remote)
    if tips:
        walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL)
        for tip in tips:
            walker.hide(tip)
        new = {c.id: c for c in walker}
        bases: dict[pygit2.Oid, pygit2.Commit] = {}
        for commit in new.values():
            if not commit.parent_ids:
                return None, f"new history (root commit {str(commit.id)[:12]}) for {remote}"
            for parent in commit.parents:
                if parent.id not in new:
                    bases[parent.id] = parent
        return list(bases.values()), f"{len(new)} commit(s) new to {remote}"
    branch = _serving_branch(repo, remote)
    if branch is None:
        return None, f"nothing known about {remote} and no serving branch here"
    base_id = repo.merge_base(head.id, branch.id)
    base = _peel_commit(repo, str(base_id)) if base_id is not None else None
    if base is None:
        return None, f"nothing known about {remote}; unrelated to the serving branch"
    if base.id == head.id:
        # The serving branch itself (or an ancestor) pushed where nothing is known:
        # there is no smaller scope to trust.
        return None, f"nothing known about {remote}; this is the serving branch"
    return [base], f"since the merge base {str(base.id)[:12]} with the serving branch"


def scope_ref(repo: pygit2.Repository, pushed: PushedRef, remote: str | None) -> RefCheck:
    """Decide what one pushed ref asks the gate to verify (table in the module docstring).

    Args:
        repo: the repository being pushed from.
        pushed: one stdin line.
        remote: the remote's name as git passed it (a URL when no remote is named).

    Returns:
        The check; ``lenses`` is empty when there is nothing to verify.

    Raises:
        UsageError: the local oid is not in this repository (git never sends that).
    """
    label = pushed.label()
    if pushed.local_ref.startswith(DST_REFS) or pushed.remote_ref.startswith(DST_REFS):
        return RefCheck(label, None, (), "serving state is pushed as recorded, not re-validated")
    if pushed.deletion:
        return RefCheck(label, None, (), "deletion: nothing to check")
    if repo.get(pushed.local_oid) is None:
        raise UsageError(
            f"{label}: object {pushed.local_oid} is not in this repository",
            fix="run the hook from the repository being pushed",
        )
    head = _peel_commit(repo, pushed.local_oid)
    if head is None:
        return RefCheck(label, None, (), "not a commit: no lens to check")
    oid = str(head.id)
    if pushed.new_on_remote:
        found, how = _new_ref_bases(repo, head, remote)
        if found is None:
            lenses = _every_lens(repo, head)
            return RefCheck(label, oid, lenses, f"{how}: checking every lens in full")
        if not found:
            return RefCheck(label, oid, (), f"no commit new to {remote}: nothing to check")
        bases = found
    else:
        old = _peel_commit(repo, pushed.remote_oid)
        if old is None:
            return RefCheck(
                label,
                oid,
                _every_lens(repo, head),
                f"history rewritten: {remote} has {pushed.remote_ref} at "
                f"{pushed.remote_oid[:12]}, which this repository does not have; "
                "checking every lens in full",
            )
        bases = [old]
        how = f"since {pushed.remote_oid[:12]}"
        if old.id != head.id and repo.merge_base(old.id, head.id) != old.id:
            how = f"force push over {pushed.remote_oid[:12]}: history rewritten"
    changed: set[str] = set()
    for base in bases:
        changed |= changed_lenses(repo, base, head)
    lenses = _gateable(repo, head, changed)
    if not lenses:
        return RefCheck(label, oid, (), f"no lens changed ({how})")
    return RefCheck(label, oid, lenses, f"lens(es) changed: {', '.join(lenses)} ({how})")


def scope_range(repo: pygit2.Repository, from_rev: str | None, to_rev: str) -> RefCheck:
    """Decide what the range ``from_rev..to_rev`` asks the gate to verify.

    Used by the pre-commit framework mode. Without ``from_rev`` (or when it is all
    zeros or not in this repository) every lens at ``to_rev`` is checked.

    Raises:
        UsageError: ``to_rev`` does not name a commit here.
    """
    label = f"{from_rev[:12]}..{to_rev[:12]}" if from_rev else to_rev
    try:
        head = _peel_commit(repo, str(repo.revparse_single(to_rev).id))
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        head = None
    if head is None:
        raise UsageError(
            f"{to_rev!r} does not name a commit in this repository",
            fix="PRE_COMMIT_TO_REF must be the pushed commit; let pre-commit set it",
        )
    oid = str(head.id)
    base = None
    if from_rev and not _is_zero(from_rev):
        try:
            base = _peel_commit(repo, str(repo.revparse_single(from_rev).id))
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            base = None
    if base is None:
        why = "no base to compare with"
        if from_rev and not _is_zero(from_rev):
            why = f"history rewritten: {from_rev[:12]} is not in this repository"
        return RefCheck(label, oid, _every_lens(repo, head), f"{why}; checking every lens in full")
    lenses = _gateable(repo, head, changed_lenses(repo, base, head))
    if not lenses:
        return RefCheck(label, oid, (), "no lens changed")
    return RefCheck(label, oid, lenses, f"lens(es) changed: {', '.join(lenses)}")


def _say(prefix: str, message: str) -> None:
    print(f"{prefix}: {message}", file=sys.stderr, flush=True)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _open_repo() -> pygit2.Repository:
    # Git exports GIT_DIR to hooks run from a linked worktree; elsewhere the hook
    # runs at the top of the working tree and discovery finds the repository.
    path = os.environ.get("GIT_DIR") or pygit2.discover_repository(os.getcwd())
    if not path:
        raise UsageError(
            f"{os.getcwd()}: not inside a git repository",
            fix="git runs this hook from the repository being pushed",
        )
    return pygit2.Repository(path)


def run_gate(repo: pygit2.Repository, checks: Sequence[RefCheck], prefix: str) -> int:
    """Print each check's note, then gate the lenses to verify, one candidate commit at a time.

    Lenses asked for by several refs at the same commit are gated once. The
    reconcile and its dependencies are imported here, only when some lens is due.

    Returns:
        0 when every gate passes (or there is nothing to check), 1 otherwise.
    """
    due: dict[str, set[str]] = {}
    for check in checks:
        _say(prefix, f"{check.label}: {check.note}")
        if check.commit is not None and check.lenses:
            due.setdefault(check.commit, set()).update(check.lenses)
    if not due:
        return 0
    from reconciler.context import Runtime
    from reconciler.git.sync import require_known
    from reconciler.reconcile import reconcile
    from reconciler.render.text import to_text

    try:
        require_known(repo)
    except DstError as exc:
        _say(prefix, f"error: {exc.render()}")
        return 1
    rt = Runtime(repo, progress=_progress)
    failed: list[str] = []
    try:
        for commit, lenses in due.items():
            names = sorted(lenses)
            _say(prefix, f"gating {', '.join(names)} at {commit[:12]} (dry run)")
            try:
                report = reconcile(rt, to=commit, only=names, dry_run=True)
            except DstError as exc:
                _say(prefix, f"error: {exc.render()}")
                failed.append(commit)
                continue
            print(to_text(report), file=sys.stderr, flush=True)
            if report.exit_code != 0:
                failed.append(commit)
    finally:
        rt.close()
    if failed:
        _say(
            prefix,
            f"push rejected: the lens gate did not pass at {', '.join(c[:12] for c in failed)} "
            f"(the report above says why and what to do); {BYPASS_HINT}",
        )
        return 1
    return 0


def _skipped(env: Mapping[str, str]) -> bool:
    return env.get("DST_SKIP", "").strip().lower() in _TRUE


def pre_push(args: Sequence[str], stdin: int = 0) -> int:
    """``dst hook-impl pre-push [REMOTE_NAME REMOTE_URL]``: gate what git is about to push.

    Args:
        args: the hook's arguments (the remote's name and URL), possibly empty.
        stdin: file descriptor carrying git's ref lines; a terminal is not read.

    Returns:
        0 to let the push proceed, 1 to stop it.
    """
    prefix = "dst pre-push"
    if _skipped(os.environ):
        _say(prefix, "DST_SKIP is set: the lens gate is SKIPPED for this push")
        return 0
    if os.isatty(stdin):
        _say(
            prefix,
            "stdin is a terminal, not git's ref list: nothing to check. Git runs this "
            "hook on `git push` (install it with `dst hooks install`)",
        )
        return 0
    chunks = []
    while chunk := os.read(stdin, 65536):
        chunks.append(chunk)
    remote = args[0] if args else None
    repo = _open_repo()
    checks = [scope_ref(repo, p, remote) for p in parse_push_lines(b"".join(chunks))]
    if not checks:
        _say(prefix, "no refs pushed: nothing to check")
        return 0
    return run_gate(repo, checks, prefix)


def pre_commit_framework(env: Mapping[str, str]) -> int:
    """``dst hook-impl pre-commit-framework``: the gate under pre-commit's pre-push stage.

    Args:
        env: the environment; reads ``PRE_COMMIT_FROM_REF``, ``PRE_COMMIT_TO_REF``
            and ``PRE_COMMIT_REMOTE_NAME`` (set by pre-commit for each pushed ref),
            and ``DST_SKIP``.

    Returns:
        0 to let the push proceed, 1 to stop it.
    """
    prefix = "dst pre-push"
    if _skipped(env):
        _say(prefix, "DST_SKIP is set: the lens gate is SKIPPED for this push")
        return 0
    repo = _open_repo()
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
    return run_gate(repo, [check], prefix)


def main(argv: list[str]) -> int:
    """Entry point for ``dst hook-impl …`` (dispatched before the CLI framework loads).

    Args:
        argv: the arguments after ``hook-impl``: ``["pre-push", REMOTE, URL]`` or
            ``["pre-commit-framework"]``.

    Returns:
        The exit code: 0 the push may proceed, 1 it must not (the gate failed, or
        the hook could not decide), 2 usage error, 130 interrupted.
    """
    mode, rest = (argv[0], argv[1:]) if argv else ("", [])
    try:
        if mode == "pre-push" and len(rest) <= 2:
            return pre_push(rest)
        if mode == "pre-commit-framework" and not rest:
            return pre_commit_framework(os.environ)
    except KeyboardInterrupt:
        _say("dst pre-push", "interrupted")
        return 130
    except DstError as exc:
        _say("dst pre-push", f"error: {exc.render()}\n  {BYPASS_HINT}")
        return 1
    except Exception as exc:  # fail closed: a hook that cannot decide must not wave a push through
        import tempfile
        import traceback

        fd, name = tempfile.mkstemp(prefix="dst-hook-crash-", suffix=".log")
        with os.fdopen(fd, "w") as log:
            log.write(traceback.format_exc())
        _say(
            "dst pre-push",
            f"unexpected error ({type(exc).__name__}: {exc}); traceback written to {name}\n"
            f"  {BYPASS_HINT}",
        )
        return 1
    print(USAGE, file=sys.stderr)
    return 2
