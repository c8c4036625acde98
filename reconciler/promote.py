"""The promote step: the one step of the reconcile that works across lenses.

When no lens blocks, every lens whose action moves its ref
(:attr:`~reconciler.results.Action.moves_ref`) gets a deployment commit — a
promotion, or the retirement of a lens the candidate deletes — and all their
serving refs move in one compare-and-swap reference transaction
(:func:`reconciler.git.refs.update_refs`). When a lens blocks, nothing serving
moves and each blocking lens's run is recorded under ``refs/dst/attempts/``
instead (:func:`record_attempts`), so ``dst status`` shows why and watch does not
retry the same commit. An unchanged lens whose last attempt blocked and whose
candidate undid that commit (a revert) gets a ``recovered`` attempt record
(:func:`record_recoveries`), so its recovery is announced once. With ``--env E``
every ref named here is E's (``refs/dst/env/<E>/…``) and so is the intent record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reconciler.bindings import Bindings
from reconciler.context import Runtime
from reconciler.errors import DstError, RefConflict
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.ids import AnswerId, Oid
from reconciler.plan import LensPlan
from reconciler.results import Action, LensRun, LensState, meta_for, state_for


def promote(rt: Runtime, commit: Oid, lenses: list[tuple[LensRun, LensState]]) -> list[LensRun]:
    """Write each promoted (or retired) lens's deployment, then move all their refs at once.

    Args:
        rt: the runtime.
        commit: the candidate commit (every deployment's source).
        lenses: every lens's run with the state its steps ended in; runs whose
            action does not move a ref pass through unchanged.

    Returns:
        The runs, in order, the moved ones with ``recorded`` and ``serving_after``
        set to their new deployment (``None`` after a retirement).

    Raises:
        RefConflict: a serving ref moved since the plan; no ref moved (re-plan).
    """
    repo = rt.repo
    updates: list[refstore.RefUpdate] = []
    out: list[LensRun] = []
    for run, state in lenses:
        if not run.action.moves_ref:
            out.append(run)
            continue
        if run.action is Action.RETIRED:
            oid, moves = _retirement(rt, commit, run, state.serving_bindings)
            out.append(replace(run, recorded=oid, serving_after=None))
        else:
            oid, moves = _deployment(rt, commit, run, state)
            out.append(replace(run, recorded=oid, serving_after=oid))
        updates += moves
    where = f" --env {rt.environment}" if rt.environment else ""
    refstore.update_refs(
        repo, updates, reason=f"dst apply{where} {commit[:12]}", env=rt.environment
    )
    return out


def _deployment(
    rt: Runtime, commit: Oid, run: LensRun, state: LensState
) -> tuple[Oid, list[refstore.RefUpdate]]:
    """Write one promoted lens's deployment commit; the ref update that serves it."""
    repo, plan = rt.repo, run.plan
    if plan.candidate_tree is None or state.candidate is None:
        raise RuntimeError(f"lens {plan.lens}: promoted without a candidate tree")
    bindings, record = state_for(run, commit, state.candidate, state.serving_bindings)
    s = run.score
    oid = refstore.write_deployment(
        repo,
        lens_tree=plan.candidate_tree,
        bindings=bindings,
        run=record,
        meta=meta_for(run, "promote", commit, plan.serving),
        # A lens that comes back after a retirement continues its history from the
        # retirement, so a later retirement is a fast-forward of the first.
        parents=[
            plan.serving
            or refstore.ref_target(repo, refstore.retired_ref(plan.lens, rt.environment))
            or refstore.history_root(repo, plan.lens),
            commit,
        ],
        message=f"promote {plan.lens} {commit[:12]} score {s['correct']}/{s['total']}"
        + refstore.env_note(rt.environment),
    )
    ref = refstore.serving_ref(plan.lens, rt.environment)
    return oid, [refstore.RefUpdate(ref, plan.serving, oid)]


def retire_warning(plan: LensPlan) -> str:
    """The loud line for a candidate that deletes a serving lens."""
    answers = plan.active_before
    return (
        f"WARNING the candidate deletes lens {plan.lens}: it stops serving ({answers} active "
        f"certified answer(s) go with it); apply records a retirement deployment and keeps "
        f"the history at {refstore.retired_ref(plan.lens)}"
    )


def _retirement(
    rt: Runtime, commit: Oid, run: LensRun, serving_bindings: Bindings
) -> tuple[Oid, list[refstore.RefUpdate]]:
    """Write the retirement deployment of a lens the candidate deletes.

    The commit keeps the last served lens tree and bindings, names the
    candidate as its source and the serving deployment as its first parent;
    the returned updates remove the serving ref and point
    ``refs/dst/retired/<lens>`` at it, both by compare-and-swap, so the lens
    stops serving and its history stays reachable.
    """
    repo, plan = rt.repo, run.plan
    if plan.serving is None or plan.serving_tree is None:
        raise RuntimeError(f"lens {plan.lens}: retired while nothing serves it")
    _, record = state_for(run, commit, None, serving_bindings)
    oid = refstore.write_deployment(
        repo,
        lens_tree=plan.serving_tree,
        bindings=serving_bindings,
        run=record,
        meta=meta_for(run, "retired", commit, plan.serving),
        parents=[plan.serving, commit],
        message=f"retire {plan.lens} {commit[:12]} (lens deleted from the source)"
        + refstore.env_note(rt.environment),
    )
    retired = refstore.retired_ref(plan.lens, rt.environment)
    return oid, [
        refstore.RefUpdate(refstore.serving_ref(plan.lens, rt.environment), plan.serving, None),
        refstore.RefUpdate(retired, refstore.ref_target(repo, retired), oid),
    ]


def record_attempts(rt: Runtime, commit: Oid, runs: list[LensRun]) -> list[LensRun]:
    """Record each blocking lens's run under ``refs/dst/attempts/<lens>`` (never served).

    Returns:
        The runs, in order, the recorded ones with ``recorded`` set; a lost
        compare-and-swap adds "attempt not recorded" to the run's messages instead.
    """
    return [_attempt(rt, commit, run) if run.action.blocks else run for run in runs]


RECOVERED = "recovered"
"""The action of the attempt record an apply writes when a lens recovers without a new
deployment (:func:`record_recoveries`)."""


def record_recoveries(rt: Runtime, commit: Oid, runs: list[LensRun]) -> list[LensRun]:
    """Record each unchanged lens that recovered as a ``recovered`` attempt (never served).

    A lens recovers unchanged when its candidate lens tree is the one serving, its last
    attempt blocked (or stood down) after that deployment was recorded, and the
    candidate contains the commit that attempt tried: the commit that blocked was
    reverted, so what serves is what the branch holds again. The record makes the
    recovery known once: ``dst status`` no longer shows the block, and the next apply
    finds a last attempt that did not block (:func:`reconciler.notify.recovered`).

    Returns:
        The runs, in order, the recovered ones with ``recorded`` set to the record.
    """
    return [
        _attempt(rt, commit, run, RECOVERED) if _recovers(rt, commit, run) else run for run in runs
    ]


def _recovers(rt: Runtime, commit: Oid, run: LensRun) -> bool:
    plan = run.plan
    if run.action is not Action.UNCHANGED or plan.serving is None:
        return False
    attempt = refstore.ref_target(rt.repo, refstore.attempts_ref(plan.lens, rt.environment))
    if attempt is None:
        return False
    try:
        tried = refstore.read_deployment(rt.repo, attempt, bindings=False)
        serving = refstore.read_deployment(rt.repo, plan.serving, bindings=False)
    except DstError:
        return False
    blocked = tried.info.action in (Action.BLOCKED.value, Action.STOOD_DOWN.value)
    return (
        blocked
        and _after(rt, tried, serving)
        and tried.info.source != commit
        and gitstate.contains(rt.repo, commit, tried.info.source)
    )


def _attempt(rt: Runtime, commit: Oid, run: LensRun, action: str | None = None) -> LensRun:
    repo, plan = rt.repo, run.plan
    action = action or str(run.action)
    if action == RECOVERED:
        note = (
            f"recovered: {commit[:12]} holds the lens tree serving since "
            f"{str(plan.serving)[:12]} again, so the change the last attempt blocked is undone"
        )
        run = replace(run, messages=[note, *run.messages])
    tree = plan.candidate_tree or plan.serving_tree
    if tree is None:
        return run
    ref = refstore.attempts_ref(plan.lens, rt.environment)
    last = refstore.ref_target(repo, ref)
    _, record = state_for(run, commit, None, Bindings())
    try:
        oid = refstore.advance(
            repo,
            ref,
            last,
            refstore.NewDeployment(
                lens=plan.lens,
                source=commit,
                lens_tree=tree,
                bindings=Bindings(),
                run=record,
                meta=meta_for(run, action, commit, last),
                message=f"{action} {plan.lens} {commit[:12]} score "
                f"{run.score['correct']}/{run.score['total']}{refstore.env_note(rt.environment)}",
            ),
            reason=f"dst apply {commit[:12]} ({action})",
        )
    except RefConflict as exc:
        return replace(run, messages=[*run.messages, f"attempt not recorded: {exc.message}"])
    return replace(run, recorded=oid)


def newest_outcomes(rt: Runtime, plan: LensPlan) -> LensPlan:
    """``plan`` with each removed active answer's newest recorded outcome.

    The plan knows only the serving bindings' stamp ("correct at <source>"), which a later
    blocked attempt may contradict. The newest record that ran the answer wins: the lens's
    last attempt when it was recorded after the serving deployment, then the serving
    deployment's own run; the stamp stays when neither ran it. Each reads
    ``"<outcome> at <source commit, 12 hex>"``, and a failure adds the stamp's
    ``"last correct at …"`` or ``"never reproduced"``.
    """
    if not plan.removed_active or plan.serving is None:
        return plan
    serving = refstore.read_deployment(rt.repo, plan.serving, bindings=False)
    records: list[tuple[str, dict[str, Any]]] = []
    attempt = refstore.ref_target(rt.repo, refstore.attempts_ref(plan.lens, rt.environment))
    for oid in (attempt, plan.serving):
        if oid is None:
            continue
        try:
            dep = refstore.read_deployment(rt.repo, oid, bindings=False)
            if oid == attempt and not _after(rt, dep, serving):
                continue
            records.append((str(dep.info.source), refstore.read_run(rt.repo, oid)))
        except DstError:
            continue
    out: list[tuple[AnswerId, str]] = []
    for aid, stamp in plan.removed_active:
        ran = (
            (str(r["outcome"]), source[:12])
            for source, run in records
            for r in [*run.get("results", []), *run.get("self_test", [])]
            if r.get("answer") == aid and r.get("outcome")
        )
        newest = next(ran, None)
        if newest is None:
            out.append((aid, stamp))
            continue
        outcome, at = newest
        # a failure keeps what the stamp knew: when it was last correct, or that it never was
        known = stamp if stamp.startswith("never") else f"last {stamp}"
        out.append((aid, f"{outcome} at {at}" + ("" if outcome == "correct" else f", {known}")))
    return replace(plan, removed_active=tuple(out))


def _after(rt: Runtime, attempt: refstore.Deployment, serving: refstore.Deployment) -> bool:
    """The attempt was recorded after the serving deployment. Times are whole seconds; on
    a tie it is later when it tried a commit that contains the one serving."""
    if attempt.info.recorded_at != serving.info.recorded_at:
        return attempt.info.recorded_at > serving.info.recorded_at
    tried, served = attempt.info.source, serving.info.source
    return tried != served and gitstate.contains(rt.repo, tried, served)
