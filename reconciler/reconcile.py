"""The reconcile: plan → data checks → suite → self-test → gate → promote, for every lens.

Each lens passes through :data:`LENS_STEPS` (plan, data checks, suite, self-test,
behavioural cases, gate), a tuple of functions
``(StepContext, LensState) -> LensState`` that return new frozen values; the
lens's :class:`~reconciler.results.Action` is decided once, after the gate; then
the one cross-lens step, :func:`reconciler.promote.promote`, moves refs. After the
refs moved (or the blocked attempts were recorded) an apply's lens events go to the
``dst.yaml`` webhooks (:func:`reconciler.notify.announce`); dry runs send nothing.

* ``dst plan`` runs ``LENS_STEPS[:1]`` (:data:`PLAN_STEPS`): it plans and runs nothing;
* ``dst apply --dry-run`` and the pre-push hook run :data:`LENS_STEPS` and stop;
* ``dst apply`` and the Action run :data:`LENS_STEPS`, then promote;
* watch runs :data:`LENS_STEPS` on the working tree (:func:`check_worktree`);
* ``dst test`` runs its own prefix-compatible tuple (:mod:`reconciler.verify`).

"Already serving this tree" is success, not work. An apply is all-or-nothing
across the lenses it touches: if any lens blocks, no serving ref moves; otherwise
every promoted lens's ref moves in one reference transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from reconciler.assets import PlanMemo
from reconciler.candidate import commit_states, worktree_states
from reconciler.context import Runtime
from reconciler.gate import GateVerdict, decide
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.git.fetched import require_fetched
from reconciler.ids import Oid
from reconciler.lens import Answer, Lens
from reconciler.notify import announce
from reconciler.plan import LensPlan, Planner
from reconciler.promote import (
    newest_outcomes,
    promote,
    record_attempts,
    record_recoveries,
    retire_warning,
)
from reconciler.results import (
    Action,
    LensRun,
    LensState,
    RunReport,
    recertify_notes,
    shrink_notes,
)

if TYPE_CHECKING:
    from reconciler.suite import AnswerResult, Scoring

Command = Literal["plan", "apply", "watch", "test"]


@dataclass(frozen=True)
class StepContext:
    """What every step of one command shares.

    Attributes:
        rt: the runtime (repository, warehouses, progress sink).
        command: ``plan``, ``apply``, ``watch`` (the working tree) or ``test``.
        dry_run: the gate runs but no ref moves and nothing is recorded.
        allow_rewind: promote a candidate that does not contain what serves now.
    """

    rt: Runtime
    command: Command
    dry_run: bool = False
    allow_rewind: bool = False


Step = Callable[[StepContext, LensState], LensState]


# -- the steps -------------------------------------------------------------------------


def plan_step(ctx: StepContext, state: LensState) -> LensState:
    """Plan the lens and say what the suite will run (runs nothing).

    A candidate that does not contain the serving source commit is refused
    (``refused``) unless this is a dry run or ``--allow-rewind``, where it warns.
    With ``--env E``, a candidate lens tree that E's ``promote_from`` environment
    does not serve yet is refused too (a dry run warns).
    """
    plan = state.plan or Planner(PlanMemo(_memo_dir(ctx.rt))).plan_lens(
        state.name,
        candidate=state.candidate,
        candidate_commit=state.candidate_commit,
        candidate_tree=state.candidate_tree,
        serving=state.serving_lens,
        serving_deployment=state.serving,
        serving_tree=state.serving_tree,
        bindings=state.serving_bindings,
    )
    if state.error:
        return replace(state, plan=plan)
    plan = newest_outcomes(ctx.rt, plan)  # a removed answer's newest outcome, not its stamp
    if ctx.command == "plan":
        notes: list[str] = []
        if state.candidate is None and not plan.unchanged:
            notes = [retire_warning(plan)]
        elif state.candidate is not None:
            notes = ctx.rt.leaner_notes(state.candidate)
        upstream = _not_upstream(ctx.rt, plan)
        notes = [*([f"WARNING {upstream}"] if upstream else []), *notes]
        return replace(state, plan=plan, messages=(*state.messages, *notes))
    rewind = _rewind(ctx.rt, plan, state.serving_source)
    if rewind and not (ctx.dry_run or ctx.allow_rewind):
        return replace(state, plan=plan, refused=rewind, messages=(*state.messages, rewind))
    upstream = _not_upstream(ctx.rt, plan)
    if upstream and not ctx.dry_run:
        return replace(state, plan=plan, refused=upstream, messages=(*state.messages, upstream))
    lead = [f"WARNING {why}" for why in (rewind, upstream) if why]
    if plan.unchanged:
        notes = ["already serving this lens tree"]
    elif state.candidate is None and plan.serving is not None:
        notes = [retire_warning(plan)]
    elif state.candidate is None:
        notes = ["lens is not in the candidate and nothing serves it"]
    else:
        notes = ctx.rt.leaner_notes(state.candidate)
    gated = plan.gated if plan.gate != "off" else ()
    return replace(
        state,
        plan=plan,
        messages=(*state.messages, *lead, *notes),
        suite=gated,
        cases_wanted=plan.gate != "off" and bool(plan.gated or plan.self_test),
    )


def _memo_dir(rt: Runtime) -> Path | None:
    """Where plans keep what they derive from lens versions: ``.dst/plan/`` of the work tree."""
    return None if rt.repo.is_bare else rt.root / ".dst" / "plan"


def data_step(ctx: StepContext, state: LensState) -> LensState:
    """Hold the candidate's tables and declared keys against the warehouse.

    The checks of ``dst validate --warehouse`` (:func:`reconciler.warehouse.declared.verify_keys`),
    one bounded query per model. Under ``block`` a declared primary key that is not
    unique refuses the lens unrun (every many-to-one join through it fans out); under
    ``warn`` it is a ``WARNING`` line. A table that cannot be read is always a
    ``WARNING`` line, never silent: the answers that read it fail on their own, and the
    gate judges them. A gate that is ``off``, or cannot score, checks nothing here.
    """
    plan = state.planned
    if state.settled or ctx.command not in ("apply", "watch") or plan.gate == "off":
        return state
    lens = _candidate(state)
    scoring = state.scoring or ctx.rt.scoring_for(lens)
    if scoring.cannot_score is not None or scoring.executor is None:
        return replace(state, scoring=scoring)
    from reconciler.warehouse.declared import UnreadableTable, verify_keys  # lazy: apply only

    errors = verify_keys(lens, {}, scoring.executor, dialect=lens.config.dialect)
    if not errors:
        return replace(state, scoring=scoring)

    def line(e: Exception) -> str:
        message, fix = getattr(e, "message", str(e)), getattr(e, "fix", None)
        return f"{message}; fix: {fix}" if fix else message

    keys = [line(e) for e in errors if not isinstance(e, UnreadableTable)]
    warned = [f"WARNING {line(e)}" for e in errors if isinstance(e, UnreadableTable)]
    if plan.gate == "warn" or not keys:
        warned += [f"WARNING {k}" for k in keys]
        return replace(state, scoring=scoring, messages=(*state.messages, *warned))
    why = f"the warehouse contradicts the lens: {keys[0]}"
    return replace(state, scoring=scoring, refused=why, messages=(*state.messages, *keys, *warned))


def suite_step(ctx: StepContext, state: LensState) -> LensState:
    """Score the planned answers against the warehouse.

    The warehouse opens only when something must run (answers, self-test or
    cases); when the gate cannot score (no warehouse, no generator tier) the
    reason waits in ``scoring`` for the later steps and the gate.
    """
    if state.settled:
        return state
    plan, lens = state.planned, _candidate(state)
    if not (state.suite or plan.self_test or state.cases_wanted):
        return state
    scoring = state.scoring or ctx.rt.scoring_for(lens, strict=ctx.command == "test")
    if scoring.cannot_score is not None or scoring.executor is None:
        return replace(state, scoring=scoring)
    messages = state.messages
    if scoring.no_embedder and not any(scoring.no_embedder in m for m in messages):
        messages = (*messages, f"leaner than production: {scoring.no_embedder}")
    answers = [lens.answers[aid] for aid in state.suite]
    over = ctx.rt.over_budget(lens, [*answers, *(lens.answers[a] for a in plan.self_test)], scoring)
    if over is not None:  # stand down before the first call that would not fit
        return replace(state, scoring=replace(scoring, cannot_score=over), messages=messages)
    ctx.rt.expect(len(state.suite) + len(plan.self_test))
    results = _run(ctx, lens, scoring, answers)
    return replace(state, scoring=scoring, messages=messages, results=results)


def self_test_step(ctx: StepContext, state: LensState) -> LensState:
    """Run the answers the change creates or re-authors against their just-stored oracle."""
    plan = state.planned
    if state.settled or not plan.self_test:
        return state
    lens = _candidate(state)
    scoring = state.scoring or ctx.rt.scoring_for(lens)
    if scoring.cannot_score is not None or scoring.executor is None:
        skipped = f"self-test skipped: {scoring.cannot_score}"
        return replace(state, scoring=scoring, messages=(*state.messages, skipped))
    answers = [lens.answers[aid] for aid in plan.self_test]
    verbs: dict[str, str] = dict.fromkeys(plan.self_test, "self-testing")
    return replace(state, scoring=scoring, self_test=_run(ctx, lens, scoring, answers, verbs))


def cases_step(ctx: StepContext, state: LensState) -> LensState:
    """Run the lens's behavioural cases (``evals/cases.yaml``) when the plan wants them."""
    if state.settled or not state.cases_wanted:
        return state
    lens = _candidate(state)
    scoring = state.scoring or ctx.rt.scoring_for(lens, strict=ctx.command == "test")
    if scoring.cannot_score is not None or scoring.executor is None:
        return replace(state, scoring=scoring)
    from reconciler.cases import run_cases  # lazy: a plan runs no case (nor the generators)

    cases = run_cases(
        lens,
        scoring.executor,
        scoring.values,
        smart=scoring.smart,
        progress=ctx.rt.progress,
        embedder=scoring.embedder,
        command=scoring.command,
    )
    return replace(state, scoring=scoring, cases=tuple(cases))


