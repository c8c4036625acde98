"""Canonical cells and matching within tolerance, for ``compare`` (pure).

Rows are reduced to hashable canonical keys so an exact multiset diff can run on
counters; cells that may differ only within tolerance (floats, Decimals, NaN)
are re-paired afterwards by a maximum bipartite matching inside groups of rows
that agree on every exact cell.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

ABS_TOL = 1e-12
"""Absolute floor under the relative tolerance.

A purely relative test fails near zero: a sum of +x and -x can come back as
``0.0`` on one side and ``5e-17`` on the other. Below 1e-12 in absolute terms two
numbers are treated as equal. Ledger-style amounts never live that close to zero.
"""

# --- canonical cells --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tagged:
    """A canonical cell that must not compare equal to any plain value."""

    kind: str
    value: Any


_NAN = _Tagged("nan", None)
_NUMERIC_TYPES = (int, float, Decimal, Fraction)
_NONE = type(None)
# A column whose cells all have types from one of these groups is its own
# canonical form: Python already compares and hashes int, float and Decimal by
# value, and a group never mixes booleans with numbers or dates with datetimes.
# Skipping the per-cell pass for such columns is what keeps the equal case fast.
# NaN is the one value that is not equal to itself there; it falls through to
# the tolerance pass, which pairs NaN with NaN.
_PLAIN_COLUMN_TYPES = (
    frozenset({str, _NONE, int, float, Decimal}),
    frozenset({str, _NONE, bool}),
    frozenset({str, _NONE, date}),
    frozenset({str, _NONE, datetime}),
)
_INEXACT_TYPES = frozenset({float, Decimal})


def canon(value: Any) -> Any:
    """A hashable stand-in for a cell: equal exactly when the cells are equal."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is float:
        return _NAN if value != value else value
    if kind is bool:
        return _Tagged("bool", value)
    if kind is Decimal:
        if value.is_finite():
            return value  # Decimal, int, float and Fraction hash consistently by value
        return _NAN if value.is_nan() else float(value)
    if kind is datetime:
        if value.tzinfo is None and value.time() == datetime.min.time():
            return value.date()
        return value
    if kind is date or kind is Fraction:
        return value
    return _canon_other(value)


def _canon_other(value: Any) -> Any:
    # Subclasses (IntEnum, numpy scalars, pandas Timestamp …) and containers.
    if isinstance(value, bool):
        return _Tagged("bool", bool(value))
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return canon(float(value))
    if isinstance(value, Decimal):
        return canon(Decimal(value))
    if isinstance(value, Fraction):
        return Fraction(value)
    if isinstance(value, datetime):
        return canon(datetime.combine(value.date(), value.timetz()))
    if isinstance(value, date):
        return date(value.year, value.month, value.day)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return _Tagged("seq", tuple(canon(item) for item in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: repr(item[0]))
        return _Tagged("map", tuple((repr(k), canon(v)) for k, v in items))
    try:
        hash(value)
    except TypeError:
        return _Tagged("repr", repr(value))
    return value


def canonical_columns(
    rows_o: Sequence[tuple[Any, ...]], rows_g: Sequence[tuple[Any, ...]], width: int
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], frozenset[int]]:
    """Both sides column-wise with canonical cells, and the columns to re-pair by value.

    The second are the columns holding floats or Decimals: their cells can be
    within tolerance, or NaN, without being ``==``.
    """
    raw_o = list(zip(*rows_o, strict=True)) if rows_o else [() for _ in range(width)]
    raw_g = list(zip(*rows_g, strict=True)) if rows_g else [() for _ in range(width)]
    cols_o: list[tuple[Any, ...]] = []
    cols_g: list[tuple[Any, ...]] = []
    approx: set[int] = set()
    for index, (col_o, col_g) in enumerate(zip(raw_o, raw_g, strict=True)):
        types = set(map(type, col_o)) | set(map(type, col_g))
        if any(types <= plain for plain in _PLAIN_COLUMN_TYPES):
            if types & _INEXACT_TYPES:
                approx.add(index)
            cols_o.append(col_o)
            cols_g.append(col_g)
            continue
        canon_o = tuple(map(canon, col_o))
        canon_g = tuple(map(canon, col_g))
        if (set(map(type, canon_o)) | set(map(type, canon_g))) & _INEXACT_TYPES:
            approx.add(index)
        cols_o.append(canon_o)
        cols_g.append(canon_g)
    return cols_o, cols_g, frozenset(approx)


