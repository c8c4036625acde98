"""Bindings and stale selection (pure).

A binding records, for one certified answer, ``{asset id: asset hash}`` of
everything its verification depended on, stamped when it last ran green. An
active answer is stale when its binding is missing, names an asset that changed
or vanished, or when its dependency set on the candidate differs from the
stamped one (DESIGN §1). Each stale answer carries :class:`Reason` values and
the asset chain that explains them (``dst plan --explain``), after dbt's
``state:modified`` selection, which also says why a node was selected.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from reconciler.assets import HASH_SCHEME, Asset, dependency_set, oracle_hash
from reconciler.errors import StateError
from reconciler.ids import AnswerId, AssetId

if TYPE_CHECKING:
    from reconciler.lens import Answer, Lens

BINDINGS_SCHEMA = 1


class Reason(str, Enum):
    """Why an answer is selected for re-verification."""

    NEW = "new"
    SQL_REAUTHORED = "sql_reauthored"
    ASSET_CHANGED = "asset_changed"
    ASSET_REMOVED = "asset_removed"
    DEPENDENCY_SET_CHANGED = "dependency_set_changed"
    NEVER_VERIFIED = "never_verified"


@dataclass(frozen=True)
class Binding:
    """One answer's stamp.

    Attributes:
        assets: ``{asset id: asset hash}`` of its dependency set when it last ran green.
        oracle: hash of its question and normalized oracle SQL at that time.
        source: the source commit it was verified at.
        flakes: how many runs it passed only on the second attempt.
    """

    assets: Mapping[AssetId, str]
    oracle: str
    source: str
    flakes: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form with sorted asset keys."""
        return {
            "assets": dict(sorted(self.assets.items())),
            "oracle": self.oracle,
            "source": self.source,
            "flakes": self.flakes,
        }