def gate_step(ctx: StepContext, state: LensState) -> LensState:
    """Apply the lens's gate policy to what ran (:func:`reconciler.gate.decide`).

    Then say which active answers the change removes, if any
    (:func:`~reconciler.results.shrink_notes`), and which it re-authors under their
    old provenance (:func:`~reconciler.results.recertify_notes`).
    """
    if state.settled:
        return state
    plan, lens = state.planned, _candidate(state)
    files = {aid: f"{lens.root}/{lens.sources.get(f'answers/{aid}', '')}" for aid in plan.self_test}
    decision = decide(
        plan,
        state.results,
        state.self_test,
        cannot_score=state.scoring.cannot_score if state.scoring else None,
        files=files,
        cases=state.cases,
        flaky=lens.config.flaky,
    )
    return replace(
        state,
        # after the verdict's own lines: the first message is the recorded reason
        messages=(
            *state.messages,
            *decision.messages,
            *shrink_notes(plan),
            *recertify_notes(plan),
        ),
        verdict=decision.verdict,
        unreached=decision.unreached,
    )


LENS_STEPS: tuple[Step, ...] = (
    plan_step,
    data_step,
    suite_step,
    self_test_step,
    cases_step,
    gate_step,
)
"""The steps every lens goes through, in order; promote follows across lenses."""

