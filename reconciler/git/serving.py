"""A serving ref proves its gate (DESIGN §3): what every serving read checks first.

``refs/dst/serving/<lens>`` (or an environment's) may only point at a *record whose
gate passed*:

==============================  =====================================================
the commit it points at         proves its gate when
==============================  =====================================================
``promote`` deployment          its meta names this lens and its second parent is the
                                source commit the meta names (the shape
                                :func:`reconciler.git.refs.write_deployment` writes)
``verify`` deployment           the deployment it follows (its first parent) proves
                                its gate and holds the same lens tree (what ``dst
                                test`` wrote before verifications had their own chain)
``rollback`` deployment         the deployment it serves again (``rollback_to``) is
                                one of its ancestors, holds the same lens tree and
                                proves its gate
anything else                   never: a ``blocked``, ``stood_down`` or ``recovered``
                                attempt, a verification (``verified`` set: it
                                belongs on ``refs/dst/verify/<lens>``), a
                                ``retired`` record, a branch commit, a tag
==============================  =====================================================

A ref pointed by hand at an attempt, or a branch commit pushed straight to a
serving ref, is refused by ``dst ask``, ``dst mcp``, ``dst status``, ``dst test``,
``dst plan`` and ``dst apply`` alike (:class:`ServingRefError`, exit 2), and by the
pre-push hook before it reaches a remote. The check reads each record's
``state/meta.json`` alone (a few hundred bytes), so a promote costs one blob read and
an old verify chain one per ``dst test`` since its promotion; a commit once proven is
remembered for the process (commits never change).

This is a check of shape, not a signature: anyone who can write ``refs/dst/*``
can also write a commit that looks like a deployment. It catches the mistakes and
shortcuts (an attempt served by hand, a branch pushed to a serving ref); a remote's
``refs/dst/*`` still needs the host's protection (README "Security").
"""

from __future__ import annotations

import pygit2

from reconciler.errors import DstError, StateError
from reconciler.git import refs as refstore
from reconciler.git.records import Meta, loads_meta
from reconciler.ids import Oid

PASSED = "promote"
"""The action of a deployment whose own gate passed."""

FOLLOWS = ("verify", "rollback")
"""Actions that prove their gate through another deployment."""

_PROVEN: set[tuple[str, str]] = set()  # (lens, oid): commits are immutable, so is their proof
_LIMIT = 100_000  # records walked for one proof, a bound against a crafted cycle of metas


class ServingRefError(StateError):
    """A serving ref that does not point at a record whose gate passed.

    Attributes:
        ref: the serving ref.
        oid: what it points at.
    """

    def __init__(self, ref: str, oid: str, why: str, *, fix: str) -> None:
        super().__init__(
            f"{ref} points at {oid[:12]}, {why}; dst serves only a deployment whose "
            f"recorded gate passed (or a rollback to one), so it refuses to serve it",
            fix=fix,
        )
        self.ref = ref
        self.oid = oid


def read_meta(repo: pygit2.Repository, oid: Oid) -> tuple[pygit2.Commit, Meta]:
    """The commit ``oid`` and its ``state/meta.json``.

    Raises:
        StateError: ``oid`` is not a commit, or it has no readable ``state/meta.json``.
    """
    where = f"deployment {oid[:12]}"
    commit = repo.get(oid)
    if not isinstance(commit, pygit2.Commit):
        raise StateError(f"{where}: not a commit")
    try:
        blob = repo[commit.tree["state/meta.json"].id]
    except KeyError:
        raise StateError(f"{where}: no state/meta.json (not a dst record)") from None
    if not isinstance(blob, pygit2.Blob) or "lens" not in commit.tree:
        raise StateError(f"{where}: no lens/ tree or state/meta.json (not a dst record)")
    return commit, loads_meta(bytes(blob.data), where=where)


