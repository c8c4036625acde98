"""Gate policies (DESIGN §5), as one pure decision per lens.

* ``block``: a gated stale answer that is wrong, error or inconclusive blocks;
  the apply rolls back. A *declined* one blocks when it has a green baseline (a
  stamp: the generator reproduced it before, so the lens lost reach). One the
  generator never reproduced is *unreached*: listed loudly as untested with the
  generator's reason, never a block (``strict_declines: true`` makes every
  declined stale answer block). When every answer that ran is unreached, the
  gate says it verified nothing.
* ``flaky`` (some of an answer's ``samples`` correct, some not) blocks like a
  wrong answer under ``block``; with ``flaky: warn`` in lens.yaml it is listed
  loudly with its flake rate and promotion proceeds.
* ``warn``: the same findings, printed loudly; promotion proceeds.
* ``off``: no suite.
* nothing certified, never: publish with a loud ``gate SKIPPED``.
* cannot score (no warehouse, no generator): stand down with the reason
  (``block``) or promote loudly (``warn``).
* starvation (active corpus ≥ 1 → 0): abort under ``block``, warn under ``warn``.
* self-test divergences are alerts, never blocks; a self-test answer whose own
  certified SQL does not run is bad input and fails like a gated answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from reconciler.ids import AnswerId
from reconciler.plan import LensPlan
from reconciler.state import Outcome

if TYPE_CHECKING:
    # annotations only: the gate judges results, it never runs the suite or the cases
    from reconciler.cases import CaseResult
    from reconciler.suite import AnswerResult


class GateVerdict(str, Enum):
    """What a lens's gate policy decides; the reconcile turns it into the lens's action."""

    PROMOTE = "promote"
    BLOCK = "block"
    STAND_DOWN = "stand_down"


PROMOTE = GateVerdict.PROMOTE
BLOCK = GateVerdict.BLOCK
STAND_DOWN = GateVerdict.STAND_DOWN


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided for one lens.

    Attributes:
        verdict: ``promote``, ``block`` or ``stand_down``.
        messages: loud lines for the report (findings, SKIPPED, alerts).
        failing: gated answers whose outcome counts against the gate.
        unreached: declined answers (gated or self-test) the generator never
            reproduced; untested, not failing.
    """

    verdict: GateVerdict
    messages: tuple[str, ...]
    failing: tuple[AnswerId, ...] = ()
    unreached: tuple[AnswerId, ...] = ()


UNREACHED = "untested: unreached by the generator"
"""How the report names an answer the generator never reproduced (DESIGN §5)."""

VERIFIED_NOTHING = "gate verified nothing"


def unreached_answers(
    plan: LensPlan, results: Sequence[AnswerResult], self_test: Sequence[AnswerResult]
) -> list[AnswerResult]:
    """The declined answers that have no green baseline, in run order.

    A gated answer counts unless the lens sets ``strict_declines``; a self-test
    answer (an alert either way) counts whenever it has no stamp.
    """
    gated = [] if plan.strict_declines else list(results)
    return [
        r
        for r in [*gated, *self_test]
        if r.outcome is Outcome.DECLINED and r.answer not in plan.stamped and not r.oracle_failed
    ]


def _reason(result: AnswerResult) -> str:
    return result.detail.removeprefix("generator declined: ")


def _alerts(
    self_test: Sequence[AnswerResult],
    unreached: Sequence[AnswerResult],
    files: Mapping[AnswerId, str],
) -> tuple[list[str], list[str]]:
    """``(broken certified SQL lines, alert and untested lines)``: what every path reports."""
    broken: list[str] = []
    messages: list[str] = []
    untested = {r.answer for r in unreached}
    for r in self_test:
        if r.answer in untested:
            continue
        if r.oracle_failed:
            # Not a divergence: the certified SQL the change brings does not run.
            where = files.get(r.answer, r.answer)
            broken.append(f"certified SQL does not run: {where} (sql:): {r.detail}")
        elif r.outcome is not Outcome.CORRECT:
            messages.append(f"self-test ALERT: {r.answer} is {r.outcome.value} — {r.detail}")
    if unreached:  # listed on every path, gate off included (the self-test still ran)
        messages.append(
            f"WARNING {len(unreached)} certified answer(s) land untested: the generator has "
            f"never reproduced them (teach the lens a synonym, metric or exemplar, or retire them)"
        )
        messages += [f"{r.answer}: {UNREACHED}: {_reason(r)}" for r in unreached]
    return broken, messages


def _reach_lines(plan: LensPlan, results: Sequence[AnswerResult]) -> list[str]:
    """Why a declined answer blocks: it has a green baseline, so the lens lost reach."""
    lost = [r.answer for r in results if r.outcome is Outcome.DECLINED and r.answer in plan.stamped]
    if not lost:
        return []
    return [
        f"lost reach: {', '.join(lost)} declined, but the generator reproduced "
        f"{'it' if len(lost) == 1 else 'them'} before (a green stamp at the serving version)"
    ]


