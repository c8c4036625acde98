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
from reconciler.reading.ir import DeclineKind


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
        decline_kind: the class of a ``fast`` decline
            (:class:`~reconciler.reading.ir.DeclineKind`), else ``None``.
        reading: the ``fast`` tier's reading of the question in its compact text form
            (``reads_as``, :func:`reconciler.reading.parse.one_reading`), else ``None``.
    """

    tier: str
    sql: str | None
    declined: str | None = None
    usage: Mapping[str, object] | None = None
    error: bool = False
    exemplar: str | None = None
    decline_kind: DeclineKind | None = None
    reading: str | None = None

    def record(self) -> dict[str, object]:
        """JSON-ready record."""
        out: dict[str, object] = {"tier": self.tier, "sql": self.sql, "declined": self.declined}
        if self.error:
            out["error"] = True
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.exemplar is not None:
            out["exemplar"] = self.exemplar
        if self.decline_kind is not None:
            out["decline_kind"] = self.decline_kind.value
        if self.reading is not None:
            out["reading"] = self.reading
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
