"""What one command did for each lens: run records and the state they leave (pure).

``apply``, ``deployments`` and ``report`` share these; keeping them here keeps
rendering free of git and warehouse imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.bindings import Binding, Bindings, stamp
from reconciler.cases import CaseResult
from reconciler.lens import AnswerId, Lens, Oid
from reconciler.plan import LensPlan
from reconciler.suite import AnswerResult, Outcome, score


@dataclass
class LensRun:
    """Everything one command did for one lens (rendered by ``report``).

    ``action`` is one of ``promoted``, ``blocked``, ``unchanged``, ``skipped``,
    ``stood_down``, ``error`` (DESIGN §6), or ``planned`` for ``dst plan``.
    """

    plan: LensPlan
    action: str
    serving_after: Oid | None = None
    results: list[AnswerResult] = field(default_factory=list)
    self_test: list[AnswerResult] = field(default_factory=list)
    previous_score: Mapping[str, int] | None = None
    messages: list[str] = field(default_factory=list)
    recorded: Oid | None = None  # deployment or attempt commit written
    cases: list[CaseResult] = field(default_factory=list)  # behavioural cases run

    @property
    def score(self) -> dict[str, int]:
        """The lens's standing score after this run, over its whole active corpus.

        An answer that ran counts its outcome; one that did not run counts as
        ``correct`` when its binding is current (it last ran green and nothing
        it depends on changed since), else as ``unverified``. So successive
        deployments' scores form an accuracy trend rather than a tally of
        whatever a change happened to touch. With no plan of the corpus (an
        unchanged or removed lens) the previous score carries over.
        """
        ran = {r.answer: r for r in [*self.results, *self.self_test]}
        if not self.plan.deps:
            if self.previous_score and not ran:
                return dict(self.previous_score)
            return score(list(ran.values()))
        stale = {s.answer for s in self.plan.stale}
        counts = score([])
        counts["unverified"] = 0
        for aid in self.plan.deps:
            if aid in ran:
                counts[ran[aid].outcome.value] += 1
            else:
                counts["correct" if aid not in stale else "unverified"] += 1
        counts["total"] = len(self.plan.deps)
        return counts


@dataclass
class RunReport:
    """The result of one command over its lenses; ``exit_code`` follows DESIGN §6."""

    command: str
    lenses: list[LensRun]
    messages: list[str] = field(default_factory=list)
    exit_code: int = 0
    dry_run: bool = False


def state_for(
    run: LensRun, source: Oid, lens: Lens | None, bindings: Bindings
) -> tuple[Bindings, dict[str, Any]]:
    """The bindings and ``state/run.json`` a run leaves.

    Correct answers (gated or self-test) re-stamp against ``lens``'s asset
    hashes; every other answer keeps its old stamp, so it stays stale. Bindings
    of answers no longer active are dropped.
    """
    stamps: dict[AnswerId, Binding] = {}
    plan = run.plan
    if lens is not None:
        for r in [*run.results, *run.self_test]:
            if r.outcome is Outcome.CORRECT:
                old = bindings.answers.get(r.answer)
                flakes = (old.flakes if old else 0) + (1 if r.flaky else 0)
                stamps[r.answer] = stamp(
                    lens, plan.assets, r.answer, plan.deps[r.answer], source, flakes
                )
    keep = frozenset(AnswerId(a.id) for a in lens.active_answers()) if lens else None
    run_record = {
        "schema_version": 1,
        "lens": plan.lens,
        "source": source,
        "plan": plan.record(),
        "results": [r.record() for r in run.results],
        "self_test": [r.record() for r in run.self_test],
        "cases": [c.record() for c in run.cases],
        "messages": run.messages,
    }
    return bindings.restamped(stamps, keep), run_record


def meta_for(run: LensRun, action: str, source: Oid, previous: Oid | None) -> dict[str, Any]:
    """``state/meta.json`` for a deployment or attempt written by ``run``."""
    return {
        "action": action,
        "lens": run.plan.lens,
        "source": source,
        "previous": previous,
        "score": run.score,
        "previous_score": run.previous_score,
        "gate": run.plan.gate,
        "reason": run.messages[0] if run.messages else "",
    }