def flaky_lines(results: Sequence[AnswerResult], policy: str) -> list[str]:
    """A loud count of the flaky answers, what ``policy`` does with them, and one line each
    with its flake rate (``warn`` also stands for ``eval_gate: warn``, where nothing fails)."""
    flaky = [r for r in results if r.outcome is Outcome.FLAKY]
    if not flaky:
        return []
    does = (
        "listed, not failing"
        if policy == "warn"
        else "failing under flaky: block (set `flaky: warn` in lens.yaml to let it pass with "
        "a warning)"
    )
    lines = [f"WARNING {len(flaky)} flaky answer(s): the generator disagrees with itself; {does}"]
    lines += [
        f"{r.answer}: flaky, flake rate {r.flaky_samples}/{r.samples} ({r.flake_rate:.0%})"
        for r in flaky
    ]
    return lines


def decide(
    plan: LensPlan,
    results: Sequence[AnswerResult],
    self_test: Sequence[AnswerResult],
    *,
    cannot_score: str | None = None,
    files: Mapping[AnswerId, str] | None = None,
    cases: Sequence[CaseResult] = (),
    flaky: str = "block",
) -> GateDecision:
    """Apply the lens's policy to its suite results.

    Args:
        plan: the lens plan (gate mode, starvation, counts).
        results: outcomes of the gated (stale, non-self-test) answers.
        self_test: outcomes of the self-test answers (alerts only).
        cannot_score: why the gate could not score, when it could not.
        files: ``{answer id: repository-relative answer file}`` for messages.
        cases: behavioural case verdicts; a failed case counts like a failed
            answer (block under ``block``, a warning under ``warn``).
        flaky: the lens's ``flaky:`` policy: ``block`` counts a flaky answer as
            failing, ``warn`` lists it and lets it pass.

    Returns:
        The decision with every message the user must see.
    """
    mode = plan.gate
    unreached = unreached_answers(plan, results, self_test)
    untested = {r.answer for r in unreached}
    done = tuple(r.answer for r in unreached)
    broken, messages = _alerts(self_test, unreached, files or {})
    if mode == "off":
        return GateDecision(PROMOTE, ("gate off: no suite ran", *messages), unreached=done)
    if plan.starvation:
        line = (
            f"starvation: this change takes the active certified corpus from "
            f"{plan.active_before} to 0"
        )
        if mode == "block":
            return GateDecision(BLOCK, (f"{line}; apply aborted", *messages), unreached=done)
        messages.insert(0, f"WARNING {line}")
    if plan.active_after == 0 and plan.active_before == 0:
        return GateDecision(
            PROMOTE,
            ("gate SKIPPED: the lens has no active certified answers", *messages),
            unreached=done,
        )
    if cannot_score is not None and (plan.gated or plan.self_test):
        # Nothing it was asked to score ran: promoting would serve an untested lens
        # (DESIGN §5: a gate that cannot score stands down loudly with the reason).
        line = f"gate STOOD DOWN: {cannot_score}"
        if mode == "block":
            return GateDecision(STAND_DOWN, (line, *messages), unreached=done)
        return GateDecision(
            PROMOTE, (f"WARNING {line}; promoting under eval_gate: warn", *messages), unreached=done
        )
    # Each failure's detail travels with its result (both executed results
    # included); the messages only summarise.
    tolerated = flaky == "warn"
    failing = tuple(
        r.answer
        for r in results
        if r.outcome is not Outcome.CORRECT
        and r.answer not in untested
        and not (tolerated and r.outcome is Outcome.FLAKY)
    )
    failing += tuple(r.answer for r in self_test if r.oracle_failed)
    flakes = flaky_lines(results, flaky if mode == "block" else "warn")
    messages = broken + messages + _reach_lines(plan, results) + flakes
    ran = [*results, *self_test]
    if ran and len(unreached) == len(ran):
        messages.insert(
            0,
            f"{VERIFIED_NOTHING}: all {len(ran)} stale answer(s) are unreached by the generator",
        )
    bad_cases = [c for c in cases if not c.passed]
    messages += [f"case FAILED {c.question!r}: {c.detail}" for c in bad_cases]
    what = ", ".join(
        part
        for part in (
            f"{len(failing)} answer(s)" if failing else "",
            f"{len(bad_cases)} behavioural case(s)" if bad_cases else "",
        )
        if part
    )
    if what and mode == "block":
        return GateDecision(BLOCK, (f"gate BLOCKED: {what} failed", *messages), failing, done)
    if what:
        messages.insert(0, f"WARNING gate findings: {what} failed; promoting under eval_gate: warn")
    return GateDecision(PROMOTE, tuple(messages), failing, done)
