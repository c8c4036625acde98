"""Lens events and the JSON object a webhook receives for each (pure).

One apply yields at most one event per lens: ``promoted`` (``recovered`` when
the lens's last attempt since its previous deployment was blocked or stood
down), ``blocked`` or ``stood_down``; an unchanged lens yields ``recovered`` when
the apply recorded its recovery (the commit that blocked was reverted, so the
tree serving is the candidate's again; its ``deployment`` is the one serving).
Other unchanged, skipped, retired and unloadable lenses yield none. The payload
is documented in the README ("Notifications"); its ``text`` is Slack's
incoming-webhook field, so a Slack URL works as it is and other receivers read the
structured keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.results import Action, LensRun
from reconciler.state import Outcome

EventName = Literal["promoted", "blocked", "stood_down", "recovered"]

PAYLOAD_SCHEMA = 1
"""``schema_version`` of the webhook payload."""

_TEXT_FAILING = 5  # failing answers the ``text`` names; the payload lists them all


@dataclass(frozen=True)
class LensEvent:
    """One lens's event in one apply.

    Attributes:
        event: ``promoted``, ``blocked``, ``stood_down`` or ``recovered`` (a
            promotion after a block).
        lens: the lens.
        environment: the environment, ``None`` for the default one.
        deployment: the deployment (or attempt) commit recorded, if any.
        source: ``{"commit", "author", "email", "time", "subject"}`` of the candidate
            commit (``{"commit"}`` alone when the commit cannot be read).
        score: the standing score after the run (outcome counts).
        previous_score: the score of the deployment serving before.
        reach: ``{"reached", "total"}``, when the run knew the corpus.
        failing: ``{"answer", "outcome", "reason"}`` per gated answer that did not
            pass (under ``warn`` a promotion lists its findings too).
        reason: the run's first message (why it blocked, what it warned).
    """

    event: EventName
    lens: str
    environment: str | None
    deployment: str | None
    source: Mapping[str, object]
    score: Mapping[str, int]
    previous_score: Mapping[str, int] | None
    reach: Mapping[str, int] | None
    failing: tuple[Mapping[str, str], ...] = ()
    reason: str = ""

    def wanted_by(self, events: tuple[str, ...]) -> bool:
        """A webhook subscribed to ``events`` receives this one (a recovery is also a
        promotion, so a ``promoted`` subscriber gets it, once)."""
        return self.event in events or (self.event == "recovered" and "promoted" in events)

    def payload(self) -> dict[str, Any]:
        """The JSON object POSTed to a webhook (see the README's "Notifications")."""
        return {
            "schema_version": PAYLOAD_SCHEMA,
            "lens": self.lens,
            "environment": self.environment,
            "action": self.event,
            "deployment": self.deployment,
            "source": dict(self.source),
            "score": dict(self.score),
            "previous_score": dict(self.previous_score) if self.previous_score else None,
            "reach": dict(self.reach) if self.reach else None,
            "failing": [dict(f) for f in self.failing],
            "reason": self.reason,
            "text": self.text(),
        }

    def text(self) -> str:
        """One Slack-compatible message (``*bold*``, backticks), a few lines long."""
        where = f"{self.lens}" + (f" ({self.environment})" if self.environment else "")
        verb = {
            "promoted": "promoted",
            "recovered": "recovered after a block",
            "blocked": "BLOCKED",
            "stood_down": "gate STOOD DOWN",
        }[self.event]
        commit = str(self.source.get("commit") or "")[:12]
        subject = self.source.get("subject")
        author = self.source.get("author")
        head = f"dst: lens *{where}* {verb} at `{commit}`"
        if subject:
            head += f" “{subject}”"
        if author:
            head += f" by {author}"
        lines = [head, f"score {_score(self.score)} (was {_score(self.previous_score)})"]
        if self.reach and self.reach.get("total"):
            lines[-1] += f", reach {self.reach.get('reached', 0)}/{self.reach['total']}"
        for f in self.failing[:_TEXT_FAILING]:
            lines.append(f"• `{f['answer']}` {f['outcome']}: {f['reason']}")
        if len(self.failing) > _TEXT_FAILING:
            lines.append(f"• … and {len(self.failing) - _TEXT_FAILING} more")
        if self.event in ("blocked", "stood_down") and self.reason and not self.failing:
            lines.append(self.reason)
        return "\n".join(lines)


def _score(score: Mapping[str, int] | None) -> str:
    if not score:
        return "none"
    return f"{score.get('correct', 0)}/{score.get('total', 0)}"


def event_name(run: LensRun, recovered: bool) -> EventName | None:
    """The event a lens's run makes, or ``None`` (unchanged, skipped, retired, error)."""
    if run.action is Action.PROMOTED:
        return "recovered" if recovered else "promoted"
    if run.action is Action.UNCHANGED and recovered:  # a revert: what serves is back
        return "recovered"
    if run.action is Action.BLOCKED:
        return "blocked"
    if run.action is Action.STOOD_DOWN:
        return "stood_down"
    return None


def failing_answers(run: LensRun) -> tuple[dict[str, str], ...]:
    """``{"answer", "outcome", "reason"}`` of each answer that counts against the gate.

    Every gated answer that did not pass, and every self-test answer whose own
    certified SQL could not run (that fails like a gated answer, DESIGN §5; a mere
    self-test divergence is an alert, not listed). An unreached decline (never
    reproduced) does not fail the gate and is not listed.
    """
    unreached = set(run.unreached)
    gated = [
        r
        for r in run.results
        if r.outcome is not Outcome.CORRECT
        and not (r.outcome is Outcome.DECLINED and r.answer in unreached)
    ]
    listed = {r.answer for r in gated}
    broken = [r for r in run.self_test if r.oracle_failed and r.answer not in listed]
    return tuple(
        {"answer": r.answer, "outcome": r.outcome.value, "reason": r.detail}
        for r in [*gated, *broken]
    )


def lens_event(
    run: LensRun,
    *,
    recovered: bool,
    source: Mapping[str, object],
    environment: str | None = None,
) -> LensEvent | None:
    """The event of one lens's run (``None`` when it makes none).

    Args:
        run: the lens's run, after its refs moved (or its attempt was recorded).
        recovered: the lens's last attempt since its previous deployment blocked.
        source: the candidate commit's record (:class:`reconciler.git.commits.CommitInfo`).
        environment: the environment, ``None`` for the default one.
    """
    name = event_name(run, recovered)
    if name is None:
        return None
    return LensEvent(
        event=name,
        lens=run.plan.lens,
        environment=environment,
        deployment=run.serving_after if run.action is Action.UNCHANGED else run.recorded,
        source=source,
        score=run.score,
        previous_score=run.previous_score,
        reach=run.reach,
        failing=failing_answers(run),
        reason=run.messages[0] if run.messages else "",
    )