PLAN_STEPS: tuple[Step, ...] = LENS_STEPS[:1]
"""``dst plan``: the plan step alone."""

_ACTIONS = {
    GateVerdict.PROMOTE: Action.PROMOTED,
    GateVerdict.BLOCK: Action.BLOCKED,
    GateVerdict.STAND_DOWN: Action.STOOD_DOWN,
}


def run_steps(ctx: StepContext, state: LensState, steps: Iterable[Step]) -> LensState:
    """``state`` after each of ``steps`` in turn."""
    for step in steps:
        state = step(ctx, state)
    return state


def action_of(ctx: StepContext, state: LensState) -> Action:
    """The lens's own action once its steps are done (before any cross-lens rollback)."""
    plan = state.planned
    if state.error:
        return Action.ERROR
    if ctx.command == "plan":
        if plan.unchanged:
            return Action.UNCHANGED
        return Action.RETIRE if state.candidate is None else Action.PLANNED
    if state.refused:
        return Action.BLOCKED
    if plan.unchanged:
        return Action.UNCHANGED
    if state.candidate is None:
        return Action.RETIRED if plan.serving is not None else Action.SKIPPED
    if state.verdict is None:
        raise RuntimeError(f"lens {state.name}: the gate step did not run")
    return _ACTIONS[state.verdict]


