"""What a generator tier returns, and what the tiers are given (pure values).

:class:`Generation` is one attempt of one tier; :data:`TierCall` is an external
tier (``smart``, ``command``) as the pure core sees it; :data:`DimensionValues` are
the warehouse values the fast tier reads for value filters. :func:`reconciler.generators.generate`
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
        tier: the tier that produced it (``fast`` / ``smart`` / ``command``), or ``none``.
        sql: the generated query, or ``None`` when the generator declined or failed.
        declined: why it declined or failed (``None`` when it produced SQL).
        usage: the call record of an external tier (model or program, latency in
            seconds, tokens, cost in USD, repair hint, ``cached``); ``None`` for ``fast``.
        error: ``True`` when the tier could not run (a crashed or hung program, an
            unusable reply): the suite scores it ``error``, never ``declined``.
        exemplar: the exemplar whose SQL the fast tier served (as written or
            adapted), else ``None``.
    """

    tier: str
    sql: str | None
    declined: str | None = None
    usage: Mapping[str, object] | None = None
    error: bool = False
    exemplar: str | None = None

    def record(self) -> dict[str, object]:
        """JSON-ready record."""
        out: dict[str, object] = {"tier": self.tier, "sql": self.sql, "declined": self.declined}
        if self.error:
            out["error"] = True
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.exemplar is not None:
            out["exemplar"] = self.exemplar
        return out


# An external tier as the pure core sees it: (lens, request, repair hint) → generation.
TierCall = Callable[[Lens, GenerationRequest, "str | None"], Generation]
SmartCall = TierCall


SMART_UNAVAILABLE = "smart tier not configured"
COMMAND_UNAVAILABLE = "command tier not configured"

__all__ = [
    "COMMAND_UNAVAILABLE",
    "SMART_UNAVAILABLE",
    "DimensionValues",
    "Generation",
    "SmartCall",
    "TierCall",
]
