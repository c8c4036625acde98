"""The plan for one lens: what changed, what is stale, what self-tests (pure).

For each lens the plan names the serving deployment, the candidate commit, the
changed assets (added / modified / removed / renamed, by canonical hash — a
formatting-only edit is no change), the stale answers with reasons, the
self-test answers, the starvation flag and the gate mode. It runs nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from reconciler.assets import Asset, PlanMemo, oracle_hash
from reconciler.bindings import Bindings, StaleAnswer, select_stale
from reconciler.ids import AnswerId, AssetId, Oid
from reconciler.lens import Answer, Lens


class _AssetChangeRecord(TypedDict):
    asset: str
    change: str
    path: str


class AssetChangeRecord(_AssetChangeRecord, total=False):
    """JSON form of an :class:`AssetChange` (``old_path`` only for a move)."""

    old_path: str


class StaleRecord(TypedDict):
    """JSON form of one stale answer: its reasons (``Reason`` values) and their explanations."""

    answer: str
    reasons: list[str]
    explain: list[str]


class AnswerChangeRecord(TypedDict):
    """JSON form of one certified-answer change (:func:`diff_answers`)."""

    answer: str
    change: str


class PlanRecord(TypedDict):
    """The plan part of a lens's JSON object and of ``state/run.json``."""

    changed_assets: list[AssetChangeRecord]
    stale: list[StaleRecord]
    changed_answers: list[AnswerChangeRecord]
    self_test_planned: list[str]
    starvation: bool


@dataclass(frozen=True, kw_only=True)
class AssetChange:
    """One changed asset between serving and candidate."""

    asset: AssetId
    change: str  # added | modified | removed | renamed
    path: str
    old_path: str | None = None

    def record(self) -> AssetChangeRecord:
        """JSON-ready form (``{"asset", "change"}`` plus paths)."""
        out: AssetChangeRecord = {"asset": self.asset, "change": self.change, "path": self.path}
        if self.old_path is not None and self.old_path != self.path:
            out["old_path"] = self.old_path
        return out


@dataclass(frozen=True, kw_only=True)
class LensPlan:
    """The plan for one lens (keyword arguments only).

    Attributes:
        lens: lens name.
        gate: ``off`` / ``warn`` / ``block`` (the candidate's setting).
        serving: the serving deployment commit, ``None`` when nothing serves.
        serving_tree: the serving lens tree id.
        candidate: the candidate commit (``None`` for the working tree).
        candidate_tree: the candidate lens tree id (``None`` for the working tree).
        unchanged: the candidate lens tree is the one already serving.
        changed_assets: asset changes, sorted by asset id.
        stale: stale active answers with reasons, sorted by id.
        self_test: answers the push creates or whose SQL it re-authors (every
            active answer when nothing serves yet).
        starvation: the active certified corpus goes from ≥ 1 to 0.
        active_before, active_after: active answers at serving and candidate.
        deps: each active answer's dependency set with chains (for stamping).
        stamped: active answers with a binding at the serving version: the
            generator reproduced them once (their green baseline, DESIGN §5).
        strict_declines: every declined stale answer blocks (``lens.yaml``).
        removed_active: answers active at serving that the candidate retires,
            drafts or deletes, with what the serving version last knew of each
            (``correct at <commit>`` when it carries a green stamp, else
            ``never reproduced``).
        unrecertified: active answers whose question or SQL the candidate
            re-authors while keeping the serving version's provenance word for word
            (a hand edit nobody re-certified), with that provenance as ``(by, at)``.
    """

    lens: str
    gate: str
    serving: Oid | None
    serving_tree: Oid | None
    candidate: Oid | None
    candidate_tree: Oid | None
    unchanged: bool
    changed_assets: tuple[AssetChange, ...] = ()
    stale: tuple[StaleAnswer, ...] = ()
    self_test: tuple[AnswerId, ...] = ()
    starvation: bool = False
    active_before: int = 0
    active_after: int = 0
    deps: Mapping[AnswerId, Mapping[AssetId, tuple[AssetId, ...]]] = field(default_factory=dict)
    assets: Mapping[AssetId, Asset] = field(default_factory=dict)
    changed_answers: tuple[tuple[AnswerId, str], ...] = ()
    stamped: frozenset[AnswerId] = frozenset()
    strict_declines: bool = False
    removed_active: tuple[tuple[AnswerId, str], ...] = ()
    unrecertified: tuple[tuple[AnswerId, str, str], ...] = ()

    @property
    def gated(self) -> tuple[AnswerId, ...]:
        """Stale answers the gate scores: stale minus self-test."""
        selftest = set(self.self_test)
        return tuple(s.answer for s in self.stale if s.answer not in selftest)

    def record(self) -> PlanRecord:
        """The plan part of a lens's JSON object."""
        return {
            "changed_assets": [c.record() for c in self.changed_assets],
            "stale": [
                {
                    "answer": s.answer,
                    "reasons": [r.reason.value for r in s.reasons],
                    "explain": [r.describe() for r in s.reasons],
                }
                for s in self.stale
            ],
            "changed_answers": [{"answer": a, "change": c} for a, c in self.changed_answers],
            "self_test_planned": list(self.self_test),
            "starvation": self.starvation,
        }