def decide_actions(ctx: StepContext, states: list[LensState]) -> list[tuple[Action, str | None]]:
    """Every lens's action, decided once: its own, unless the apply rolls back.

    Returns:
        ``(action, why)`` per state, in order; ``why`` is set when a lens that
        would have moved its ref is ``skipped`` because another lens did not pass.
    """
    own = [action_of(ctx, s) for s in states]
    blocking = [s.name for s, a in zip(states, own, strict=True) if a.blocks]
    if not blocking or ctx.command == "watch":
        return [(a, None) for a in own]
    names = ", ".join(blocking)
    return [
        (Action.SKIPPED, f"not {a}: the apply rolls back because {names} did not pass")
        if a.moves_ref
        else (a, None)
        for a in own
    ]


def _candidate(state: LensState) -> Lens:
    if state.candidate is None:
        raise RuntimeError(f"lens {state.name}: no candidate to score")
    return state.candidate


def _run(
    ctx: StepContext,
    lens: Lens,
    scoring: Scoring,
    answers: list[Answer],
    verbs: dict[str, str] | None = None,
) -> tuple[AnswerResult, ...]:
    from reconciler.suite import run_answers  # lazy: a plan runs nothing

    results = tuple(
        run_answers(
            lens, answers, scoring, progress=ctx.rt.progress, announce=ctx.rt.answer, verbs=verbs
        )
    )
    ctx.rt.answers_done()
    return results


def _rewind(rt: Runtime, plan: LensPlan, source: Oid | None) -> str | None:
    """Why promoting ``plan``'s candidate would undo what serves, or ``None``.

    The serving deployment's source commit must be the candidate or one of its
    ancestors; otherwise changes promoted from elsewhere (another clone that
    won a race, a branch since abandoned) would silently disappear.
    """
    if source is None or plan.unchanged or plan.candidate is None:
        return None
    if gitstate.contains(rt.repo, plan.candidate, source):
        return None
    if rt.repo.is_shallow:
        # the source may sit behind the grafted boundary: that is not evidence of a rewind
        return (
            f"cannot tell: shallow clone: {source[:12]}, the commit lens {plan.lens} serves "
            f"now, is not reachable from {plan.candidate[:12]} here; fetch more history "
            f"(git fetch --unshallow), or pass --allow-rewind"
        )
    return (
        f"rewind refused: {plan.candidate[:12]} does not contain {source[:12]}, the commit "
        f"lens {plan.lens} serves now, so promoting it would undo changes that serve; merge "
        f"it first (git merge {source[:12]}), or pass --allow-rewind"
    )


def _not_upstream(rt: Runtime, plan: LensPlan) -> str | None:
    """Why ``plan``'s candidate may not be promoted in ``rt``'s environment yet, or ``None``.

    An environment with ``promote_from: S`` takes only a lens tree that already
    serves in S (DESIGN §3 "Environments"); the message names the command that
    promotes it there. A lens the candidate deletes, or one already serving
    here, passes.
    """
    environment = rt.environment_config()
    if environment is None or environment.promote_from is None:
        return None
    if plan.unchanged or plan.candidate_tree is None or plan.candidate is None:
        return None
    upstream = environment.promote_from
    oid = refstore.ref_target(rt.repo, refstore.serving_ref(plan.lens, upstream))
    if oid is not None and refstore.read_deployment(rt.repo, oid).lens_tree == plan.candidate_tree:
        return None
    where = "serves another version of it" if oid is not None else "does not serve it"
    return (
        f"promote through {upstream} first: environment {rt.environment} promotes from "
        f"{upstream}, which {where}; run `dst apply --env {upstream} --lens {plan.lens} "
        f"--to {plan.candidate[:12]}` first"
    )


