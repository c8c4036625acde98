"""Pruning ``refs/dst/attempts/<lens>``: keep the newest attempts, drop the rest (``dst gc``).

The same pruning serves the verification chains under ``refs/dst/verify/<lens>``
(:func:`prune` with ``ref=``), and :func:`pruned_here` tells ``dst sync`` a chain pruned
here from another clone's work.

Blocked and stood-down applies each append an attempt commit (DESIGN §3), so the
chain grows with every failed push. Pruning rewrites the newest ``keep``
attempts onto the lens's history root — same trees, ``state/`` files, messages
and times, with ``previous`` pointing at the rewritten attempt before — and
moves the ref by compare-and-swap (:func:`reconciler.git.refs.update_refs`);
the dropped commits become unreachable and git's own ``git gc`` reclaims them.
Serving and retired histories are never touched: they are the lenses' records.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from reconciler.errors import DstError
from reconciler.git import refs as refstore
from reconciler.ids import Oid


@dataclass(frozen=True)
class Pruned:
    """What pruning one lens's attempts did.

    Attributes:
        lens: the lens.
        ref: ``refs/dst/attempts/<lens>``.
        before: attempts in the chain before.
        kept: attempts kept (the newest).
        old: the ref's value before.
        new: its value after (``old`` when nothing was pruned).
    """

    lens: str
    ref: str
    before: int
    kept: int
    old: Oid
    new: Oid

    @property
    def dropped(self) -> int:
        """Attempts pruned."""
        return self.before - self.kept


def chain_length(repo: pygit2.Repository, head: Oid, stop: int | None = None) -> int:
    """Commits on ``head``'s first-parent chain before the history root (at most ``stop``)."""
    count, commit = 0, repo[head].peel(pygit2.Commit)
    while commit.parents and (stop is None or count < stop):
        count += 1
        commit = commit.parents[0]
    return count


def prune(
    repo: pygit2.Repository,
    lens: str,
    keep: int,
    env: str | None = None,
    *,
    ref: str | None = None,
    also: Oid | None = None,
) -> Pruned | None:
    """Keep the newest ``keep`` (≥ 1) attempts of ``lens`` (in environment ``env``);
    ``None`` when it has no attempts.

    ``ref`` prunes another chain of the same shape instead (a verify ref), and ``also``
    names one older record of it that is kept too (the newest verification of the
    serving lens tree, whose bindings a plan reads). Each kept record keeps its parents
    but the first (an attempt's source commit, a verification's deployment).

    Raises:
        RefConflict: the attempts ref moved meanwhile (another apply recorded one);
            nothing moved, run it again.
        StateError: an attempt commit does not read as one.
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    ref = ref or refstore.attempts_ref(lens, env)
    head = refstore.ref_target(repo, ref)
    if head is None:
        return None
    before = chain_length(repo, head)
    if before <= keep:
        return Pruned(lens, ref, before, before, head, head)
    chain = refstore.history(repo, head, keep)  # newest first
    if also is not None and all(d.oid != also for d in chain):
        chain.append(refstore.read_deployment(repo, also))
    # lazy: counting and reading attempts needs no model; rewriting them does
    from reconciler.state import DeploymentMeta, RunRecord

    previous: Oid | None = None
    for dep in reversed(chain):
        commit = repo[dep.oid].peel(pygit2.Commit)
        run = RunRecord.model_validate(refstore.read_run(repo, dep.oid))
        meta = DeploymentMeta.model_validate({**dep.meta, "previous": previous})
        others = [Oid(str(p)) for p in commit.parent_ids[1:]]
        parents = [previous or refstore.history_root(repo, lens), *others]
        previous = refstore.write_deployment(
            repo,
            lens_tree=dep.lens_tree,
            bindings=dep.bindings,
            run=run,
            meta=meta,
            parents=parents,
            message=commit.message.rstrip("\n"),
        )
    if previous is None:  # pragma: no cover - keep ≥ 1 and the chain is longer
        raise RuntimeError(f"lens {lens}: no attempt kept")
    reason = f"dst gc: keep the newest {keep} records of {ref}"
    refstore.update_refs(repo, [refstore.RefUpdate(ref, head, previous)], reason=reason)
    return Pruned(lens, ref, before, len(chain), head, previous)


def pruned_here(repo: pygit2.Repository, local: Oid, theirs: Oid) -> bool:
    """``local``'s attempts chain holds ``theirs`` as ``dst gc`` rewrote it: an attempt with
    the same lens tree, source, action and recording time (gc keeps each attempt's content
    and gives it a new parent), so ``local`` is a pruned copy, not another promoter's work."""
    try:
        wanted = refstore.read_deployment(repo, theirs, bindings=False)
        chain = refstore.history(repo, local)
    except (DstError, KeyError, ValueError):
        return False

    def key(d: refstore.Deployment) -> tuple[object, ...]:
        return (d.lens_tree, d.info.source, d.info.action, d.info.recorded_at)

    return any(key(d) == key(wanted) for d in chain if d.oid != theirs)


def pruned_fix(remote: str, ref: str, theirs: Oid, local: Oid) -> str:
    """How to settle a chain pruned here that ``remote`` keeps longer (sync never forces)."""
    return (
        f"prune {remote}'s too with `git push --force-with-lease={ref}:{theirs} {remote} {ref}`, "
        f"or take its longer chain back with `git update-ref {ref} {theirs} {local}`"
    )
