"""What one command did for each lens: the step values, run records and the state
they leave (pure).

A reconcile carries each lens through its steps as a frozen :class:`LensState`;
when the steps are done the lens's :class:`Action` is decided once and the
report's :class:`LensRun` is built from the two. ``reconcile``, ``verify``,
``history`` and the renderers share these; keeping them here keeps rendering
free of git and warehouse imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.bindings import Binding, Bindings, stamp
from reconciler.ids import AnswerId, Oid
from reconciler.lens import Lens
from reconciler.plan import LensPlan
from reconciler.state import DeploymentMeta, Outcome, Reach, RunRecord, Score, score

if TYPE_CHECKING:
    # only annotations: the suite, the gate and the cases import the generators, which a
    # plan (and `dst status`, `dst log`) never runs
    from reconciler.cases import CaseResult
    from reconciler.gate import GateVerdict
    from reconciler.suite import AnswerResult, Scoring


class Action(str, Enum):
    """What a command did for one lens (the ``action`` of its JSON object, DESIGN §6).

    A ``str`` enum: it compares, hashes, formats and serialises as its value, so
    text and JSON output read ``promoted`` exactly as before.
    """

    PROMOTED = "promoted"
    BLOCKED = "blocked"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    STOOD_DOWN = "stood_down"
    ERROR = "error"
    PLANNED = "planned"  # dst plan: the lens would be gated
    RETIRE = "retire"  # dst plan: the candidate deletes a serving lens
    RETIRED = "retired"  # apply: the lens stopped serving (a retirement deployment)
    VERIFIED = "verified"  # dst test: the whole corpus passed
    FAILED = "failed"  # dst test: some answer or case did not
    ROLLED_BACK = "rolled_back"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def moves_ref(self) -> bool:
        """The promote step moves this lens's serving ref (a deployment or a retirement)."""
        return self in (Action.PROMOTED, Action.RETIRED)

    @property
    def blocks(self) -> bool:
        """The lens did not pass, so the whole apply rolls back (exit 1)."""
        return self in (Action.BLOCKED, Action.STOOD_DOWN)

    @property
    def fails(self) -> bool:
        """A failing check: it blocks, or the lens did not even load."""
        return self.blocks or self is Action.ERROR