# -- the commands ---------------------------------------------------------------------


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
        run_suite: ``False`` for ``dst plan``: the plan step only.
        allow_rewind: promote a candidate that does not contain the commit serving
            now (by default that blocks: it would undo what serves; a dry run warns).

    Returns:
        The report; exit code 0 promoted or nothing to do, 1 blocked or stood down.

    Raises:
        DstError: bad input or unreadable state (exit 2); nothing is promoted.
    """
    ctx = StepContext(rt, "apply" if run_suite else "plan", dry_run, allow_rewind)
    # environments and webhooks come from the candidate's committed dst.yaml
    rt.candidate = gitstate.resolve_commit(rt.repo, to)
    if run_suite and not dry_run:
        require_fetched(rt.repo, rt.environment)
    messages = [] if dry_run or not run_suite else refstore.recover(rt.repo, rt.environment)
    commit, inputs = commit_states(rt, to, only)
    states = [run_steps(ctx, s, LENS_STEPS if run_suite else PLAN_STEPS) for s in inputs]
    decided = decide_actions(ctx, states)
    runs = [
        LensRun.of(
            s,
            action,
            serving_after=None if action.moves_ref else s.planned.serving,
            messages=[why] if why else [],
        )
        for s, (action, why) in zip(states, decided, strict=True)
    ]
    if rt.environment is not None:
        messages.insert(0, f"environment {rt.environment} ({refstore.namespace(rt.environment)})")
    report = RunReport(ctx.command, runs, messages, dry_run=dry_run, environment=rt.environment)
    if to == "HEAD":
        dirty = gitstate.uncommitted_lens_paths(rt.repo, [only] if isinstance(only, str) else only)
        if dirty:
            report.messages.append(
                f"note: {len(dirty)} uncommitted change(s) under lenses/ (e.g. {dirty[0]}) are "
                f"not part of this {ctx.command}; it reads the committed HEAD"
            )
    if rt.uncommitted_config():
        report.messages.append(
            f"note: dst.yaml in the working tree differs from the one committed at "
            f"{commit[:12]}; environments and notifications are read from the commit"
        )
    if not run_suite:
        return report
    if any(r.action.blocks for r in runs):
        report.exit_code = 1
        if not dry_run:
            report.lenses = record_attempts(rt, commit, runs)
            announce(rt, report)
        return report
    if dry_run:
        for r in runs:
            r.serving_after = r.plan.serving
        if any(r.action.moves_ref for r in runs):
            report.messages.append("dry run: no ref moved")
        return report
    report.lenses = promote(rt, commit, list(zip(runs, states, strict=True)))
    report.lenses = record_recoveries(rt, commit, report.lenses)
    announce(rt, report)
    return report


def check_worktree(rt: Runtime, names: Collection[str] | None = None) -> RunReport:
    """Plan each working-tree lens against its serving version and gate it; promote nothing.

    Each lens is read from ``lenses/<name>/`` on disk (:func:`worktree_states`),
    planned against ``refs/dst/serving/<name>``, and goes through
    :data:`LENS_STEPS`, deciding as ``dst apply --dry-run`` would (no lens is
    skipped for another's block: each verdict stands alone). A lens whose files
    equal the serving lens tree byte for byte is ``unchanged`` without running
    anything; a serving lens gone from the working tree is ``retired`` (what an
    apply of it would do).

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
    ctx = StepContext(rt, "watch", dry_run=True)
    states = [run_steps(ctx, s, LENS_STEPS) for s in worktree_states(rt, names)]
    runs = [
        LensRun.of(s, action, serving_after=s.planned.serving)
        for s, (action, _) in zip(states, decide_actions(ctx, states), strict=True)
    ]
    report = RunReport("watch", runs, dry_run=True)
    if any(r.action is Action.ERROR for r in runs):
        report.exit_code = 2
    elif any(r.action.blocks for r in runs):
        report.exit_code = 1
    return report


def gate_lens(
    rt: Runtime, plan: LensPlan, candidate: Lens | None, prev: dict[str, int] | None
) -> LensRun:
    """One planned lens through the suite, self-test and gate steps (dry run, nothing written).

    Returns:
        The run, with the action its own gate decides.
    """
    ctx = StepContext(rt, "apply", dry_run=True)
    state = LensState(name=plan.lens, candidate=candidate, plan=plan, previous_score=prev)
    state = run_steps(ctx, state, LENS_STEPS)
    return LensRun.of(state, action_of(ctx, state), serving_after=plan.serving)


def plan_all(
    rt: Runtime, to: str, only: str | Collection[str] | None
) -> tuple[Oid, list[tuple[LensPlan, Lens | None, LensState]]]:
    """Plan every lens at ``to`` (the plan step alone, :func:`commit_states`).

    Returns:
        ``(candidate commit, [(plan, candidate lens, planned state)])`` sorted by lens.
    """
    ctx = StepContext(rt, "plan")
    commit, states = commit_states(rt, to, only)
    planned = [plan_step(ctx, s) for s in states]
    return commit, [(s.planned, s.candidate, s) for s in planned]
