"""``dst test``: re-verify the whole active corpus of what serves (DESIGN §5).

Each serving lens goes through :data:`VERIFY_STEPS` — the full-corpus plan, the
same suite and cases steps the reconcile runs (one scoring set-up:
:meth:`reconciler.context.Runtime.scoring_for`), and the re-stamp — so green
answers re-stamp, failures keep their old stamp and are reported, and the run
is recorded as a *verification* on ``refs/dst/verify/<lens>`` by compare-and-swap
(:mod:`reconciler.git.verifications`), so the accuracy trend accrues in ``dst log``
while the serving ref never moves: a clone's serving ref stays equal to the remote's
it came from, and ``dst sync`` carries the verification like an attempt. The run
starts from the serving deployment's bindings overlaid with the newest verification
of its lens tree, so each re-stamp builds on the last.

It follows the apply gate's rule for declines (DESIGN §5): an answer the generator
never reproduced (no green stamp) that still declines is *unreached*, listed loudly
("untested: unreached by the generator") and does not fail the run, unless the lens
sets ``strict_declines: true``; an answer reproduced before that now declines fails.
A *flaky* answer (``samples:``) fails unless the lens sets ``flaky: warn``.
"""

from __future__ import annotations

from dataclasses import replace

from reconciler.assets import lens_assets
from reconciler.bindings import select_stale
from reconciler.candidate import serving_state
from reconciler.context import Runtime
from reconciler.gate import UNREACHED, flaky_lines, unreached_answers
from reconciler.git import refs as refstore, trees as gitstate, verifications
from reconciler.git.crash import crash_point
from reconciler.history import serving_or_fail
from reconciler.ids import AnswerId
from reconciler.plan import LensPlan
from reconciler.reconcile import Step, StepContext, cases_step, run_steps, suite_step
from reconciler.results import Action, LensRun, LensState, RunReport, meta_for, state_for
from reconciler.suite import AnswerResult, Outcome


def full_corpus_plan(ctx: StepContext, state: LensState) -> LensState:
    """Plan the serving version against itself: every active answer runs, and the cases."""
    lens = state.candidate
    if lens is None or state.serving is None or state.serving_tree is None:
        raise RuntimeError(f"lens {state.name}: dst test needs a serving version")
    assets = lens_assets(lens)
    _, deps = select_stale(lens, assets, state.serving_bindings, None)
    active = tuple(AnswerId(a.id) for a in lens.active_answers())
    plan = LensPlan(
        lens=state.name,
        gate=lens.config.eval_gate,
        serving=state.serving,
        serving_tree=state.serving_tree,
        candidate=state.serving_source,
        candidate_tree=state.serving_tree,
        unchanged=False,
        active_before=len(active),
        active_after=len(active),
        deps=deps,
        assets=assets,
        stamped=frozenset(aid for aid in deps if aid in state.serving_bindings.answers),
        strict_declines=lens.config.strict_declines,
    )
    notes = ctx.rt.leaner_notes(lens)
    return replace(
        state, plan=plan, messages=(*state.messages, *notes), suite=active, cases_wanted=True
    )


def restamp(ctx: StepContext, state: LensState) -> LensState:
    """Say what failed, then record the run as a verification of the serving deployment
    (compare-and-swap on ``refs/dst/verify/<lens>``; the serving ref never moves); a run
    that stood down (its generation budget would not fit) records nothing.

    Raises:
        RefConflict: the verify ref kept moving through every try (re-run).
    """
    unreached = tuple(r.answer for r in unreached_answers(state.planned, state.results, ()))
    state = replace(state, unreached=unreached)
    failing = [r for r in state.results if _fails(state, r)]
    notes: list[str] = untested_lines(state)
    if failing:
        notes.append(
            f"{len(failing)} of {len(state.results)} answers failed; they keep their old "
            f"stamp: fix the definition, or re-certify / retire the answer"
        )
    failing_cases = [c for c in state.cases if not c.passed]
    if failing_cases:
        notes.append(
            f"{len(failing_cases)} of {len(state.cases)} behavioural cases failed: the lens "
            f"no longer clarifies, refuses or answers as evals/cases.yaml expects"
        )
    scoring = state.scoring
    if scoring is not None and scoring.cannot_score is not None:
        notes.append(f"test STOOD DOWN: {scoring.cannot_score}")
    elif not state.results:
        notes.append("gate SKIPPED: the lens has no active certified answers")
    notes += flaky_lines(state.results, _policy(state))
    state = replace(state, messages=(*state.messages, *notes))
    if scoring is not None and scoring.cannot_score is not None:
        return state  # nothing was verified: no verification
    source, serving = state.serving_source, state.serving
    if source is None or serving is None:
        raise RuntimeError(f"lens {state.name}: dst test needs a serving version")
    bindings, record = state_for(state, source, state.candidate, state.serving_bindings)
    s = state.score
    crash_point("restamp-before")
    deployment = refstore.read_deployment(ctx.rt.repo, serving, bindings=False)
    oid = verifications.record(
        ctx.rt.repo,
        deployment,
        env=ctx.rt.environment,
        bindings=bindings,
        run=record,
        meta=meta_for(state, "verify", source, None),
        message=f"verify {state.name} {source[:12]} score {s['correct']}/{s['total']}"
        + refstore.env_note(ctx.rt.environment),
        reason=f"dst test {state.name}",
    )
    crash_point("restamp-after")
    return replace(state, recorded=oid)