@dataclass(frozen=True, kw_only=True)
class LensState:
    """One lens as it passes through the reconcile's steps (each returns a new one).

    The first group is the input: the candidate (a commit's lens tree or the
    working tree) and what serves now. The plan step fills ``plan`` and says
    what the suite runs; the suite and self-test steps add results; the gate
    step adds its verdict. Nothing here is written anywhere.

    Attributes:
        name: the lens.
        candidate: the candidate lens; ``None`` when the candidate deletes it
            (or it did not load: ``error``).
        candidate_commit: the candidate commit, ``None`` for the working tree.
        candidate_tree: the candidate lens tree, ``None`` when unknown (working tree).
        serving_lens: the serving lens, ``None`` when nothing serves (or it was
            not opened because the candidate tree already serves).
        serving: the serving deployment commit, ``None`` when nothing serves.
        serving_tree: its lens tree.
        serving_source: the source commit it promoted.
        serving_bindings: its bindings (empty when nothing serves).
        previous_score: its standing score, for the report.
        plan: the plan; preset when the candidate tree is known to serve already
            or the candidate did not load.
        error: why the candidate did not load (the lens's action is ``error``).
        refused: why promoting it would undo what serves (it blocks unrun).
        suite: the answers the suite step scores, in order.
        cases_wanted: the suite step runs the behavioural cases too.
        scoring: the warehouse and generator inputs, once a step needed them.
        results, self_test, cases: what the suite and self-test steps ran.
        messages: report lines so far, in order.
        verdict: the gate's decision (``promote`` / ``block`` / ``stand_down``).
        unreached: declined answers the generator never reproduced (untested,
            not failing; DESIGN §5).
        recorded: the deployment a step wrote (``dst test``'s re-stamp).
    """

    name: str
    candidate: Lens | None = None
    candidate_commit: Oid | None = None
    candidate_tree: Oid | None = None
    serving_lens: Lens | None = None
    serving: Oid | None = None
    serving_tree: Oid | None = None
    serving_source: Oid | None = None
    serving_bindings: Bindings = field(default_factory=Bindings)
    previous_score: Score | None = None
    plan: LensPlan | None = None
    error: str | None = None
    refused: str | None = None
    suite: tuple[AnswerId, ...] = ()
    cases_wanted: bool = False
    scoring: Scoring | None = None
    results: tuple[AnswerResult, ...] = ()
    self_test: tuple[AnswerResult, ...] = ()
    cases: tuple[CaseResult, ...] = ()
    messages: tuple[str, ...] = ()
    verdict: GateVerdict | None = None
    unreached: tuple[AnswerId, ...] = ()
    recorded: Oid | None = None

    @property
    def planned(self) -> LensPlan:
        """The plan (after the plan step).

        Raises:
            RuntimeError: no plan yet (a step ran before the plan step).
        """
        if self.plan is None:
            raise RuntimeError(f"lens {self.name}: a step ran before the plan step")
        return self.plan

    @property
    def settled(self) -> bool:
        """Nothing is left to score: unloadable, refused, unchanged or deleted."""
        plan = self.planned
        return bool(self.error or self.refused) or plan.unchanged or self.candidate is None

    @property
    def score(self) -> dict[str, int]:
        """The standing score after the steps so far (:func:`standing_score`)."""
        return standing_score(self.planned, self.results, self.self_test, self.previous_score)

    @property
    def reach(self) -> Reach | None:
        """The lens's reach after the steps so far (:func:`reach_of`)."""
        return reach_of(self.planned, self.results, self.self_test)


def reach_of(
    plan: LensPlan, results: Sequence[AnswerResult], self_test: Sequence[AnswerResult]
) -> Reach | None:
    """The share of the active corpus the generator reproduces, after a run (DESIGN §5).

    An answer is reached when it carries a green stamp after the run: it ran
    ``correct`` now, or it did not run and was stamped before. One that ran and
    was not correct is not reached, whatever stamp it keeps.

    Returns:
        ``{"reached", "total"}`` over the plan's active answers, or ``None`` when
        the plan does not know the corpus (an unchanged or removed lens).
    """
    if not plan.deps:
        return None
    ran = {r.answer: r.outcome for r in [*results, *self_test]}
    reached = sum(
        1
        for aid in plan.deps
        if (ran[aid] is Outcome.CORRECT if aid in ran else aid in plan.stamped)
    )
    return {"reached": reached, "total": len(plan.deps)}


def shrink_notes(plan: LensPlan) -> list[str]:
    """The loud line of a change that retires, drafts or deletes active answers (DESIGN §5).

    Returns:
        One line naming how many active answers the change removes and what the
        serving version last knew of each; none when it removes none.
    """
    if not plan.removed_active:
        return []
    what = ", ".join(f"{aid} ({last})" for aid, last in plan.removed_active)
    return [
        f"WARNING corpus shrinks: this change removes {len(plan.removed_active)} active "
        f"certified answer(s) ({plan.active_before} → {plan.active_after}); last outcomes: {what}"
    ]


def recertify_notes(plan: LensPlan) -> list[str]:
    """One loud line per active answer re-authored under its old provenance (DESIGN §2:
    provenance is what makes an answer certified, and only a human certifies).

    The gate still scores such an answer (its self-test runs against the new SQL);
    the line says that nobody vouched for the edit and how to.
    """
    return [
        f"WARNING {aid}: its question or SQL changed, but its provenance still says "
        f"{by} certified it on {at}: have a person re-certify it "
        f"(`dst certify --replace {aid} --lens {plan.lens}`) or set a new provenance"
        for aid, by, at in plan.unrecertified
    ]


