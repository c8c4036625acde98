"""The call and cost estimate a gate checks against its budget before it spends anything.

A lens's run is estimated answer by answer, sample by sample, without a call: the
request is assembled as the suite will assemble it, and its tiers are tried in
order as :func:`reconciler.generators.generate` tries them, except that an external
tier is only *peeked*: its cached answer, if the cache holds one for this sample, is
free; otherwise the estimate counts one call and assumes that tier answers. A sample
the fast tier answers ends the answer's estimate (the suite stops sampling there:
the fast tier is deterministic).

The cost of each uncached call is the mean ``cost_usd`` of what was charged before:
the cached answers this estimate found for the lens, and every external-tier
generation its previous runs recorded (the serving deployment's and the last
attempt's ``state/run.json``). With neither the cost cannot be estimated and counts
as 0, so ``max_cost_usd`` then only stops the run mid-way, once the tiers report
what they spent. The re-run
after a divergence (``samples: 1``) is not estimated: it happens only on a
divergence, and the in-run budget still bounds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.assembly.request import GenerationRequest, assemble
from reconciler.assembly.similarity import Embedder
from reconciler.generators import fast
from reconciler.generators.cache import SAMPLE
from reconciler.generators.generation import DimensionValues, Generation, TierCall
from reconciler.ids import AnswerId
from reconciler.lens import Answer, Lens


@dataclass(frozen=True)
class Estimate:
    """What scoring some answers would spend.

    Attributes:
        calls: external-tier calls the cache cannot answer.
        cost_usd: their estimated cost (module docstring).
        cached: samples the cache answers.
    """

    calls: int
    cost_usd: float
    cached: int

    def describe(self) -> str:
        """``3 uncached call(s), est. $0.012 (5 cached)``."""
        return f"{self.calls} uncached call(s), est. ${self.cost_usd:g} ({self.cached} cached)"


def estimate(
    lens: Lens,
    answers: Sequence[Answer],
    values: DimensionValues,
    tiers: dict[str, TierCall | None],
    *,
    embedder: Embedder | None = None,
    recorded: Sequence[float] = (),
) -> Estimate:
    """Estimate the external-tier calls and cost of scoring ``answers`` (module docstring).

    Args:
        lens: the lens version under test.
        answers: the answers the run will score (gated and self-test), each
            ``samples:`` times (lens.yaml).
        values: dimension values for the fast tier.
        tiers: ``{"smart": call, "command": call}`` as the suite gets them (``None``: absent).
        embedder: as the suite's assembly uses it.
        recorded: ``cost_usd`` of the calls the lens's previous runs recorded.
    """
    calls = cached = 0
    samples = lens.config.samples
    costs: list[float] = list(recorded)
    for answer in answers:
        request = assemble(
            lens,
            answer.question,
            exclude_answer=AnswerId(answer.id),
            certified_matching=False,
            embedder=embedder,
        )
        for index in range(1, samples + 1):
            token = SAMPLE.set(index)
            try:
                spent = _sample(lens, request, values, tiers, costs)
            finally:
                SAMPLE.reset(token)
            if spent is None:
                break  # the fast tier answered: deterministic, no further sample
            calls += spent
            cached += 1 - spent
    mean = sum(costs) / len(costs) if costs else 0.0
    return Estimate(calls, round(calls * mean, 6), cached)


def _sample(
    lens: Lens,
    request: GenerationRequest,
    values: DimensionValues,
    tiers: dict[str, TierCall | None],
    costs: list[float],
) -> int | None:
    """Calls one sample makes (0 or 1), or ``None`` when the fast tier answers it."""
    for tier in request.tiers:
        if tier == "fast":
            if fast.compile_request(lens, request, values).sql is not None:
                return None
            continue
        call = tiers.get(tier)
        peek = getattr(call, "peek", None)  # the smart and command tiers can be peeked
        if peek is None:
            continue
        found: Generation | None = peek(lens, request)
        if found is None:
            return 1
        cost = (found.usage or {}).get("cost_usd")
        if isinstance(cost, (int, float)):
            costs.append(float(cost))
        if found.sql is not None:
            return 0
    return 0
