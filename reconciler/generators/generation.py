"""What a generator tier returns, and what the tiers are given (pure values).

:class:`Generation` is one attempt of one tier; :data:`SmartCall` is the smart
tier as the pure core sees it; :data:`DimensionValues` are the warehouse values
the fast tier reads for value filters. :func:`reconciler.generators.generate`
runs the tiers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.request import GenerationRequest
from reconciler.lens import Lens


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
    usage: Mapping[str, object] | None = None

    def record(self) -> dict[str, object]:
        """JSON-ready record."""
        out: dict[str, object] = {"tier": self.tier, "sql": self.sql, "declined": self.declined}
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        return out


# The smart tier as the pure core sees it: (lens, request, repair hint) → generation.
SmartCall = Callable[[Lens, GenerationRequest, "str | None"], Generation]


SMART_UNAVAILABLE = "smart tier not configured"

__all__ = ["SMART_UNAVAILABLE", "DimensionValues", "Generation", "SmartCall"]