def standing_score(
    plan: LensPlan,
    results: Sequence[AnswerResult],
    self_test: Sequence[AnswerResult],
    previous: Mapping[str, int] | None,
) -> dict[str, int]:
    """A lens's standing score after a run, over its whole active corpus.

    An answer that ran counts its outcome; one that did not run counts as
    ``correct`` when its binding is current (it last ran green and nothing it
    depends on changed since), else as ``unverified``. So successive
    deployments' scores form an accuracy trend rather than a tally of whatever a
    change happened to touch. With no plan of the corpus (an unchanged or
    removed lens) the previous score carries over.

    Returns:
        ``{"correct", "wrong", "declined", "error", "inconclusive", "total"}``
        counts, plus ``unverified`` when the plan knows the corpus.
    """
    ran = {r.answer: r for r in [*results, *self_test]}
    if not plan.deps:
        if previous and not ran:
            return dict(previous)
        return score(list(ran.values()))
    stale = {s.answer for s in plan.stale}
    counts = score([])
    counts["unverified"] = 0
    for aid in plan.deps:
        if aid in ran:
            counts[ran[aid].outcome.value] += 1
        else:
            counts["correct" if aid not in stale else "unverified"] += 1
    counts["total"] = len(plan.deps)
    return counts


def block_choices(plan: LensPlan, lens: Lens | None, failing: Sequence[AnswerId]) -> list[str]:
    """The exact commands for each choice a failing answer forces (DESIGN §4 step 4).

    For every answer in ``failing``: fix the definition (the changed asset files
    the answer depends on, repository-relative; every changed asset file when it
    depends on none of them, the files of its dependency set when nothing
    changed), re-certify it (``dst certify --replace ID --lens L``) or retire it
    (``status: retired`` in its answer file, committed).

    Args:
        plan: the lens plan (changed assets, dependency sets, assets).
        lens: the lens version that ran (its root and answer files), or ``None``.
        failing: the answers that block (or failed ``dst test``), in report order.

    Returns:
        Four lines per answer; none when ``failing`` is empty or ``lens`` is ``None``.
    """
    if lens is None:
        return []
    lines: list[str] = []
    for aid in failing:
        deps = plan.deps.get(aid, {})
        changed = [c.path for c in plan.changed_assets if c.asset in deps and c.path]
        if not changed:
            changed = [c.path for c in plan.changed_assets if c.path and c.change != "removed"]
        if not changed:
            changed = sorted({plan.assets[a].path for a in deps if a in plan.assets})
        edits = ", ".join(dict.fromkeys(f"{lens.root}/{p}" for p in changed)) or "the lens"
        answer_file = f"{lens.root}/{lens.sources.get(f'answers/{aid}', f'answers/{aid}.yaml')}"
        lines += [
            f"{aid} fails; choose one:",
            f"  fix the definition: edit {edits}, commit, and apply again",
            f"  re-certify the answer: dst certify --replace {aid} --lens {plan.lens}",
            f"  retire the answer: set `status: retired` in {answer_file}, commit, and apply again",
        ]
    return lines


def evidence_notes(results: Sequence[AnswerResult], self_test: Sequence[AnswerResult]) -> list[str]:
    """Loud, counted lines for answers verified on weak evidence (DESIGN §4 step 3).

    A *vacuous* oracle (no rows, not marked ``expect_empty: true``) keeps its
    outcome — an empty result against an empty oracle stays ``correct`` and
    never blocks — but is counted here with the mark that settles it. An
    *ambiguous* oracle (its LIMIT cuts through tied rows) gets the request for a
    tie-breaker, from the suite and the self-test alike.
    """
    ran = [("self-test", r) for r in self_test] + [("suite", r) for r in results]
    if not any(r.notes for _, r in ran):
        return []
    # lazy: the comparator's marks; a plan ran nothing and need not load the comparator
    from reconciler.compare.evidence import VACUOUS
    from reconciler.compare.ties import AMBIGUOUS

    vacuous = [r.answer for _, r in ran if any(n.startswith(VACUOUS) for n in r.notes)]
    lines: list[str] = []
    if vacuous:
        lines.append(
            f"WARNING {len(vacuous)} {VACUOUS}(s), verified against no rows (weak evidence): "
            f"{', '.join(vacuous)}; mark each `expect_empty: true` if empty is the answer, "
            "or re-certify it on data"
        )
    lines += [
        f"{where}: {r.answer}: {note}"
        for where, r in ran
        for note in r.notes
        if note.startswith(AMBIGUOUS)
    ]
    return lines


