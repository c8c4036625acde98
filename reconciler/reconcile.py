"""The reconcile: plan → suite → self-test → gate → promote, for every lens.

``dst apply``, ``dst plan``, the pre-push hook and watch mode all call
:func:`reconcile`; ``--dry-run`` (and ``plan``) is the same tuple of steps without
the promote step. "Already serving this tree" is success, not work. An apply is
all-or-nothing across the lenses it touches: if any lens blocks, no serving ref
moves; otherwise every promoted lens's ref moves in one reference transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import pygit2

from reconciler.bindings import Bindings
from reconciler.cases import run_cases
from reconciler.context import Runtime
from reconciler.errors import DstError, LensLoadError, RefConflict, StateError, UsageError
from reconciler.fanout import run_answers
from reconciler.gate import BLOCK, PROMOTE, STAND_DOWN, decide
from reconciler.generators import SmartCall
from reconciler.git import refs as refstore
from reconciler.git import trees as gitstate
from reconciler.lens import Lens, Oid, load_lens
from reconciler.plan import LensPlan, plan_lens, unchanged_plan
from reconciler.results import LensRun, RunReport, meta_for, state_for

Progress = Callable[[str], None]


def load_serving(
    repo: pygit2.Repository, name: str
) -> tuple[refstore.Deployment | None, Lens | None]:
    oid = refstore.ref_target(repo, refstore.serving_ref(name))
    if oid is None:
        return None, None
    dep = refstore.read_deployment(repo, oid)
    try:
        return dep, gitstate.load_lens_at(repo, gitstate.LensTree(name, dep.lens_tree))
    except LensLoadError as exc:
        raise StateError(
            f"the serving version of lens {name!r} (deployment {oid[:12]}) no longer loads: "
            f"{exc.message}",
            fix=f"it was promoted by a laxer dst; `dst rollback {name} --to DEPLOYMENT` to a "
            f"version that loads, or delete refs/dst/serving/{name} to re-promote from scratch",
        ) from None


def plan_all(
    rt: Runtime, to: str, only: str | Collection[str] | None
) -> tuple[Oid, list[tuple[LensPlan, Lens | None, refstore.Deployment | None]]]:
    """Plan every lens at revision ``to`` (or just ``only``: one name or several).

    Returns:
        ``(candidate commit, [(plan, candidate lens, serving deployment)])`` sorted by lens.

    Raises:
        LensLoadError: a candidate lens, or ``dst.yaml``, does not load (exit 2,
            nothing promoted).
        UsageError: ``to`` or ``only`` does not resolve.
    """
    repo = rt.repo
    commit = gitstate.resolve_commit(repo, to)
    rt.repo_config_url()  # a broken dst.yaml is bad input now, not a stand-down later
    trees = gitstate.lens_trees(repo, commit)
    names = sorted(set(trees) | set(refstore.served_lenses(repo)))
    if only is not None:
        wanted = [only] if isinstance(only, str) else sorted(only)
        for name in wanted:
            if name not in names:
                raise UsageError(
                    f"lens {name!r} is neither in {to} nor serving",
                    fix=f"use one of: {', '.join(names) or 'none'}",
                )
        names = wanted
    planned: list[tuple[LensPlan, Lens | None, refstore.Deployment | None]] = []
    for name in names:
        lens_tree = trees.get(name)
        same = _serving_unchanged(repo, name, lens_tree, commit)
        if same is not None:
            planned.append(same)
            continue
        dep, serving_lens = load_serving(repo, name)
        candidate: Lens | None = None
        if lens_tree is not None and (dep is None or dep.lens_tree != lens_tree.tree):
            candidate = gitstate.load_lens_at(repo, lens_tree)
        elif lens_tree is not None:
            candidate = serving_lens
        plan = plan_lens(
            name,
            candidate=candidate,
            candidate_commit=commit,
            candidate_tree=lens_tree.tree if lens_tree else None,
            serving=serving_lens,
            serving_deployment=dep.oid if dep else None,
            serving_tree=dep.lens_tree if dep else None,
            bindings=dep.bindings if dep else Bindings(),
        )
        planned.append((plan, candidate, dep))
    return commit, planned


def _serving_unchanged(
    repo: pygit2.Repository, name: str, lens_tree: gitstate.LensTree | None, commit: Oid
) -> tuple[LensPlan, None, refstore.Deployment] | None:
    """The plan of a lens whose candidate tree already serves, or ``None``.

    Only the serving deployment's state is read; the lens tree itself is never
    opened, so planning a push costs what its changed lenses cost.
    """
    if lens_tree is None:
        return None
    oid = refstore.ref_target(repo, refstore.serving_ref(name))
    if oid is None:
        return None
    dep = refstore.read_deployment(repo, oid)
    gate = dep.meta.get("gate")
    if dep.lens_tree != lens_tree.tree or gate not in ("off", "warn", "block"):
        return None
    plan = unchanged_plan(
        name,
        gate=str(gate),
        candidate_commit=commit,
        serving_deployment=dep.oid,
        serving_tree=dep.lens_tree,
    )
    return plan, None, dep


def reconcile(
    rt: Runtime,
    *,
    to: str = "HEAD",
    only: str | Collection[str] | None = None,
    dry_run: bool = False,
    run_suite: bool = True,
    allow_rewind: bool = False,
) -> RunReport:
    """Plan, gate and (unless ``dry_run``) promote every lens at ``to``.

    Args:
        rt: the runtime (repository, warehouse resolution, progress sink).
        to: the candidate revision.
        only: the lens (``--lens``) or lenses to apply alone; ``None`` for all.
        dry_run: run the gate but move no ref and record nothing.
        run_suite: ``False`` for ``dst plan``: plan only.
        allow_rewind: promote a candidate that does not contain the commit serving
            now (by default that blocks: it would undo what serves; a dry run warns).

    Returns:
        The report; exit code 0 promoted or nothing to do, 1 blocked or stood down.

    Raises:
        DstError: bad input or unreadable state (exit 2); nothing is promoted.
    """
    command = "apply" if run_suite else "plan"
    messages = [] if dry_run or not run_suite else refstore.recover(rt.repo)
    commit, planned = plan_all(rt, to, only)
    runs: list[LensRun] = []
    inputs: dict[str, tuple[Lens | None, Bindings]] = {}
    for plan, candidate, dep in planned:
        inputs[plan.lens] = (candidate, dep.bindings if dep else Bindings())
        prev = dict(dep.meta.get("score") or {}) if dep else None
        if not run_suite:
            action = "unchanged" if plan.unchanged else "planned"
            notes = []
            if candidate is None and not plan.unchanged:
                action, notes = "retire", [_retire_warning(plan)]
            elif candidate is not None:
                notes = rt.leaner_notes(candidate)
            runs.append(LensRun(plan, action, plan.serving, previous_score=prev, messages=notes))
            continue
        rewind = _rewind(rt, plan, dep)
        if rewind and not (dry_run or allow_rewind):
            runs.append(LensRun(plan, "blocked", previous_score=prev, messages=[rewind]))
            continue
        run = gate_lens(rt, plan, candidate, prev)
        if rewind:
            run.messages.insert(0, f"WARNING {rewind}")
        runs.append(run)
    report = RunReport(command, runs, messages, dry_run=dry_run)
    if to == "HEAD":
        dirty = gitstate.uncommitted_lens_paths(rt.repo)
        if dirty:
            report.messages.append(
                f"note: {len(dirty)} uncommitted change(s) under lenses/ (e.g. {dirty[0]}) are "
                f"not part of this {command}; it reads the committed HEAD"
            )
    if not run_suite:
        return report
    blocked = [r for r in runs if r.action in ("blocked", "stood_down")]
    if blocked:
        names = ", ".join(r.plan.lens for r in blocked)
        for r in runs:
            if r.action in ("promoted", "retired"):
                r.messages.append(
                    f"not {r.action}: the apply rolls back because {names} did not pass"
                )
                r.action = "skipped"
        report.exit_code = 1
        if not dry_run:
            _record_attempts(rt, commit, blocked)
        for r in runs:
            r.serving_after = r.plan.serving
        return report
    promoting = [r for r in runs if r.action in ("promoted", "retired")]
    if dry_run:
        for r in runs:
            r.serving_after = r.plan.serving
        if promoting:
            report.messages.append("dry run: no ref moved")
        return report
    _promote(rt, commit, [(r, *inputs[r.plan.lens]) for r in promoting])
    for r in runs:
        if r.action not in ("promoted", "retired"):
            r.serving_after = r.plan.serving
    return report


def _rewind(rt: Runtime, plan: LensPlan, dep: refstore.Deployment | None) -> str | None:
    """Why promoting ``plan``'s candidate would undo what serves, or ``None``.

    The serving deployment's source commit must be the candidate or one of its
    ancestors; otherwise changes promoted from elsewhere (another clone that
    won a race, a branch since abandoned) would silently disappear.
    """
    if dep is None or plan.unchanged or plan.candidate is None:
        return None
    source = dep.source
    if source == plan.candidate or rt.repo.descendant_of(plan.candidate, source):
        return None
    return (
        f"rewind refused: {plan.candidate[:12]} does not contain {source[:12]}, the commit "
        f"lens {plan.lens} serves now, so promoting it would undo changes that serve; merge "
        f"it first (git merge {source[:12]}), or pass --allow-rewind"
    )


def gate_lens(
    rt: Runtime, plan: LensPlan, candidate: Lens | None, prev: Mapping[str, int] | None
) -> LensRun:
    """Run one lens's scoped suite and self-test, then apply its gate policy.

    Args:
        rt: the runtime (warehouses open lazily, only when an answer must run).
        plan: the lens plan.
        candidate: the candidate lens (``None`` when the candidate removes it).
        prev: the serving deployment's score, for the report.

    Returns:
        The run, with ``action`` ``promoted`` (what the gate allows), ``blocked``,
        ``stood_down``, ``unchanged``, ``retired`` (the candidate deletes a
        serving lens: no suite runs, the promote step retires it) or
        ``skipped``; nothing is written.
    """
    if plan.unchanged:
        return LensRun(
            plan,
            "unchanged",
            plan.serving,
            previous_score=prev,
            messages=["already serving this lens tree"],
        )
    if candidate is None:
        if plan.serving is not None:
            return LensRun(plan, "retired", previous_score=prev, messages=[_retire_warning(plan)])
        return LensRun(
            plan,
            "skipped",
            plan.serving,
            previous_score=prev,
            messages=["lens is not in the candidate and nothing serves it"],
        )
    run = LensRun(plan, "promoted", previous_score=prev, messages=rt.leaner_notes(candidate))
    cannot_score: str | None = None
    executor = None
    smart: SmartCall | None = None
    needs_warehouse = (plan.gate != "off" and plan.gated) or plan.self_test
    if needs_warehouse:
        try:
            executor = rt.warehouse_for(candidate)
        except DstError as exc:
            cannot_score = exc.render()
        smart, no_smart = rt.smart_for(candidate)
        if executor is not None and "fast" not in candidate.config.generator.tiers and not smart:
            cannot_score = f"no generator tier resolves ({no_smart})"
    embedder = None
    if executor is not None and cannot_score is None:
        embedder, no_embedder = rt.embedder_for(candidate)
        if no_embedder and not any(no_embedder in m for m in run.messages):
            run.messages.append(f"leaner than production: {no_embedder}")
        values = rt.values_for(candidate, executor)
        rt.expect((len(plan.gated) if plan.gate != "off" else 0) + len(plan.self_test))
        gated = list(plan.gated) if plan.gate != "off" else []
        # Gated and self-test answers share one bounded pool; results keep plan order.
        results = run_answers(
            candidate,
            [candidate.answers[aid] for aid in [*gated, *plan.self_test]],
            executor,
            values,
            jobs=rt.jobs_for(candidate),
            smart=smart,
            progress=rt.progress,
            announce=rt.answer,
            verbs=dict.fromkeys(plan.self_test, "self-testing"),
            embedder=embedder,
        )
        run.results.extend(results[: len(gated)])
        run.self_test.extend(results[len(gated) :])
    elif plan.self_test and cannot_score is not None:
        run.messages.append(f"self-test skipped: {cannot_score}")
    files = {
        aid: f"{candidate.root}/{candidate.sources.get(f'answers/{aid}', '')}"
        for aid in plan.self_test
    }
    if executor is not None and cannot_score is None and plan.gate != "off":
        run.cases = run_cases(
            candidate,
            executor,
            rt.values_for(candidate, executor),
            smart=smart,
            progress=rt.progress,
            embedder=embedder,
        )
    decision = decide(
        plan, run.results, run.self_test, cannot_score=cannot_score, files=files, cases=run.cases
    )
    run.messages.extend(decision.messages)
    run.action = {PROMOTE: "promoted", BLOCK: "blocked", STAND_DOWN: "stood_down"}[decision.verdict]
    return run


def _promote(
    rt: Runtime, commit: Oid, promoting: list[tuple[LensRun, Lens | None, Bindings]]
) -> None:
    """Write each promoted (or retired) lens's deployment, then move all their refs in
    one transaction."""
    repo = rt.repo
    updates = []
    for run, lens, serving_bindings in promoting:
        plan = run.plan
        if run.action == "retired":
            updates += _retirement(rt, commit, run, serving_bindings)
            continue
        assert plan.candidate_tree is not None and lens is not None
        bindings, record = state_for(run, commit, lens, serving_bindings)
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
                or refstore.ref_target(repo, refstore.retired_ref(plan.lens))
                or refstore.history_root(repo, plan.lens),
                commit,
            ],
            message=f"promote {plan.lens} {commit[:12]} score {s['correct']}/{s['total']}",
        )
        run.recorded = oid
        run.serving_after = oid
        updates.append(refstore.RefUpdate(refstore.serving_ref(plan.lens), plan.serving, oid))
    try:
        refstore.update_refs(repo, updates, reason=f"dst apply {commit[:12]}")
    except RefConflict:
        for run, _, _ in promoting:
            run.serving_after = run.plan.serving
        raise


def _retire_warning(plan: LensPlan) -> str:
    answers = plan.active_before
    return (
        f"WARNING the candidate deletes lens {plan.lens}: it stops serving ({answers} active "
        f"certified answer(s) go with it); apply records a retirement deployment and keeps "
        f"the history at {refstore.retired_ref(plan.lens)}"
    )


def _retirement(
    rt: Runtime, commit: Oid, run: LensRun, serving_bindings: Bindings
) -> list[refstore.RefUpdate]:
    """Write the retirement deployment of a lens the candidate deletes.

    The commit keeps the last served lens tree and bindings, names the
    candidate as its source and the serving deployment as its first parent;
    the returned updates remove the serving ref and point
    ``refs/dst/retired/<lens>`` at it, both by compare-and-swap, so the lens
    stops serving and its history stays reachable.
    """
    repo, plan = rt.repo, run.plan
    assert plan.serving is not None and plan.serving_tree is not None
    _, record = state_for(run, commit, None, serving_bindings)
    oid = refstore.write_deployment(
        repo,
        lens_tree=plan.serving_tree,
        bindings=serving_bindings,
        run=record,
        meta=meta_for(run, "retired", commit, plan.serving),
        parents=[plan.serving, commit],
        message=f"retire {plan.lens} {commit[:12]} (lens deleted from the source)",
    )
    run.recorded = oid
    run.serving_after = None
    retired = refstore.retired_ref(plan.lens)
    return [
        refstore.RefUpdate(refstore.serving_ref(plan.lens), plan.serving, None),
        refstore.RefUpdate(retired, refstore.ref_target(repo, retired), oid),
    ]


def _record_attempts(rt: Runtime, commit: Oid, runs: list[LensRun]) -> None:
    repo = rt.repo
    for run in runs:
        plan = run.plan
        tree = plan.candidate_tree or plan.serving_tree
        if tree is None:
            continue
        ref = refstore.attempts_ref(plan.lens)
        last = refstore.ref_target(repo, ref)
        _, record = state_for(run, commit, None, Bindings())
        try:
            run.recorded = refstore.advance(
                repo,
                ref,
                last,
                lens=plan.lens,
                source=commit,
                lens_tree=tree,
                bindings=Bindings(),
                run=record,
                meta=meta_for(run, run.action, commit, last),
                message=f"{run.action} {plan.lens} {commit[:12]} score "
                f"{run.score['correct']}/{run.score['total']}",
                reason=f"dst apply {commit[:12]} ({run.action})",
            )
        except RefConflict as exc:
            run.messages.append(f"attempt not recorded: {exc.message}")


def check_worktree(rt: Runtime, names: Collection[str] | None = None) -> RunReport:
    """Plan each working-tree lens against its serving version and gate it; promote nothing.

    Each lens is read from ``lenses/<name>/`` on disk, planned against
    ``refs/dst/serving/<name>``, and its scoped suite (stale gated answers and
    self-test) runs against the warehouse; the gate policy then decides as it
    would for ``dst apply --dry-run``. A lens whose files equal the serving lens
    tree byte for byte is ``unchanged`` without running anything; a serving lens
    gone from the working tree is ``skipped``.

    Args:
        rt: the runtime; warehouses it opens stay open until ``rt.close()``.
        names: lenses to check; ``None`` for every lens on disk or serving.

    Returns:
        A dry-run report (command ``watch``, candidate ``None`` = the working
        tree). Exit code 0 when every lens would promote or is unchanged, 1 when
        any blocks or stands down, 2 when a lens does not load (its run has
        action ``error`` and the message names the file and line).

    Raises:
        UsageError: a name in ``names`` is neither on disk nor serving.
        StateError: serving state cannot be read.
    """
    repo, root = rt.repo, rt.root
    on_disk = set(gitstate.worktree_lens_names(root))
    known = sorted(on_disk | set(refstore.served_lenses(repo)))
    wanted = known
    if names is not None:
        wanted = sorted(names)
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise UsageError(
                f"lens {unknown[0]!r} is neither in the working tree nor serving",
                fix=f"use one of: {', '.join(known) or 'none'}",
            )
    runs = [_check_lens(rt, name, name in on_disk) for name in wanted]
    for run in runs:
        run.serving_after = run.plan.serving
    report = RunReport("watch", runs, dry_run=True)
    if any(r.action == "error" for r in runs):
        report.exit_code = 2
    elif any(r.action in ("blocked", "stood_down") for r in runs):
        report.exit_code = 1
    return report


def _check_lens(rt: Runtime, name: str, on_disk: bool) -> LensRun:
    dep, serving = load_serving(rt.repo, name)
    prev = dict(dep.meta.get("score") or {}) if dep else None
    candidate = None
    tree: Oid | None = None
    if on_disk:
        try:
            files = gitstate.worktree_files(rt.root, name)
            if dep is not None and gitstate.tree_files(rt.repo, dep.lens_tree) == files:
                # The serving tree itself: the plan short-circuits to "unchanged",
                # as it does for a commit, and nothing needs parsing.
                candidate, tree = serving, dep.lens_tree
            else:
                candidate = load_lens(name, files)
        except (LensLoadError, OSError) as exc:
            # OSError: a file went away between listing and reading (an editor's
            # save in flight); that save's own event brings the next check.
            why = exc.render() if isinstance(exc, LensLoadError) else f"{name}: {exc}"
            plan = LensPlan(
                name,
                serving.config.eval_gate if serving else "block",
                dep.oid if dep else None,
                dep.lens_tree if dep else None,
                None,
                None,
                False,
            )
            return LensRun(plan, "error", previous_score=prev, messages=[why])
    plan = plan_lens(
        name,
        candidate=candidate,
        candidate_commit=None,
        candidate_tree=tree,
        serving=serving,
        serving_deployment=dep.oid if dep else None,
        serving_tree=dep.lens_tree if dep else None,
        bindings=dep.bindings if dep else Bindings(),
    )
    return gate_lens(rt, plan, candidate, prev)
