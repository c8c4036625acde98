"""The state files dst writes into git, as frozen models (pure).

Three records live in deployment and intent commits (DESIGN §3):

* ``state/meta.json`` — :class:`DeploymentMeta`: what a deployment (or attempt)
  did, its source, its standing score and the gate mode;
* ``state/run.json`` — :class:`RunRecord`: the eval run behind it (plan,
  per-answer results, behavioural cases, messages), or for a rollback the
  deployments it swapped;
* ``apply.json`` in ``refs/dst/applying`` — :class:`ApplyIntent`: the lens refs
  an interrupted multi-lens apply was moving.

Each carries ``schema_version``; a version this dst does not know is a
:class:`~reconciler.errors.StateError` (upgrade dst), never a guess. A record
keeps exactly the keys it was written or read with (``exclude_unset``), so the
bytes a deployment commit holds are the same whether this dst or an older one
wrote them, and an older deployment missing a key still loads. Keys this dst
does not know are kept as they are (``extra="allow"``): state written by a newer
dst of the same schema version round-trips.

The JSON Schemas of these models are exported by :mod:`reconciler.schemas`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from reconciler.errors import StateError
from reconciler.ids import Oid

STATE_SCHEMA: Literal[1] = 1
"""The ``schema_version`` of every state file this dst writes and reads."""

Score = dict[str, int]
"""Outcome counts: ``{"correct", "wrong", "declined", "error", "inconclusive", "flaky",
"total"}`` (plus ``unverified`` for a standing score; ``flaky`` is absent in scores
written before it existed)."""

Flakes = dict[str, dict[str, int]]
"""``{answer id: {"flaky_samples": n, "samples": m}}``: answers whose generations disagreed
with each other in a run; the flake rate is ``n / m``."""

Reach = dict[str, int]
"""``{"reached": n, "total": m}``: of ``m`` active answers, ``n`` reproduced by the generator."""


class Outcome(str, Enum):
    """Scored outcomes: correct, wrong, declined; error or inconclusive when it could not score;
    flaky when some of an answer's ``samples`` were correct and some were not.

    The values are what ``state/run.json`` and every report record per answer. They
    live here, with the records, so a plan or ``dst status`` can read and count
    them without importing the suite that produces them (:mod:`reconciler.suite`
    re-exports them).
    """

    CORRECT = "correct"
    WRONG = "wrong"
    DECLINED = "declined"
    ERROR = "error"
    INCONCLUSIVE = "inconclusive"
    FLAKY = "flaky"


class _Scored(Protocol):
    @property
    def outcome(self) -> Outcome: ...  # pragma: no cover - protocol


def score(results: Iterable[_Scored]) -> dict[str, int]:
    """``{"correct", "wrong", "declined", "error", "inconclusive", "flaky", "total"}`` counts.

    Args:
        results: anything with an ``outcome`` (the suite's ``AnswerResult``).
    """
    counts = {o.value: 0 for o in Outcome}
    total = 0
    for r in results:
        counts[r.outcome.value] += 1
        total += 1
    counts["total"] = total
    return counts


class _State(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    schema_version: Literal[1] = 1

    def record(self) -> dict[str, Any]:
        """The JSON form: exactly the keys the record was built or read with, sorted
        (the order they are stored in)."""
        return dict(sorted(self.model_dump(mode="json", exclude_unset=True).items()))

    def dumps(self) -> bytes:
        """The bytes written to git: sorted keys, two-space indent, trailing newline."""
        return dumps(self.record())


class DeploymentMeta(_State):
    """``state/meta.json`` of a deployment or attempt commit.

    Attributes:
        tool_version: the dst version that wrote it.
        recorded_at: when, in seconds since the epoch.
        action: what was recorded: ``promote``, ``rollback``, ``retired`` (deployments;
            ``verify`` in serving histories written before verifications had their own
            chain), ``verify`` (verifications, under ``refs/dst/verify/<lens>``) or
            ``blocked`` / ``stood_down`` / ``recovered`` (attempts).
        lens: the lens name.
        source: the source commit the deployment serves (or the attempt tried).
        previous: the deployment serving before (attempts: the previous attempt;
            verifications: the previous verification).
        score: the lens's standing score after the run.
        previous_score: the score of the deployment it replaced.
        gate: the gate mode (``off`` / ``warn`` / ``block``).
        reason: the run's first message (why it blocked, what it warned).
        reach: ``{"reached", "total"}``: active answers the generator reproduces,
            of all active ones (absent in deployments written before it existed).
        rollback_to: for a rollback, the deployment whose content it serves again.
        flake_rates: the answers of the run that were flaky (some generations
            correct, some not), with their flaky and total samples (absent when
            none was).
        verified: for a verification, the serving deployment it verified.
    """

    tool_version: str = ""
    recorded_at: int = 0
    action: str = ""
    lens: str = ""
    source: Oid
    previous: Oid | None = None
    score: Score | None = None
    previous_score: Score | None = None
    gate: str | None = None
    reason: str = ""
    reach: Reach | None = None
    rollback_to: Oid | None = None
    flake_rates: Flakes | None = None
    verified: Oid | None = None


class RunRecord(_State):
    """``state/run.json``: the eval run that produced a deployment or attempt.

    Attributes:
        lens: the lens name.
        source: the source commit the run verified.
        plan: the plan part of the lens's JSON object (changed assets, stale
            answers with reasons, self-test, starvation).
        results: one record per gated answer (outcome, attempts, both results, trace).
        self_test: one record per self-test answer, same shape.
        cases: one record per behavioural case.
        messages: the run's messages, in report order.
        rollback_of: for a rollback, the deployment it replaced.
        rollback_to: for a rollback, the deployment whose content it serves again.
    """

    lens: str = ""
    source: Oid | None = None
    plan: Mapping[str, object] | None = None
    results: list[Mapping[str, object]] = []
    self_test: list[Mapping[str, object]] = []
    cases: list[Mapping[str, object]] = []
    messages: list[str] = []
    rollback_of: Oid | None = None
    rollback_to: Oid | None = None


class IntentUpdate(BaseModel):
    """One lens ref an apply moves: from ``old`` to ``new`` (``None``: absent / removed)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    ref: str
    old: Oid | None
    new: Oid | None