def _failing(state: LensState, action: Action) -> list[AnswerId]:
    """The answers whose outcome made ``action`` block (or fail ``dst test``).

    Gated answers that did not pass (unreached ones excepted, and flaky ones under
    ``flaky: warn``), and self-test answers whose certified SQL does not run.
    """
    if action not in (Action.BLOCKED, Action.FAILED):
        return []
    lens = state.candidate or state.serving_lens
    tolerated = lens is not None and lens.config.flaky == "warn"
    failing = [
        r.answer
        for r in state.results
        if r.outcome is not Outcome.CORRECT
        and r.answer not in state.unreached
        and not (tolerated and r.outcome is Outcome.FLAKY)
    ]
    return failing + [r.answer for r in state.self_test if r.oracle_failed]


@dataclass
class LensRun:
    """Everything one command did for one lens (rendered by ``render``).

    ``action`` is decided once, when the lens's steps are done (:class:`Action`).
    """

    plan: LensPlan
    action: Action
    serving_after: Oid | None = None
    results: list[AnswerResult] = field(default_factory=list)
    self_test: list[AnswerResult] = field(default_factory=list)
    previous_score: Mapping[str, int] | None = None
    messages: list[str] = field(default_factory=list)
    recorded: Oid | None = None  # deployment or attempt commit written
    cases: list[CaseResult] = field(default_factory=list)  # behavioural cases run
    unreached: tuple[AnswerId, ...] = ()  # declined, never reproduced: untested
    # what each webhook did with the lens's event (``Delivery.record()``), after the apply
    notifications: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        state: LensState,
        action: Action,
        *,
        serving_after: Oid | None = None,
        messages: Sequence[str] = (),
    ) -> LensRun:
        """The report of a lens whose steps ended in ``state``.

        Args:
            state: the last step's lens state.
            action: the action decided for it.
            serving_after: the deployment serving afterwards (the promote step's
                own, or the plan's serving one).
            messages: lines to add after the state's own.

        The messages end with :func:`evidence_notes` and, for a run that blocks
        (or fails ``dst test``) on answers, :func:`block_choices` for each of them.
        """
        choices = block_choices(
            state.planned, state.candidate or state.serving_lens, _failing(state, Action(action))
        )
        notes = evidence_notes(state.results, state.self_test)
        return cls(
            state.planned,
            Action(action),
            serving_after,
            list(state.results),
            list(state.self_test),
            state.previous_score,
            [*state.messages, *messages, *notes, *choices],
            state.recorded,
            list(state.cases),
            state.unreached,
        )

    @property
    def score(self) -> dict[str, int]:
        """The lens's standing score after this run (:func:`standing_score`)."""
        return standing_score(self.plan, self.results, self.self_test, self.previous_score)

    @property
    def reach(self) -> Reach | None:
        """The lens's reach after this run (:func:`reach_of`)."""
        return reach_of(self.plan, self.results, self.self_test)


@dataclass
class RunReport:
    """The result of one command over its lenses; ``exit_code`` follows DESIGN §6."""

    command: str
    lenses: list[LensRun]
    messages: list[str] = field(default_factory=list)
    exit_code: int = 0
    dry_run: bool = False
    environment: str | None = None  # the named environment it ran in; None: the default


