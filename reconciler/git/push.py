"""The push scope: which lenses a push (or a pull request) changes, read from git.

The pre-push hook (:mod:`reconciler.cli.hook`) gets one line per pushed ref on
stdin from git (githooks(5), "pre-push")::

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

Every line decides on its own (:func:`scope_ref`):

====================================  ==========================================
line                                  what is checked
====================================  ==========================================
deletion (local oid all zeros)        nothing
``refs/dst/*`` on the remote side     the record, not the lenses: a serving ref must
                                      point at a deployment whose gate passed (or a
                                      rollback to one), an attempts ref at a blocked,
                                      stood-down or recovered attempt, a retired ref
                                      at a retirement, a verify ref at a
                                      verification, each of its own lens; anything
                                      else under ``refs/dst/`` is refused
``refs/dst/*`` on the local side only nothing: a record pushed to a branch or a tag
remote oid present locally            lenses whose tree differs, remote → local
remote oid all zeros (new ref)        lenses the commits new to the remote touch:
                                      commits not reachable from any
                                      ``refs/remotes/<remote>/*``; every lens
                                      for new history (a root commit)
new ref, no remote-tracking refs      every lens any pushed commit touches,
                                      walking back to the root
remote oid absent locally             every lens, in full ("history rewritten")
====================================  ==========================================

A push to a URL (no configured remote) or from a clone without remote-tracking
refs knows nothing about what the remote has beyond the remote oid, so no local
branch is ever taken as the base: a local ``main`` may itself hold the unchecked
commit. Tags are peeled to their commit, so a tag on a commit the remote
already has adds nothing to check. Lens directories are compared by tree id
(:func:`changed_lenses`, which ``dst ci check`` uses too): an unchanged lens
subtree has the same oid on both sides and is never opened.

This module imports only the standard library, pygit2 and
:mod:`reconciler.errors`: a push that changes no lens is decided with nothing
else loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pygit2

from reconciler.errors import UsageError

LENSES_DIR = "lenses"
DST_REFS = "refs/dst/"
SERVING_PREFIX = "refs/dst/serving/"


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
        refused: why the push must not go ahead whatever the gate says (a ``refs/dst/*``
            ref that is not a dst record of its kind), ``None`` otherwise.
    """

    label: str
    commit: str | None
    lenses: tuple[str, ...]
    note: str
    refused: str | None = None


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


def changed_lenses(repo: pygit2.Repository, base: str, head: str) -> set[str]:
    """Names of the lens directories whose tree differs between two commits.

    A lens present on one side only counts as changed. The ``lenses/`` trees are
    compared first, so a push that leaves ``lenses/`` alone opens nothing.

    Args:
        repo: the repository holding both commits.
        base: hex oid of the older side (a commit, or a tag that peels to one).
        head: hex oid of the newer side.

    Raises:
        UsageError: either oid does not name a commit in ``repo``.
    """
    old_commit, new_commit = _commit(repo, base), _commit(repo, head)
    if _lenses_tree_id(old_commit) == _lenses_tree_id(new_commit):
        return set()
    old, new = _lens_entries(repo, old_commit), _lens_entries(repo, new_commit)
    return {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}


def _commit(repo: pygit2.Repository, oid: str) -> pygit2.Commit:
    commit = _peel_commit(repo, oid)
    if commit is None:
        raise UsageError(
            f"{oid[:12]} does not name a commit in this repository",
            fix="pass a commit that this clone has (git fetch it first)",
        )
    return commit


def served_lenses(repo: pygit2.Repository) -> set[str]:
    """Names of the lenses with a ``refs/dst/serving/<lens>`` ref in this repository."""
    return {
        name[len(SERVING_PREFIX) :] for name in repo.references if name.startswith(SERVING_PREFIX)
    }


def gateable(repo: pygit2.Repository, head: str, names: Iterable[str]) -> tuple[str, ...]:
    """The lenses of ``names`` that exist at ``head`` or are serving, sorted.

    A lens gone from both is moot: nothing serves it and nothing will.

    Raises:
        UsageError: ``head`` does not name a commit in ``repo``.
    """
    present = set(_lens_entries(repo, _commit(repo, head))) | served_lenses(repo)
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


def _touched(repo: pygit2.Repository, head: pygit2.Commit) -> set[str]:
    """Every lens a commit reachable from ``head`` changed, walking back to the root.

    A commit without parents (a root, or a shallow clone's grafted boundary) touches
    every lens it holds; any other commit touches the lenses whose tree differs from
    one of its parents'.
    """
    touched: set[str] = set()
    for commit in repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL):
        if not commit.parent_ids:
            touched |= set(_lens_entries(repo, commit))
            continue
        for parent in commit.parents:
            touched |= changed_lenses(repo, str(parent.id), str(commit.id))
    return touched