def why_not(repo: pygit2.Repository, lens: str, oid: Oid) -> str | None:
    """Why ``oid`` is not a record whose gate passed for ``lens`` (``None`` when it is).

    The table in the module docstring is the rule.
    """
    if (lens, oid) in _PROVEN:
        return None
    walked: list[Oid] = []
    current = oid
    tree: str | None = None
    while len(walked) < _LIMIT:
        here = "it" if current == oid else f"{current[:12]}, which it follows,"
        try:
            commit, meta = read_meta(repo, current)
        except DstError as exc:
            return f"which is not a dst deployment record ({exc.message})"
        lens_tree = str(commit.tree["lens"].id)
        if tree is not None and lens_tree != tree:
            return f"whose lens tree is not that of {here.removesuffix(',')} (not a dst record)"
        tree = lens_tree
        if meta.lens and meta.lens != lens:
            return f"a record of lens {meta.lens!r}, not of {lens!r}"
        action = meta.action or "unnamed"
        walked.append(current)
        if (lens, current) in _PROVEN:
            break
        if action == PASSED:
            parents = [str(p) for p in commit.parent_ids]
            if len(parents) < 2 or parents[1] != meta.source:
                return f"whose promote record does not name its source as a parent ({here})"
            break
        if action == "verify" and meta.verified is not None:
            return "a verification (refs/dst/verify/), which never serves" + (
                "" if current == oid else f" ({here.removesuffix(',')})"
            )
        if action not in FOLLOWS:
            what = {"blocked": "a blocked attempt", "stood_down": "a stood-down attempt"}
            return f"{what.get(action, f'a {action!r} record')}" + (
                "" if current == oid else f" ({here.removesuffix(',')})"
            )
        nxt = meta.previous if action == "verify" else meta.rollback_to
        if nxt is None:
            return f"a {action} record that names no deployment it follows ({here})"
        first = str(commit.parent_ids[0]) if commit.parent_ids else None
        if action == "verify" and first != nxt:
            return f"a verify record whose first parent is not the deployment it follows ({here})"
        if action == "rollback" and not repo.descendant_of(
            pygit2.Oid(hex=current), pygit2.Oid(hex=nxt)
        ):
            return f"a rollback to {nxt[:12]}, which is not in its history ({here})"
        current = nxt
    else:
        return "a chain of records too long to prove"
    _PROVEN.update((lens, w) for w in walked)
    return None


def _last_proven(repo: pygit2.Repository, ref: str, lens: str) -> Oid | None:
    """The newest value ``ref`` held, by its reflog, that proves its gate, if any."""
    found = repo.references.get(ref)
    if found is None:
        return None
    try:
        entries = list(found.log())
    except pygit2.GitError:
        return None
    for entry in entries:  # newest first
        for candidate in (str(entry.oid_new), str(entry.oid_old)):
            if candidate.strip("0") and why_not(repo, lens, Oid(candidate)) is None:
                return Oid(candidate)
    return None


def prove(repo: pygit2.Repository, ref: str, lens: str, oid: Oid) -> None:
    """Refuse ``oid`` as the value of serving ref ``ref`` of ``lens`` unless it proves its gate.

    Raises:
        ServingRefError: it does not (exit 2); the fix names the ref's last value that
            did, from its reflog, when there is one.
    """
    why = why_not(repo, lens, oid)
    if why is None:
        return
    good = _last_proven(repo, ref, lens)
    fix = (
        f"point it back at the last deployment it served: `git update-ref {ref} {good} {oid}`"
        if good is not None
        else f"point it at a deployment of lens {lens} (`git log --first-parent {ref}` lists "
        f"records; `git update-ref {ref} DEPLOYMENT {oid}`), or delete it "
        f"(`git update-ref -d {ref} {oid}`) and promote again with `dst apply`"
    )
    raise ServingRefError(ref, oid, why, fix=fix)


def serving_target(repo: pygit2.Repository, lens: str, env: str | None = None) -> Oid | None:
    """What ``lens``'s serving ref (in ``env``) points at, proven; ``None`` when it is absent.

    Raises:
        ServingRefError: it points at something that does not prove its gate.
    """
    ref = refstore.serving_ref(lens, env)
    oid = refstore.ref_target(repo, ref)
    if oid is not None:
        prove(repo, ref, lens, oid)
    return oid


def read_serving(
    repo: pygit2.Repository, lens: str, env: str | None = None, *, bindings: bool = True
) -> refstore.Deployment | None:
    """The serving deployment of ``lens`` (in ``env``), proven, or ``None`` when nothing serves.

    Raises:
        ServingRefError: the ref does not point at a record whose gate passed.
        StateError: the deployment does not read.
    """
    oid = serving_target(repo, lens, env)
    return None if oid is None else refstore.read_deployment(repo, oid, bindings=bindings)