def row_keys(columns: list[tuple[Any, ...]], rows: int) -> list[tuple[Any, ...]]:
    if not columns:
        return [() for _ in range(rows)]
    return list(zip(*columns, strict=True))


def occurrences(keys: Sequence[tuple[Any, ...]], wanted: Counter[tuple[Any, ...]]) -> list[int]:
    """Indices of rows whose key is in ``wanted``, as many of each as it counts."""
    left = dict(wanted)
    found: list[int] = []
    for index, key in enumerate(keys):
        if left.get(key, 0) > 0:
            left[key] -= 1
            found.append(index)
    return found


# --- tolerance --------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    # Canonical cells carry exact types; booleans were tagged, so they never get here.
    return type(value) in _NUMERIC_TYPES


def cells_match(a: Any, b: Any, rel_tol: float, *, tolerant: bool) -> bool:
    """Canonical cells equal, or numbers within tolerance where tolerance applies."""
    if a == b:
        return True
    if not (_is_number(a) and _is_number(b)):
        return False
    if a != a or b != b:  # NaN (float or Decimal) equals only NaN
        return bool(a != a and b != b)
    if not (tolerant or type(a) is float or type(b) is float):
        return False
    if type(a) is float or type(b) is float:
        try:
            return math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=ABS_TOL)
        except OverflowError:  # an int beyond float range is close to no float
            return False
    # Exact types under the 1×1 rule: decide in rationals, so huge values stay exact.
    fa, fb = Fraction(a), Fraction(b)
    bound = max(Fraction(rel_tol) * max(abs(fa), abs(fb)), Fraction(ABS_TOL))
    return abs(fa - fb) <= bound


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _sort_value(value: Any) -> float:
    # NaN sorts last so the list stays ordered for bisect; its own window is unbounded.
    number = _as_float(value)
    return math.inf if number != number else number


_NUMBER_SLOT = _Tagged("number", None)


def pair_within_tolerance(
    keys_o: Sequence[tuple[Any, ...]],
    missing: list[int],
    keys_g: Sequence[tuple[Any, ...]],
    extra: list[int],
    approx: frozenset[int],
    rel_tol: float,
) -> tuple[list[int], list[int]]:
    """Pair leftover rows that match within tolerance; return those still unpaired."""

    def shape(key: tuple[Any, ...]) -> tuple[Any, ...]:
        # Numbers in float columns are blanked out; everything else must be equal.
        return tuple(
            _NUMBER_SLOT if i in approx and _is_number(cell) else cell for i, cell in enumerate(key)
        )

    groups: dict[tuple[Any, ...], tuple[list[int], list[int]]] = {}
    for index in missing:
        groups.setdefault(shape(keys_o[index]), ([], []))[0].append(index)
    for index in extra:
        groups.setdefault(shape(keys_g[index]), ([], []))[1].append(index)
    paired_o: set[int] = set()
    paired_g: set[int] = set()
    columns = sorted(approx)
    for group_o, group_g in groups.values():
        if group_o and group_g:
            for i, j in _match_group(keys_o, group_o, keys_g, group_g, columns, rel_tol):
                paired_o.add(i)
                paired_g.add(j)
    return (
        [i for i in missing if i not in paired_o],
        [j for j in extra if j not in paired_g],
    )