def diff_assets(old: Mapping[AssetId, Asset], new: Mapping[AssetId, Asset]) -> list[AssetChange]:
    """Asset changes by identity and canonical hash.

    Same id and hash but another file is ``renamed``; a formatting-only edit
    (same hash, same file) is no change at all.
    """
    changes: list[AssetChange] = []
    for aid in sorted(set(old) | set(new)):
        before, after = old.get(aid), new.get(aid)
        if before is None and after is not None:
            changes.append(AssetChange(asset=aid, change="added", path=after.path))
        elif after is None and before is not None:
            changes.append(AssetChange(asset=aid, change="removed", path=before.path))
        elif before is not None and after is not None:
            if before.hash != after.hash:
                changes.append(
                    AssetChange(asset=aid, change="modified", path=after.path, old_path=before.path)
                )
            elif before.path != after.path:
                changes.append(
                    AssetChange(asset=aid, change="renamed", path=after.path, old_path=before.path)
                )
    return changes


def diff_answers(
    old: Lens | None,
    new: Lens,
    *,
    old_oracle: Callable[[Answer], str] | None = None,
    new_oracle: Callable[[Answer], str] | None = None,
) -> list[tuple[AnswerId, str]]:
    """Certified-answer changes: ``added``, ``removed``, ``reauthored`` (question or
    SQL), ``<old status>→<new status>``, or ``provenance`` (nothing else changed).

    ``old_oracle`` / ``new_oracle`` give an answer's oracle hash in ``old`` /
    ``new`` (default :func:`~reconciler.assets.oracle_hash`; a plan passes its memo's).
    """
    before = dict(old.answers) if old is not None else {}
    old_dialect = old.config.dialect if old else ""
    old_oracle = old_oracle or functools.partial(oracle_hash, dialect=old_dialect)
    new_oracle = new_oracle or functools.partial(oracle_hash, dialect=new.config.dialect)
    out: list[tuple[AnswerId, str]] = []
    for aid in sorted(set(before) | set(new.answers)):
        a, b = before.get(aid), new.answers.get(aid)
        if a is None:
            out.append((aid, "added"))
        elif b is None:
            out.append((aid, "removed"))
        elif old_oracle(a) != new_oracle(b):
            out.append((aid, "reauthored"))
        elif a.status != b.status:
            out.append((aid, f"{a.status}→{b.status}"))
        elif a != b:
            out.append((aid, "provenance"))
    return out


@dataclass(frozen=True)
class Planner:
    """Plans lenses, keeping what it derives from each lens version in a memo.

    Attributes:
        memo: asset hashes, oracle hashes and dependency sets by lens version
            (:class:`~reconciler.assets.PlanMemo`: on disk under ``.dst/plan/``
            for ``dst plan`` and ``dst apply``; in memory by default).
    """

    memo: PlanMemo = field(default_factory=lambda: PlanMemo(None))

    def plan_lens(
        self,
        name: str,
        *,
        candidate: Lens | None,
        candidate_commit: Oid | None,
        candidate_tree: Oid | None,
        serving: Lens | None,
        serving_deployment: Oid | None,
        serving_tree: Oid | None,
        bindings: Bindings,
    ) -> LensPlan:
        """Plan one lens.

        Args:
            name: lens name.
            candidate: the candidate lens (``None`` when the candidate deletes it).
            candidate_commit, candidate_tree: where it was read from.
            serving: the serving lens (``None`` when nothing serves).
            serving_deployment, serving_tree: the serving deployment and its lens tree.
            bindings: the serving deployment's bindings.

        Returns:
            The plan; an unchanged lens tree short-circuits to ``unchanged=True``.
        """
        active_before = len(serving.active_answers()) if serving is not None else 0
        if candidate is None:
            return LensPlan(
                lens=name,
                gate=serving.config.eval_gate if serving else "block",
                serving=serving_deployment,
                serving_tree=serving_tree,
                candidate=candidate_commit,
                candidate_tree=None,
                unchanged=False,
                active_before=active_before,
            )
        gate = candidate.config.eval_gate
        if candidate_tree is not None and candidate_tree == serving_tree:
            return LensPlan(
                lens=name,
                gate=gate,
                serving=serving_deployment,
                serving_tree=serving_tree,
                candidate=candidate_commit,
                candidate_tree=candidate_tree,
                unchanged=True,
                active_before=active_before,
                active_after=active_before,
            )
        memo = self.memo
        new_assets = memo.assets(candidate, candidate_tree)
        old_assets = memo.assets(serving, serving_tree) if serving is not None else {}
        new_oracle = functools.partial(memo.oracle_hash, candidate, candidate_tree)
        stale, deps = select_stale(
            candidate,
            new_assets,
            bindings,
            serving,
            deps_of=functools.partial(memo.dependency_set, candidate, candidate_tree),
            oracle_of=new_oracle,
        )
        active = candidate.active_answers()
        old_oracle = (
            functools.partial(memo.oracle_hash, serving, serving_tree)
            if serving is not None
            else None
        )
        changed_answers = diff_answers(
            serving, candidate, old_oracle=old_oracle, new_oracle=new_oracle
        )
        memo.flush()
        created = {aid for aid, change in changed_answers if change in ("added", "reauthored")}
        removed = _removed_active(serving, active, bindings)
        self_test = tuple(
            AnswerId(a.id) for a in active if serving is None or AnswerId(a.id) in created
        )
        return LensPlan(
            lens=name,
            gate=gate,
            serving=serving_deployment,
            serving_tree=serving_tree,
            candidate=candidate_commit,
            candidate_tree=candidate_tree,
            unchanged=False,
            changed_assets=tuple(diff_assets(old_assets, new_assets)),
            stale=tuple(stale),
            self_test=self_test,
            starvation=active_before >= 1 and not active,
            active_before=active_before,
            active_after=len(active),
            deps=deps,
            assets=new_assets,
            changed_answers=tuple(changed_answers),
            stamped=frozenset(aid for aid in deps if aid in bindings.answers),
            strict_declines=candidate.config.strict_declines,
            removed_active=removed,
            unrecertified=_unrecertified(serving, candidate, changed_answers),
        )