class Ran(Protocol):
    """What a run record is made of: a :class:`LensState` or a :class:`LensRun`."""

    @property
    def plan(self) -> LensPlan | None: ...  # pragma: no cover - protocol

    @property
    def results(self) -> Sequence[AnswerResult]: ...  # pragma: no cover - protocol

    @property
    def self_test(self) -> Sequence[AnswerResult]: ...  # pragma: no cover - protocol

    @property
    def cases(self) -> Sequence[CaseResult]: ...  # pragma: no cover - protocol

    @property
    def messages(self) -> Sequence[str]: ...  # pragma: no cover - protocol

    @property
    def previous_score(self) -> Mapping[str, int] | None: ...  # pragma: no cover - protocol

    @property
    def score(self) -> dict[str, int]: ...  # pragma: no cover - protocol

    @property
    def reach(self) -> Reach | None: ...  # pragma: no cover - protocol


def _plan_of(run: Ran) -> LensPlan:
    if run.plan is None:
        raise RuntimeError("a run record needs a plan")
    return run.plan


def state_for(
    run: Ran, source: Oid, lens: Lens | None, bindings: Bindings
) -> tuple[Bindings, RunRecord]:
    """The bindings and ``state/run.json`` a run leaves.

    Correct answers (gated or self-test) re-stamp against ``lens``'s asset
    hashes; every other answer keeps its old stamp, so it stays stale. Bindings
    of answers no longer active are dropped.
    """
    stamps: dict[AnswerId, Binding] = {}
    plan = _plan_of(run)
    if lens is not None:
        for r in [*run.results, *run.self_test]:
            if r.outcome is Outcome.CORRECT:
                old = bindings.answers.get(r.answer)
                flakes = (old.flakes if old else 0) + (1 if r.flaky else 0)
                stamps[r.answer] = stamp(
                    lens, plan.assets, r.answer, plan.deps[r.answer], source, flakes
                )
    keep = frozenset(AnswerId(a.id) for a in lens.active_answers()) if lens else None
    extra: dict[str, Any] = {}
    cached = from_cache([*run.results, *run.self_test])
    if cached:
        extra["from_cache"] = cached
    record = RunRecord(
        schema_version=1,
        lens=plan.lens,
        source=source,
        plan=plan.record(),
        results=[r.record() for r in run.results],
        self_test=[r.record() for r in run.self_test],
        cases=[c.record() for c in run.cases],
        messages=list(run.messages),
        **extra,
    )
    return bindings.restamped(stamps, keep), record


def from_cache(results: Sequence[AnswerResult]) -> list[str]:
    """The answers any of whose scored generations was served from the generation cache
    (``usage.cached``), sorted: what ``from_cache`` in ``state/run.json`` names."""
    found: set[str] = set()
    for r in results:
        for attempt in r.attempts:
            generation = attempt.get("generation")
            usage = generation.get("usage") if isinstance(generation, Mapping) else None
            if isinstance(usage, Mapping) and usage.get("cached") is True:
                found.add(str(r.answer))
    return sorted(found)


def meta_for(run: Ran, action: str, source: Oid, previous: Oid | None) -> DeploymentMeta:
    """``state/meta.json`` for a deployment or attempt written by ``run``.

    Args:
        run: the lens's run.
        action: the recorded action word (``promote``, ``verify``, ``retired``,
            ``blocked``, ``stood_down``).
        source: the source commit.
        previous: the deployment (or attempt) it follows.
    """
    # Set only when known: a record keeps the keys it was built with, so a lens
    # whose corpus the run did not plan writes the same meta as before.
    meta = DeploymentMeta(
        action=str(action),
        lens=_plan_of(run).lens,
        source=source,
        previous=previous,
        score=run.score,
        previous_score=dict(run.previous_score) if run.previous_score is not None else None,
        gate=_plan_of(run).gate,
        reason=run.messages[0] if run.messages else "",
    )
    reach = run.reach
    flakes = {
        r.answer: {"flaky_samples": r.flaky_samples, "samples": r.samples}
        for r in [*run.results, *run.self_test]
        if r.flaky_samples
    }
    update: dict[str, object] = {"reach": reach} if reach is not None else {}
    if flakes:
        update["flake_rates"] = flakes
    return meta.model_copy(update=update) if update else meta