def _match_group(
    keys_o: Sequence[tuple[Any, ...]],
    group_o: list[int],
    keys_g: Sequence[tuple[Any, ...]],
    group_g: list[int],
    columns: list[int],
    rel_tol: float,
) -> list[tuple[int, int]]:
    """A maximum pairing of rows that agree, cell by cell, within tolerance."""
    if len(group_o) == 1 == len(group_g):
        # The usual shape when every float wiggled: other columns already pin the partner.
        i, j = group_o[0], group_g[0]
        agree = all(
            cells_match(keys_o[i][c], keys_g[j][c], rel_tol, tolerant=False) for c in columns
        )
        return [(i, j)] if agree else []
    pivot = _pick_pivot(keys_o, group_o, columns)
    if pivot is None or rel_tol >= 0.5:
        # No numeric column to window on (or a tolerance too wide for the bound
        # below): every row of the group is a candidate.
        windows = [(0, len(group_g))] * len(group_o)
        ordered_g = list(group_g)
    else:
        ordered_g = sorted(group_g, key=lambda j: _sort_value(keys_g[j][pivot]))
        values = [_sort_value(keys_g[j][pivot]) for j in ordered_g]
        windows = []
        for i in group_o:
            v = _as_float(keys_o[i][pivot])
            if not math.isfinite(v):
                windows.append((0, len(ordered_g)))
                continue
            # |v - w| <= rel*max(|v|, |w|) with rel < 0.5 implies |v - w| <= 2*rel*|v|;
            # the ulp slack covers rounding when Decimals or big ints become floats.
            half = 2 * rel_tol * abs(v) + ABS_TOL + 4 * math.ulp(v)
            windows.append((bisect_left(values, v - half), bisect_right(values, v + half)))
    adjacency: list[list[int]] = []
    for i, (lo, hi) in zip(group_o, windows, strict=True):
        row_o = keys_o[i]
        adjacency.append(
            [
                position
                for position in range(lo, hi)
                if all(
                    cells_match(row_o[c], keys_g[ordered_g[position]][c], rel_tol, tolerant=False)
                    for c in columns
                )
            ]
        )
    matched = _maximum_matching(adjacency, len(ordered_g))
    return [(group_o[left], ordered_g[right]) for left, right in enumerate(matched) if right >= 0]


def _pick_pivot(
    keys: Sequence[tuple[Any, ...]], group: list[int], columns: list[int]
) -> int | None:
    # The float column with the most distinct values keeps candidate windows narrow.
    best: int | None = None
    best_distinct = 0
    for c in columns:
        cells = [keys[i][c] for i in group]
        if not all(_is_number(cell) for cell in cells):
            continue
        distinct = len(set(cells))
        if distinct > best_distinct:
            best, best_distinct = c, distinct
    return best


def _maximum_matching(adjacency: list[list[int]], right_size: int) -> list[int]:
    """Maximum bipartite matching: for each left node, its right partner or -1.

    A greedy pass first (it settles nearly every row), then one breadth-first
    augmenting-path search per left node it left unpaired (Berge's theorem:
    no augmenting path means the matching is maximum).
    """
    match_left = [-1] * len(adjacency)
    match_right = [-1] * right_size
    for left, candidates in enumerate(adjacency):
        for right in candidates:
            if match_right[right] < 0:
                match_left[left], match_right[right] = right, left
                break
    for start, candidates in enumerate(adjacency):
        if match_left[start] >= 0 or not candidates:
            continue
        reached_from: dict[int, int] = {}
        queue = [start]
        free = -1
        for left in queue:  # the queue grows while it is walked
            for right in adjacency[left]:
                if right in reached_from:
                    continue
                reached_from[right] = left
                if match_right[right] < 0:
                    free = right
                    break
                queue.append(match_right[right])
            if free >= 0:
                break
        right = free
        while right >= 0:  # flip the path: each left takes the right it reached
            left = reached_from[right]
            previous = match_left[left]
            match_left[left], match_right[right] = right, left
            right = previous
    return match_left
