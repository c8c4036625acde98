"""Verifications: ``refs/dst/verify/<lens>``, the chain of ``dst test`` runs (DESIGN §5).

``dst test`` and watch's schedule re-verify what serves. Each run is recorded as a
*verification*: a commit of the deployment shape (``lens/`` is the verified deployment's
lens tree, ``state/`` its re-stamped bindings, its run and its meta with action
``verify`` and ``verified`` naming the deployment), whose first parent is the previous
verification (or the lens's history root) and whose second is the verified deployment.
A verification never moves the serving ref, so a clone whose serving ref came from a
remote stays equal to it however often it verifies.

Bindings: a plan reads a lens's bindings from its serving deployment overlaid with the
newest verification of the same lens tree (:func:`with_verified`), so a green re-stamp
counts without a new deployment.

Sharing: ``dst sync`` carries verify refs like attempts. Two clones that verified the
same serving state each append to the chain they fetched; the second to sync finds its
chain diverged from the remote's and :func:`rebase` re-records its own verifications,
unchanged but for their parents, on top of the remote's, so the push that follows is a
fast-forward. Verifications are records nobody serves: rewriting the ones not yet
shared loses nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pygit2

from reconciler.errors import DstError, RefConflict
from reconciler.git import refs as refstore
from reconciler.ids import Oid

if TYPE_CHECKING:
    from reconciler.bindings import Bindings
    from reconciler.state import DeploymentMeta, RunRecord

ACTION = "verify"
"""The action of a verification's meta."""

RETRIES = 5
"""Compare-and-swap tries of one record when other verifications land meanwhile."""

WALK = 1000
"""Verifications walked back for the newest one of a lens tree."""


def record(
    repo: pygit2.Repository,
    deployment: refstore.Deployment,
    *,
    env: str | None,
    bindings: Bindings,
    run: RunRecord | Mapping[str, Any],
    meta: DeploymentMeta,
    message: str,
    reason: str,
) -> Oid:
    """Append a verification of ``deployment`` to its lens's verify chain, by compare-and-swap.

    Another verification that lands between the read and the swap is no conflict: the
    record is re-parented on top of it and swapped again (at most :data:`RETRIES` times).

    Returns:
        The verification commit.

    Raises:
        RefConflict: the verify ref kept moving through every try (re-run).
    """
    lens = deployment.info.lens or meta.lens
    ref = refstore.verify_ref(lens, env)
    for tried in range(1, RETRIES + 1):
        head = refstore.ref_target(repo, ref)
        oid = refstore.write_deployment(
            repo,
            lens_tree=deployment.lens_tree,
            bindings=bindings,
            run=run,
            meta={**meta.record(), "action": ACTION, "previous": head, "verified": deployment.oid},
            parents=[head or refstore.history_root(repo, lens), deployment.oid],
            message=message,
        )
        try:
            refstore.update_refs(repo, [refstore.RefUpdate(ref, head, oid)], reason=reason)
        except RefConflict:
            if tried == RETRIES:
                raise
            continue  # another verification landed first: go on top of it
        return oid
    raise RuntimeError("unreachable: the last try returns or raises")  # pragma: no cover


def last(repo: pygit2.Repository, lens: str, env: str | None = None) -> refstore.Deployment | None:
    """The newest verification of ``lens`` (in ``env``), or ``None``; one that does not read
    as a record is passed over as none."""
    head = refstore.ref_target(repo, refstore.verify_ref(lens, env))
    if head is None:
        return None
    try:
        return refstore.read_deployment(repo, head, bindings=False)
    except DstError:
        return None


def newest_of(
    repo: pygit2.Repository, lens: str, env: str | None, tree: Oid
) -> refstore.Deployment | None:
    """The newest verification of ``lens`` (in ``env``) whose lens tree is ``tree``, or
    ``None`` (none within :data:`WALK` records, or the chain does not read)."""
    oid = refstore.ref_target(repo, refstore.verify_ref(lens, env))
    for _ in range(WALK):
        if oid is None:
            return None
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit) or "lens" not in commit.tree:
            return None  # the history root (or not a record): the chain ends
        if str(commit.tree["lens"].id) == tree:
            try:
                return refstore.read_deployment(repo, oid)
            except DstError:
                return None
        oid = Oid(str(commit.parent_ids[0])) if commit.parent_ids else None
    return None


def with_verified(
    repo: pygit2.Repository, deployment: refstore.Deployment, env: str | None = None
) -> refstore.Deployment:
    """``deployment`` with the bindings of the newest verification of its lens tree laid
    over its own (the newer record's stamp wins per answer); as it is without one."""
    lens = deployment.info.lens
    if not lens:
        return deployment
    found = newest_of(repo, lens, env, deployment.lens_tree)
    if found is None or found.oid == deployment.oid:
        return deployment
    older, newer = deployment.bindings.answers, found.bindings.answers
    if found.info.recorded_at < deployment.info.recorded_at:
        older, newer = newer, older
    from reconciler.bindings import Bindings  # lazy: reading the chain needs no bindings

    return replace(deployment, stamps=Bindings({**older, **newer}))


def _key(dep: refstore.Deployment) -> tuple[object, ...]:
    """What one verification is, whatever its parents: rewriting keeps all of it."""
    return (dep.lens_tree, dep.info.source, dep.info.verified, dep.info.recorded_at)


def rebase(repo: pygit2.Repository, local: Oid, theirs: Oid) -> Oid | None:
    """Re-record the verifications of ``local``'s chain that ``theirs`` lacks on top of
    ``theirs``, oldest first (no ref moves).

    Returns:
        The new head, or ``None`` when ``local`` holds no verification ``theirs`` lacks.

    Raises:
        StateError: a verification does not read as one.
    """
    known = {_key(d) for d in chain(repo, theirs)}
    mine = [d for d in chain(repo, local) if _key(d) not in known]
    if not mine:
        return None
    head = theirs
    for dep in reversed(mine):
        commit = repo[dep.oid].peel(pygit2.Commit)
        from reconciler.state import RunRecord  # lazy: reading the chain needs no model

        run = RunRecord.model_validate(refstore.read_run(repo, dep.oid))
        others = [Oid(str(p)) for p in commit.parent_ids[1:]]
        head = refstore.write_deployment(
            repo,
            lens_tree=dep.lens_tree,
            bindings=dep.bindings,
            run=run,
            meta={**dep.meta, "previous": head},
            parents=[head, *others],
            message=commit.message.rstrip("\n"),
        )
    return head


def chain(repo: pygit2.Repository, head: Oid, limit: int = WALK) -> list[refstore.Deployment]:
    """The verifications from ``head`` back to the history root, newest first (at most
    ``limit``)."""
    out: list[refstore.Deployment] = []
    current: Oid | None = head
    while current is not None and len(out) < limit:
        commit = repo.get(current)
        if not isinstance(commit, pygit2.Commit) or "lens" not in commit.tree:
            break
        dep = refstore.read_deployment(repo, current)
        out.append(dep)
        current = dep.previous
    return out
