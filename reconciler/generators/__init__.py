"""Generator tiers: ``fast`` (semantic compiler), ``smart`` (LLM), ``command`` (a program).

:func:`generate` tries the request's tiers in order and returns the first
generation that produced SQL. The ``fast`` tier lives in
:mod:`reconciler.generators.fast`; the ``smart`` tier (:mod:`reconciler.generators.smart`)
and the ``command`` tier (:mod:`reconciler.generators.command`) are reached through a
:data:`TierCall` the caller passes in (the pure core never opens a connection or
starts a process); without one, such a tier is skipped when another tier is
configured and declines when it is the only one.
"""

from __future__ import annotations

from reconciler.assembly.request import GenerationRequest
from reconciler.generators import fast
from reconciler.generators.generation import (
    COMMAND_UNAVAILABLE,
    SMART_UNAVAILABLE,
    DimensionValues,
    Generation,
    SmartCall,
    TierCall,
)
from reconciler.lens import Lens

__all__ = [
    "COMMAND_UNAVAILABLE",
    "SMART_UNAVAILABLE",
    "DimensionValues",
    "Generation",
    "SmartCall",
    "TierCall",
    "generate",
]


def generate(
    lens: Lens,
    request: GenerationRequest,
    values: DimensionValues,
    *,
    smart: TierCall | None = None,
    hint: str | None = None,
    command: TierCall | None = None,
) -> Generation:
    """Run the request's tiers in order; the first that produces SQL wins.

    Args:
        lens: the lens version the request was assembled against.
        request: the assembled request; ``request.tiers`` gives the order.
        values: ``{(model, dimension): distinct warehouse values}`` for value filters.
        smart: the configured smart tier (:mod:`reconciler.generators.smart`), or ``None``:
            then ``smart`` is skipped when another tier is listed and declines
            when it is the only one.
        hint: an executable gate's repair hint for this retry; only the external
            tiers read it (the fast tier is deterministic, a hint cannot change it).
        command: the configured command tier (:mod:`reconciler.generators.command`),
            or ``None``, skipped or declining like ``smart``.

    Returns:
        The first generation with SQL; otherwise the last tier's decline
        (``tier="none"`` when the request names no tier).
    """
    last: Generation | None = None
    external = {"smart": (smart, SMART_UNAVAILABLE), "command": (command, COMMAND_UNAVAILABLE)}
    for tier in request.tiers:
        if tier == "fast":
            result = fast.compile_request(lens, request, values)
        elif tier in external:
            call, unavailable = external[tier]
            if call is not None:
                result = call(lens, request, hint)
            elif len(request.tiers) > 1:
                continue
            else:
                result = Generation(tier, None, unavailable)
        else:
            result = Generation(tier, None, f"unknown generator tier {tier!r}")
        if result.sql is not None:
            return result
        last = result
    return last or Generation("none", None, "no generator tier configured")
