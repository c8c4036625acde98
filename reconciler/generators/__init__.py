"""Generator tiers: ``fast`` (deterministic semantic compiler) and ``smart`` (LLM).

:func:`generate` tries the request's tiers in order and returns the first
generation that produced SQL. The ``fast`` tier lives in
:mod:`reconciler.generators.fast`; the ``smart`` tier (:mod:`reconciler.generators.smart`) is
reached through a :data:`SmartCall` that the caller passes in (the pure core never
opens a network connection); without one, ``smart`` is skipped when another tier is
configured and declines when it is the only one.
"""

from __future__ import annotations

from reconciler.assembly.request import GenerationRequest
from reconciler.generators import fast
from reconciler.generators.generation import (
    SMART_UNAVAILABLE,
    DimensionValues,
    Generation,
    SmartCall,
)
from reconciler.lens import Lens

__all__ = [
    "SMART_UNAVAILABLE",
    "DimensionValues",
    "Generation",
    "SmartCall",
    "generate",
]


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