class ApplyIntent(_State):
    """``apply.json`` of the ``refs/dst/applying`` intent record.

    Attributes:
        reason: the reflog reason of the apply (``dst apply <commit>``).
        updates: every ref the apply moves, all together or not at all.
    """

    reason: str = ""
    updates: tuple[IntentUpdate, ...]


_Model = TypeVar("_Model", bound=_State)


def dumps(data: Any) -> bytes:
    """JSON as dst stores it in git: sorted keys, two-space indent, trailing newline."""
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def load(
    model: type[_Model],
    raw: bytes,
    *,
    where: str,
    name: str,
    malformed: StateError | None = None,
) -> _Model:
    """Parse one state file.

    Args:
        model: the record type (:class:`DeploymentMeta`, :class:`RunRecord`,
            :class:`ApplyIntent`).
        raw: the file's bytes.
        where: the commit it came from, for messages (``deployment 0123abcd4567``).
        name: the file's path in that commit (``state/meta.json``).
        malformed: the error to raise when the content is not this record at all
            (instead of one naming the first problem); an unknown
            ``schema_version`` always says to upgrade dst.

    Raises:
        StateError: not JSON, not an object, an unknown ``schema_version``, or a
            key of the wrong type.
    """
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise malformed or StateError(f"{where}: {name} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise malformed or StateError(f"{where}: {name} is not a JSON object")
    version = data.get("schema_version")
    if version != STATE_SCHEMA:
        kind = "meta" if model is DeploymentMeta else name
        raise StateError(
            f"{where}: unknown {kind} schema_version {version!r}",
            fix="upgrade dst to a version that knows this state",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        if malformed is not None:
            raise malformed from None
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise StateError(
            f"{where}: {name} does not hold dst state ({at}: {first['msg']})",
            fix="the ref does not point at a dst deployment; inspect it",
        ) from None