@dataclass(frozen=True)
class Bindings:
    """Every answer's binding for one lens, as stored in ``state/bindings.json``."""

    answers: Mapping[AnswerId, Binding] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"schema_version", "hash_scheme", "answers": {id: binding}}``."""
        return {
            "schema_version": BINDINGS_SCHEMA,
            "hash_scheme": HASH_SCHEME,
            "answers": {k: v.to_json() for k, v in sorted(self.answers.items())},
        }

    def dumps(self) -> bytes:
        """Stable, indented JSON bytes."""
        return (json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def loads(cls, raw: bytes, *, where: str, answers: bool = True) -> Bindings:
        """Parse ``state/bindings.json``.

        With ``answers=False`` only the header is checked (schema version and
        hash scheme) and the result holds no answers: for a lens whose tree
        already serves, whose bindings a plan never consults.

        Raises:
            StateError: bad JSON, an unknown ``schema_version`` or a different
                ``hash_scheme`` (which needs an explicit migration, never
                "everything is stale").
        """
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise StateError(f"{where}: bindings are not JSON ({exc})") from None
        if data.get("schema_version") != BINDINGS_SCHEMA:
            raise StateError(
                f"{where}: unknown bindings schema_version {data.get('schema_version')!r}",
                fix="upgrade dst to a version that knows this state",
            )
        if data.get("hash_scheme") != HASH_SCHEME:
            raise StateError(
                f"{where}: bindings use hash scheme {data.get('hash_scheme')!r}, "
                f"this dst uses {HASH_SCHEME}",
                fix="use the dst version that wrote this state: a hash-scheme change needs "
                "an explicit migration, never a silent re-hash",
            )
        if not answers:
            return cls()
        return cls(
            {
                AnswerId(k): Binding(
                    {AssetId(a): h for a, h in v["assets"].items()},
                    v["oracle"],
                    v["source"],
                    int(v.get("flakes", 0)),
                )
                for k, v in data.get("answers", {}).items()
            }
        )

    def restamped(
        self, stamps: Mapping[AnswerId, Binding], keep: frozenset[AnswerId] | None = None
    ) -> Bindings:
        """A copy with ``stamps`` replacing their answers' bindings.

        Args:
            stamps: new bindings for answers that ran green.
            keep: when given, drop bindings of answers not in this set (retired
                or deleted answers), so the stored state does not grow forever.
        """
        merged = dict(self.answers)
        merged.update(stamps)
        if keep is not None:
            merged = {k: v for k, v in merged.items() if k in keep}
        return Bindings(merged)


@dataclass(frozen=True)
class StaleReason:
    """One reason an answer is stale, with the asset and the chain that pulls it in."""

    reason: Reason
    asset: AssetId | None = None
    chain: tuple[AssetId, ...] = ()

    def describe(self) -> str:
        """``asset_changed: metrics/net_revenue → models/orders``-style text."""
        if self.asset is None:
            return self.reason.value
        path = " → ".join(self.chain) if self.chain else self.asset
        return f"{self.reason.value}: {path}"


@dataclass(frozen=True)
class StaleAnswer:
    """An active answer selected for re-verification, with every reason."""

    answer: AnswerId
    reasons: tuple[StaleReason, ...]

    @property
    def reason_codes(self) -> tuple[Reason, ...]:
        """The distinct reason codes, in first-seen order."""
        return tuple(dict.fromkeys(r.reason for r in self.reasons))


def stamp(
    lens: Lens,
    assets: Mapping[AssetId, Asset],
    answer_id: AnswerId,
    deps: Mapping[AssetId, tuple[AssetId, ...]],
    source: str,
    flakes: int,
) -> Binding:
    """The binding an answer gets when it runs green on ``lens``."""
    answer = lens.answers[answer_id]
    return Binding(
        {a: assets[a].hash for a in deps if a in assets},
        oracle_hash(answer, lens.config.dialect),
        source,
        flakes,
    )


def select_stale(
    candidate: Lens,
    assets: Mapping[AssetId, Asset],
    bindings: Bindings,
    serving: Lens | None,
    *,
    deps_of: Callable[[Answer], dict[AssetId, tuple[AssetId, ...]]] | None = None,
    oracle_of: Callable[[Answer], str] | None = None,
) -> tuple[list[StaleAnswer], dict[AnswerId, dict[AssetId, tuple[AssetId, ...]]]]:
    """Stale active answers of ``candidate`` against the stored ``bindings``.

    Args:
        candidate: the lens version being planned.
        assets: ``lens_assets(candidate)``.
        bindings: the serving version's bindings (empty when nothing serves).
        serving: the serving lens, to tell new and re-authored answers apart.
        deps_of, oracle_of: an answer's dependency set and oracle hash on
            ``candidate`` (default :func:`dependency_set`, :func:`oracle_hash`;
            a plan passes its memo's).

    Returns:
        ``(stale answers sorted by id, {answer id: dependency set with chains}
        for every active answer)``.
    """
    dialect = candidate.config.dialect
    if deps_of is None:
        deps_of = functools.partial(dependency_set, candidate)
    if oracle_of is None:
        oracle_of = functools.partial(oracle_hash, dialect=dialect)
    deps_by_answer: dict[AnswerId, dict[AssetId, tuple[AssetId, ...]]] = {}
    stale: list[StaleAnswer] = []
    for answer in candidate.active_answers():
        aid = AnswerId(answer.id)
        deps = deps_of(answer)
        deps_by_answer[aid] = deps
        reasons: list[StaleReason] = []
        old = serving.answers.get(aid) if serving is not None else None
        if serving is not None and old is None:
            reasons.append(StaleReason(Reason.NEW))
        binding = bindings.answers.get(aid)
        if binding is None:
            reasons.append(StaleReason(Reason.NEVER_VERIFIED))
        else:
            if binding.oracle != oracle_of(answer):
                reasons.append(StaleReason(Reason.SQL_REAUTHORED))
            for asset_id, old_hash in sorted(binding.assets.items()):
                if asset_id not in assets:
                    reasons.append(
                        StaleReason(Reason.ASSET_REMOVED, asset_id, deps.get(asset_id, ()))
                    )
                elif assets[asset_id].hash != old_hash:
                    reasons.append(
                        StaleReason(Reason.ASSET_CHANGED, asset_id, deps.get(asset_id, ()))
                    )
            added = sorted(set(deps) - set(binding.assets))
            dropped = sorted(
                set(binding.assets) - set(deps) - {r.asset for r in reasons if r.asset is not None}
            )
            for asset_id in added:
                reasons.append(StaleReason(Reason.DEPENDENCY_SET_CHANGED, asset_id, deps[asset_id]))
            for asset_id in dropped:
                reasons.append(StaleReason(Reason.DEPENDENCY_SET_CHANGED, asset_id))
        if reasons:
            stale.append(StaleAnswer(aid, tuple(reasons)))
    return stale, deps_by_answer