def _unrecertified(
    serving: Lens | None, candidate: Lens, changed: Sequence[tuple[AnswerId, str]]
) -> tuple[tuple[AnswerId, str, str], ...]:
    """Re-authored active answers whose provenance is the serving version's, unchanged."""
    if serving is None:
        return ()
    out = []
    for aid, change in changed:
        old, new = serving.answers.get(aid), candidate.answers.get(aid)
        if change != "reauthored" or old is None or new is None:
            continue
        if old.status == new.status == "active" and old.provenance == new.provenance:
            out.append((aid, new.provenance.certified_by, new.provenance.certified_at))
    return tuple(out)


def plan_lens(
    name: str,
    *,
    candidate: Lens | None,
    candidate_commit: Oid | None,
    candidate_tree: Oid | None,
    serving: Lens | None,
    serving_deployment: Oid | None,
    serving_tree: Oid | None,
    bindings: Bindings,
) -> LensPlan:
    """Plan one lens with an in-memory memo (:meth:`Planner.plan_lens`)."""
    return Planner().plan_lens(
        name,
        candidate=candidate,
        candidate_commit=candidate_commit,
        candidate_tree=candidate_tree,
        serving=serving,
        serving_deployment=serving_deployment,
        serving_tree=serving_tree,
        bindings=bindings,
    )


def _removed_active(
    serving: Lens | None, active: Sequence[Answer], bindings: Bindings
) -> tuple[tuple[AnswerId, str], ...]:
    """Answers active in ``serving`` but not among ``active``, each with its last outcome."""
    active_ids = {AnswerId(a.id) for a in active}
    return tuple(
        (AnswerId(a.id), _last_outcome(bindings, AnswerId(a.id)))
        for a in (serving.active_answers() if serving is not None else [])
        if AnswerId(a.id) not in active_ids
    )


def _last_outcome(bindings: Bindings, aid: AnswerId) -> str:
    binding = bindings.answers.get(aid)
    return f"correct at {binding.source[:12]}" if binding else "never reproduced"


def unchanged_plan(
    name: str,
    *,
    gate: str,
    candidate_commit: Oid | None,
    serving_deployment: Oid,
    serving_tree: Oid,
) -> LensPlan:
    """The plan of a lens whose candidate tree is the one serving, built without opening it.

    An unchanged lens subtree has the same tree id at serving and candidate, so
    nothing in it can be stale and none of its files is read: the plan's cost
    does not grow with the lenses a push leaves alone. The answer counts are
    not read either (they stay 0); the gate never looks at them for an
    unchanged lens.

    Args:
        name: lens name.
        gate: the serving deployment's recorded gate mode (same tree, same ``lens.yaml``).
        candidate_commit: the candidate commit (``None`` for the working tree).
        serving_deployment, serving_tree: the serving deployment and its lens tree.
    """
    return LensPlan(
        lens=name,
        gate=gate,
        serving=serving_deployment,
        serving_tree=serving_tree,
        candidate=candidate_commit,
        candidate_tree=serving_tree,
        unchanged=True,
    )