def _new_ref_bases(
    repo: pygit2.Repository, head: pygit2.Commit, remote: str | None
) -> tuple[list[pygit2.Commit] | None, str]:
    """Where the commits new to the remote start, for a ref the remote does not have.

    Returns:
        ``(bases, why)``: the parents of the oldest commits reachable from ``head``
        but from none of ``refs/remotes/<remote>/*`` (an empty list when there are
        no such commits). ``None`` instead of a list means there is no base to
        trust: new history (a root commit among the new ones, ``why`` says so), or
        no remote-tracking ref at all (``why`` is empty; the caller walks every
        pushed commit instead).
    """
    tips = _tracking_tips(repo, remote)
    if not tips:
        return None, ""
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
    if pushed.remote_ref.startswith(DST_REFS) and not pushed.deletion:
        problem = _record_problem(repo, pushed.remote_ref, pushed.local_oid)
        if problem is not None:
            return RefCheck(label, None, (), f"REFUSED: {problem}", refused=problem)
        return RefCheck(
            label,
            None,
            (),
            "serving state: a dst record of its kind, pushed as recorded, not re-validated "
            "by another gate run",
        )
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
        if found is None and not how:
            lenses = gateable(repo, oid, _touched(repo, head))
            return RefCheck(
                label,
                oid,
                lenses,
                f"no remote-tracking ref for {remote}: checking every lens the pushed "
                "commits touch",
            )
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
        changed |= changed_lenses(repo, str(base.id), oid)
    lenses = gateable(repo, oid, changed)
    if not lenses:
        return RefCheck(label, oid, (), f"no lens changed ({how})")
    return RefCheck(label, oid, lenses, f"lens(es) changed: {', '.join(lenses)} ({how})")


_RECORD_ACTIONS = {
    "attempts": ("blocked", "stood_down", "recovered"),
    "retired": ("retired",),
    "verify": ("verify",),
}


def _record_problem(repo: pygit2.Repository, ref: str, oid: str) -> str | None:
    """Why ``oid`` may not be pushed to ``ref`` under ``refs/dst/`` (``None`` when it may).

    Reads the record only when such a ref is pushed: the state models load here, lazily.
    """
    rest = ref[len(DST_REFS) :]
    if rest.startswith("env/"):
        rest = rest[len("env/") :].partition("/")[2]
    kind, _, lens = rest.partition("/")
    if kind not in ("serving", *_RECORD_ACTIONS) or not lens or "/" in lens:
        return (
            f"{ref} is not a ref dst shares (only serving/, attempts/, retired/ and verify/ "
            "refs of a lens, per environment, leave a repository)"
        )
    # lazy: the state models (pydantic) load only when serving state is pushed
    from reconciler.errors import DstError
    from reconciler.git import serving as proven
    from reconciler.ids import Oid

    if kind == "serving":
        why = proven.why_not(repo, lens, Oid(oid))
        return None if why is None else f"{ref} would point at {oid[:12]}, {why}"
    try:
        _, meta = proven.read_meta(repo, Oid(oid))
    except DstError as exc:
        return f"{ref} would point at {oid[:12]}, which is not a dst record ({exc.message})"
    if meta.lens != lens or meta.action not in _RECORD_ACTIONS[kind]:
        return (
            f"{ref} would point at {oid[:12]}, a {meta.action or 'unnamed'!r} record of lens "
            f"{meta.lens!r}, not a {kind} record of lens {lens!r}"
        )
    return None


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
    lenses = gateable(repo, oid, changed_lenses(repo, str(base.id), oid))
    if not lenses:
        return RefCheck(label, oid, (), "no lens changed")
    return RefCheck(label, oid, lenses, f"lens(es) changed: {', '.join(lenses)}")


def open_pushing_repo(env: Mapping[str, str], cwd: str) -> pygit2.Repository:
    """The repository a hook runs in: ``$GIT_DIR``, else the one containing ``cwd``.

    Git exports ``GIT_DIR`` to hooks run from a linked worktree; elsewhere the hook
    runs at the top of the working tree and discovery finds the repository.

    Raises:
        UsageError: no repository there, or one git refuses to open, with the same
            message as every other command (a repository owned by another user names
            the ``safe.directory`` setting).
    """
    path = env.get("GIT_DIR") or pygit2.discover_repository(cwd)
    if not path:
        raise UsageError(
            f"{cwd}: not inside a git repository",
            fix="git runs this hook from the repository being pushed",
        )
    try:
        return pygit2.Repository(path)
    except pygit2.GitError:
        # lazy: trees loads the lens model; only this error path needs its translation
        from reconciler.git.trees import open_repo

        return open_repo(path)
