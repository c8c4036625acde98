"""Values derived from one lens version, computed once per version (pure).

A :class:`~reconciler.lens.Lens` never changes once loaded, so whatever is
computed from it alone — the shortest join paths between its models, its phrase
lexicon, the models a metric's SQL names — is the same every time it is asked
for. A plan assembles every active answer's question against one lens version,
and the suite assembles each again; without a memo each assembly repeats the
lens-wide work (a breadth-first join search per model pair, a tokenization of
every phrase).

The memo is keyed by the lens *object*: its identity, checked with ``is``, and
each entry holds the lens itself, so while the entry lives no other object can
take that identity. Only the last :data:`KEPT` lens versions are kept. Values
stored here must be immutable (tuples, frozensets, frozen dataclasses) or
copied by the caller before it hands them out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from reconciler.lens import Lens

T = TypeVar("T")

KEPT = 16

_TABLES: OrderedDict[int, tuple[Lens, dict[Hashable, Any]]] = OrderedDict()
_LOCK = threading.Lock()


def table(lens: Lens) -> dict[Hashable, Any]:
    """The memo table of ``lens`` (created empty on first use).

    Safe to call from the suite's worker threads: two threads computing the same
    key both get a correct value, since every value is a pure function of the lens.
    """
    key = id(lens)
    with _LOCK:
        hit = _TABLES.get(key)
        if hit is not None and hit[0] is lens:
            _TABLES.move_to_end(key)
            return hit[1]
        memo: dict[Hashable, Any] = {}
        _TABLES[key] = (lens, memo)
        _TABLES.move_to_end(key)
        while len(_TABLES) > KEPT:
            _TABLES.popitem(last=False)
        return memo


def memoized(lens: Lens, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` the first time ``key`` is asked of ``lens``, the stored value after.

    Args:
        lens: the lens version the value is derived from (and only from).
        key: what is computed, with its arguments (``("time_models", "orders")``).
        compute: the pure computation; its result must be immutable.
    """
    memo = table(lens)
    try:
        value: T = memo[key]
    except KeyError:
        value = memo.setdefault(key, compute())
    return value