def _policy(state: LensState) -> str:
    return state.candidate.config.flaky if state.candidate is not None else "block"


def _fails(state: LensState, result: AnswerResult) -> bool:
    """The answer fails ``dst test``: not correct, not unreached (DESIGN §5), and not a
    flaky one the lens tolerates (``flaky: warn``)."""
    if result.outcome is Outcome.CORRECT or result.answer in state.unreached:
        return False
    return not (result.outcome is Outcome.FLAKY and _policy(state) == "warn")


def untested_lines(state: LensState) -> list[str]:
    """The loud lines of the declined answers the generator never reproduced: listed,
    not failing, unless the lens sets ``strict_declines: true`` (DESIGN §5)."""
    if not state.unreached:
        return []
    why = {r.answer: r.detail.removeprefix("generator declined: ") for r in state.results}
    return [
        f"WARNING {len(state.unreached)} certified answer(s) untested: the generator has never "
        "reproduced them, so they do not fail the run (set `strict_declines: true` to make them "
        "fail; teach the lens a synonym, metric or exemplar, or retire them)",
        *(f"{aid}: {UNREACHED}: {why.get(aid, '')}" for aid in state.unreached),
    ]


VERIFY_STEPS: tuple[Step, ...] = (full_corpus_plan, suite_step, cases_step, restamp)
"""``dst test``: the full-corpus plan, the reconcile's suite and cases steps, the re-stamp."""


def verify(rt: Runtime, names: list[str]) -> RunReport:
    """Re-verify every active answer of each named lens's serving version.

    Green answers re-stamp; failures keep their old stamp and are reported. The
    run is recorded as a verification on ``refs/dst/verify/<lens>`` by compare-and-swap.

    Returns:
        The report; exit code 1 when any answer (unreached ones and, under
        ``flaky: warn``, flaky ones excepted) or behavioural case is not correct,
        or the run stood down (its generation budget would not fit).

    Raises:
        UsageError: a lens has no serving version.
        WarehouseError: the warehouse cannot be reached.
        RefConflict: the verify ref kept moving through every try (re-run).
    """
    rt.environment_config()  # an unknown --env is bad input before anything runs
    report = RunReport(
        "test", [], refstore.recover(rt.repo, rt.environment), environment=rt.environment
    )
    if not names:
        report.messages.append("nothing is serving yet: promote a lens with `dst apply` first")
    ctx = StepContext(rt, "test")
    for name in names:
        dep = verifications.with_verified(rt.repo, serving_or_fail(rt, name), rt.environment)
        lens = gitstate.load_lens_at(rt.repo, gitstate.LensTree(name, dep.lens_tree))
        state = serving_state(name, dep, candidate=lens, serving_lens=lens)
        state = run_steps(ctx, state, VERIFY_STEPS)
        stood_down = state.scoring is not None and state.scoring.cannot_score is not None
        passed = (
            not stood_down
            and not any(_fails(state, r) for r in state.results)
            and all(c.passed for c in state.cases)
        )
        action = Action.VERIFIED if passed else Action.FAILED
        report.lenses.append(LensRun.of(state, action, serving_after=state.serving))
        if not passed:
            report.exit_code = 1
    return report
