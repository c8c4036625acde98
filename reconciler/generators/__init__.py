"""Generator tiers: ``fast`` (deterministic semantic compiler) and ``smart`` (LLM).

:func:`generate` tries the request's tiers in order and returns the first
generation that produced SQL. The ``fast`` tier lives in
:mod:`reconciler.generators.fast`; the ``smart`` tier (:mod:`reconciler.generators.smart`) is
reached through a :data:`SmartCall` that the caller passes in (the pure core never
opens a network connection); without one, ``smart`` is skipped when another tier is
configured and declines when it is the only one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.assembly.retrieval import GenerationRequest
from reconciler.lens import Lens

# {(model name, dimension name): distinct values seen in the warehouse}, read by the
# suite before generation so the fast tier can turn "in Europe" into region = 'Europe'.
DimensionValues = Mapping[tuple[str, str], tuple[str, ...]]


@dataclass(frozen=True)
class Generation:
    """One generator attempt.

    Attributes:
        tier: the tier that produced it (``fast`` / ``smart``), or ``none``.
        sql: the generated query, or ``None`` when the generator declined.
        declined: why it declined (``None`` when it produced SQL).
        usage: the smart tier's call record (model, latency in seconds, tokens,
            cost in USD, repair hint); ``None`` for the fast tier.
    """

    tier: str
    sql: str | None
    declined: str | None = None
    usage: Mapping[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """JSON-ready record."""
        out: dict[str, Any] = {"tier": self.tier, "sql": self.sql, "declined": self.declined}
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        return out


# The smart tier as the pure core sees it: (lens, request, repair hint) → generation.
SmartCall = Callable[[Lens, GenerationRequest, "str | None"], Generation]


SMART_UNAVAILABLE = "smart tier not configured"


def generate(
    lens: Lens,
    request: GenerationRequest,
    values: DimensionValues,
    *,
    smart: SmartCall | None = None,
    hint: str | None = None,
) -> Generation:
    """Run the request's tiers in order; the first that produces SQL wins.

    Args:
        lens: the lens version the request was assembled against.
        request: the assembled request; ``request.tiers`` gives the order.
        values: ``{(model, dimension): distinct warehouse values}`` for value filters.
        smart: the configured smart tier (:mod:`reconciler.generators.smart`), or ``None``:
            then ``smart`` is skipped when another tier is listed and declines
            when it is the only one.
        hint: an executable gate's repair hint for this retry; only the smart
            tier reads it (the fast tier is deterministic, a hint cannot change it).

    Returns:
        The first generation with SQL; otherwise the last tier's decline
        (``tier="none"`` when the request names no tier).
    """
    # Imported here: the tier modules import Generation from this package.
    from reconciler.generators import fast

    last: Generation | None = None
    for tier in request.tiers:
        if tier == "fast":
            result = fast.compile_request(lens, request, values)
        elif tier == "smart":
            if smart is not None:
                result = smart(lens, request, hint)
            elif len(request.tiers) > 1:
                continue
            else:
                result = Generation("smart", None, SMART_UNAVAILABLE)
        else:
            result = Generation(tier, None, f"unknown generator tier {tier!r}")
        if result.sql is not None:
            return result
        last = result
    return last or Generation("none", None, "no generator tier configured")
