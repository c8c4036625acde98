"""Coverage of a lens: assets no certified answer verifies, metrics no case names (pure).

dbt reports which models carry no test; this is the same question for a lens.
Two measures, each a share of a lens's assets:

* **asset coverage**: the models, metrics and exemplars that appear in the
  dependency set (:func:`reconciler.assets.dependency_set`) of at least one
  *active* certified answer, over all of them. An asset outside every
  dependency set can change without making any answer stale, so no gate ever
  re-verifies it. ``lens.yaml`` and skills are left out: every answer depends
  on them, so they are bound whenever any answer is.
* **case coverage**: the metrics that at least one behavioural case
  (``evals/cases.yaml``) names, over all metrics. "Names" is the assembly's own
  lexical retrieval (:func:`reconciler.assembly.retrieval.retrieve`), so a case mentions
  a metric exactly when generation would select it for that question.

An empty denominator counts as full coverage (nothing is left uncovered), the
convention coverage tools use for a file with no statements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.assembly.retrieval import retrieve
from reconciler.assets import dependency_set, lens_assets
from reconciler.ids import AnswerId, AssetId, LensName
from reconciler.lens import Lens

COVERED_KINDS = ("models", "metrics", "exemplars")


def percent(covered: int, total: int) -> float:
    """``covered`` as a percentage of ``total`` (0–100); ``100.0`` when ``total`` is 0."""
    return 100.0 if total == 0 else 100.0 * covered / total


@dataclass(frozen=True)
class LensCoverage:
    """Coverage of one lens version.

    Attributes:
        lens: lens name.
        assets: every model, metric and exemplar asset id, sorted.
        bound_by: ``{asset id: ids of the active answers whose dependency set holds
            it}`` for the bound ones among ``assets``, answer ids sorted.
        metrics: every metric name, sorted.
        mentioned_by: ``{metric name: indices into the lens's cases naming it}``
            for the metrics some case names.
        answers: number of active certified answers.
        cases: number of behavioural cases.
        sources: ``{asset id: lens-relative file}`` of the uncovered assets, for messages.
        flake_rates: ``{answer id: {"flaky_samples", "samples"}}`` of the answers the
            serving deployment's run found flaky (its ``state/meta.json``); empty
            when nothing serves or none was.
    """

    lens: LensName
    assets: tuple[AssetId, ...]
    bound_by: Mapping[AssetId, tuple[AnswerId, ...]]
    metrics: tuple[str, ...]
    mentioned_by: Mapping[str, tuple[int, ...]]
    answers: int
    cases: int
    sources: Mapping[AssetId, str]
    flake_rates: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def unbound(self) -> tuple[AssetId, ...]:
        """Assets no active answer's dependency set holds, sorted."""
        return tuple(a for a in self.assets if a not in self.bound_by)

    @property
    def unmentioned(self) -> tuple[str, ...]:
        """Metrics no behavioural case names, sorted."""
        return tuple(m for m in self.metrics if m not in self.mentioned_by)

    @property
    def asset_coverage(self) -> float:
        """Bound assets as a percentage of all models, metrics and exemplars."""
        return percent(len(self.assets) - len(self.unbound), len(self.assets))

    @property
    def case_coverage(self) -> float:
        """Metrics some case names as a percentage of all metrics."""
        return percent(len(self.metrics) - len(self.unmentioned), len(self.metrics))

    def record(self) -> dict[str, Any]:
        """JSON-ready record: both measures with counts, and the uncovered lists.

        Shape::

            {"lens": str, "active_answers": int, "cases": int,
             "asset_coverage": {"covered": int, "total": int, "percent": float},
             "case_coverage": {"covered": int, "total": int, "percent": float},
             "unbound_assets": [{"asset": str, "path": str}, ...],
             "unmentioned_metrics": [str, ...],
             "flake_rates": {answer: {"flaky_samples": int, "samples": int}}}

        ``percent`` is rounded to two decimals; the counts are exact.
        """
        return {
            "lens": self.lens,
            "active_answers": self.answers,
            "cases": self.cases,
            "asset_coverage": {
                "covered": len(self.assets) - len(self.unbound),
                "total": len(self.assets),
                "percent": round(self.asset_coverage, 2),
            },
            "case_coverage": {
                "covered": len(self.metrics) - len(self.unmentioned),
                "total": len(self.metrics),
                "percent": round(self.case_coverage, 2),
            },
            "unbound_assets": [{"asset": a, "path": self.sources.get(a, "")} for a in self.unbound],
            "unmentioned_metrics": list(self.unmentioned),
            "flake_rates": {a: dict(v) for a, v in sorted(self.flake_rates.items())},
        }


def coverage(
    lens: Lens, flake_rates: Mapping[str, Mapping[str, int]] | None = None
) -> LensCoverage:
    """Measure ``lens``'s asset coverage and case coverage (see the module docstring).

    Args:
        lens: a loaded lens version (any answers with status other than ``active``
            bind nothing).
        flake_rates: the serving deployment's flaky answers (``state/meta.json``), shown as given.

    Returns:
        The coverage, with every list sorted.
    """
    assets = tuple(
        sorted(aid for aid, asset in lens_assets(lens).items() if asset.kind in COVERED_KINDS)
    )
    wanted = set(assets)
    binders: dict[AssetId, list[AnswerId]] = {}
    active = lens.active_answers()
    for answer in active:
        for aid in dependency_set(lens, answer):
            if aid in wanted:
                binders.setdefault(aid, []).append(AnswerId(answer.id))
    mentions: dict[str, list[int]] = {}
    for index, case in enumerate(lens.cases):
        for name in retrieve(lens, case.question).metrics():
            mentions.setdefault(name, []).append(index)
    return LensCoverage(
        lens=lens.name,
        assets=assets,
        bound_by={aid: tuple(sorted(ids)) for aid, ids in sorted(binders.items())},
        metrics=tuple(sorted(lens.metrics)),
        mentioned_by={name: tuple(ix) for name, ix in sorted(mentions.items())},
        answers=len(active),
        cases=len(lens.cases),
        sources={aid: lens.sources.get(aid, "") for aid in assets if aid not in binders},
        flake_rates=dict(flake_rates or {}),
    )
