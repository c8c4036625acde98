"""Fast-tier generations reused within one process (pure, in memory).

The fast tier is deterministic in (lens, request, values): a suite run again on the
same lens version in one process (a second gate, ``dst watch``, a benchmark) reuses its
generations instead of compiling each question again. Each entry keeps the lens and
values objects it was made from, and only those very objects match, because the
request alone does not capture everything the fast tier reads (the warehouse's
values and key facts). Requests that name another tier are never reused here: the
smart and command tiers have their own on-disk cache
(:mod:`reconciler.generators.cache`).
"""

from __future__ import annotations

import threading

from reconciler.assembly.request import GenerationRequest
from reconciler.generators import DimensionValues, Generation, TierCall, generate
from reconciler.lens import Lens

KEPT = 4096  # entries; the oldest goes first
_KEPT: dict[GenerationRequest, tuple[Lens, DimensionValues, Generation]] = {}
_LOCK = threading.Lock()


def generate_reusing(
    lens: Lens,
    request: GenerationRequest,
    values: DimensionValues,
    smart: TierCall | None,
    command: TierCall | None,
) -> Generation:
    """:func:`reconciler.generators.generate`, reusing a fast-tier-only request's result.

    Returns:
        The generation: the kept one when ``request`` lists only the fast tier and was
        generated before for this very ``lens`` and ``values`` object, else a new one
        (kept when the request is fast-tier only).
    """
    if tuple(request.tiers) != ("fast",):
        return generate(lens, request, values, smart=smart, command=command)
    with _LOCK:
        hit = _KEPT.get(request)
    if hit is not None and hit[0] is lens and hit[1] is values:
        return hit[2]
    generation = generate(lens, request, values)
    with _LOCK:
        if len(_KEPT) >= KEPT:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[request] = (lens, values, generation)
    return generation
