"""Compare an oracle result with a generated one (pure; no drivers, no I/O).

The rules are DESIGN §4 step 3, applied in this order:

1. A side that hit the row cap (``truncated``) makes the comparison
   *inconclusive*: a capped result is never a pass.
2. Columns are aligned by name when both sides carry the same set of names
   (case-insensitive, no duplicates), generated columns permuted into the
   oracle's order; otherwise by position. Different column counts are a
   ``column_mismatch``.
3. A 1×1 result on both sides compares its one cell, numerics with a relative
   tolerance (default 1e-9) whatever their type; a difference is a
   ``single_cell_difference``.
4. Otherwise rows are diffed as multisets, ``EXCEPT ALL`` both ways: duplicated
   rows count, so the extra copies a fan-out join produces are visible (a set
   diff would hide them). Every cell pair where one side is a ``float`` matches
   within the tolerance, because aggregation order wiggles a DOUBLE's last bits.
5. Only when the multiset matches and the oracle's top-level query has ORDER
   BY (see `order_keys`) is row order checked, and then only the sequence of
   sort-key values: rows tied on the keys may come in any order.

Cell equality (`compare` documents the full list): NULL equals NULL and
nothing else; numbers compare by value across int/float/Decimal/Fraction;
booleans are not numbers; a date equals a naive datetime at exactly midnight;
strings are never coerced to numbers or dates.

Matching under tolerance cannot use hashing, so it runs in two passes. Rows are
first reduced to hashable canonical keys and diffed with counters; that exact
pass is the only work done when the results agree, which keeps equal 1000×20
results in the low milliseconds. Rows left over on both sides are then grouped
by their non-float cells and paired within each group by a maximum bipartite
matching whose candidates come from a sorted window on one float column.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from typing import Any

from reconciler.ordering import OrderKey
from reconciler.resultset import ResultSet

DEFAULT_REL_TOL = 1e-9
"""Relative tolerance for float cells and for a 1×1 result (DESIGN §4 step 3)."""

ABS_TOL = 1e-12
"""Absolute floor under the relative tolerance.

A purely relative test fails near zero: a sum of +x and -x can come back as
``0.0`` on one side and ``5e-17`` on the other. Below 1e-12 in absolute terms two
numbers are treated as equal. Ledger-style amounts never live that close to zero.
"""

MAX_REPORTED_ROWS = 20
"""At most this many missing and extra rows are kept on a `Comparison`."""


class Verdict(str, Enum):
    """The outcome of one comparison; only ``MATCH`` is a pass."""

    MATCH = "match"
    DIVERGED = "diverged"
    INCONCLUSIVE = "inconclusive"


class DivergenceKind(str, Enum):
    """Why a comparison diverged (DESIGN §4 step 3 names these kinds)."""

    MISSING_ROWS = "missing_rows"
    EXTRA_ROWS = "extra_rows"
    COLUMN_MISMATCH = "column_mismatch"
    SINGLE_CELL = "single_cell_difference"
    ORDER = "order_difference"


@dataclass(frozen=True)
class Comparison:
    """The verdict on one oracle/generated pair, with the rows that differ.

    Attributes:
        verdict: match, diverged or inconclusive.
        kinds: the divergence kinds, in `DivergenceKind` order; empty unless
            diverged.
        detail: one human line, e.g. ``2 missing rows, 1 extra row``.
        missing: oracle rows with no partner in the generated result
            (multiset), in oracle order, at most `MAX_REPORTED_ROWS`.
        extra: generated rows with no partner in the oracle (multiset), their
            cells permuted into the oracle's column order, at most
            `MAX_REPORTED_ROWS`.
        missing_count: how many oracle rows are missing in all.
        extra_count: how many generated rows are extra in all.
    """

    verdict: Verdict
    kinds: tuple[DivergenceKind, ...]
    detail: str
    missing: tuple[tuple[Any, ...], ...] = ()
    extra: tuple[tuple[Any, ...], ...] = ()
    missing_count: int = 0
    extra_count: int = 0

    def record(self) -> dict[str, Any]:
        """A JSON-ready dict of every field.

        Cells that are not ``int``, ``float``, ``str``, ``bool`` or ``None``
        become ``str(value)``; non-finite floats become ``"NaN"``,
        ``"Infinity"`` or ``"-Infinity"`` so the record is strict JSON.
        """
        return {
            "verdict": self.verdict.value,
            "kinds": [kind.value for kind in self.kinds],
            "detail": self.detail,
            "missing": [[_json_cell(v) for v in row] for row in self.missing],
            "extra": [[_json_cell(v) for v in row] for row in self.extra],
            "missing_count": self.missing_count,
            "extra_count": self.extra_count,
        }


def compare(
    oracle: ResultSet,
    generated: ResultSet,
    *,
    order: tuple[OrderKey, ...] | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
) -> Comparison:
    """Compare a generated result with the oracle's (DESIGN §4 step 3).

    Rows are diffed as multisets with ``EXCEPT ALL`` semantics both ways, so
    the duplicated rows a fan-out join produces are visible: oracle
    ``[a, a, b]`` against generated ``[a, b]`` is one missing row, and oracle
    ``[a]`` against ``[a, a]`` one extra row.

    Cell equality:

    * ``None`` (NULL) equals ``None`` and nothing else; ``None`` is not ``0``.
    * int, float, Decimal and Fraction compare by value
      (``Decimal("1.50") == 1.5``). A pair where either cell is a float
      matches within ``rel_tol`` relative (`ABS_TOL` absolute near zero); so
      does any numeric pair when both results are 1×1. NaN equals NaN.
    * ``bool`` is not a number: ``True`` never equals ``1``.
    * A ``date`` equals a naive ``datetime`` at exactly 00:00:00; aware
      datetimes compare as instants and never equal a date.
    * Strings are not coerced: ``"2024-01-31"`` is not a date, ``"1"`` not 1.
    * Lists, tuples and dicts compare element-wise with the same rules
      (exactly, no tolerance); other values by ``==``.

    Tolerance is not transitive, so exactly equal rows are paired first and a
    maximum matching pairs the rest; only a chain of rows each within
    tolerance of the next, but not of each other, could make this report a
    difference that another pairing would avoid.

    Args:
        oracle: the certified answer's executed result.
        generated: the generated SQL's executed result.
        order: the oracle's sort keys from `order_keys`; ``None`` or ``()``
            means row order does not count. Keys resolve against the oracle's
            columns; resolution stops at the first key that names no column
            (or an ambiguous one), keeping the prefix.
        rel_tol: relative tolerance for float cells and 1×1 results.

    Returns:
        The verdict, its kinds, a one-line detail, and up to
        `MAX_REPORTED_ROWS` missing and extra rows.

    Raises:
        ValueError: ``rel_tol`` is negative or not finite, or a row's width
            differs from its result's column count.
    """
    if not (math.isfinite(rel_tol) and rel_tol >= 0):
        raise ValueError(f"rel_tol must be a finite number >= 0, got {rel_tol!r}")
    if oracle.truncated or generated.truncated:
        return _inconclusive(oracle.truncated, generated.truncated)
    width = len(oracle.columns)
    if width != len(generated.columns):
        return Comparison(
            Verdict.DIVERGED,
            (DivergenceKind.COLUMN_MISMATCH,),
            f"column count differs: oracle has {width} ({_names(oracle.columns)}), "
            f"generated has {len(generated.columns)} ({_names(generated.columns)})",
        )
    _check_widths("oracle", oracle.rows, width)
    _check_widths("generated", generated.rows, width)
    permutation = _align_by_name(oracle.columns, generated.columns)
    aligned_note = "" if permutation is not None else "; columns compared by position"
    gen_rows = generated.rows
    if permutation is not None and permutation != tuple(range(width)):
        gen_rows = tuple(tuple(row[i] for i in permutation) for row in gen_rows)

    if width == 1 and len(oracle.rows) == 1 and len(gen_rows) == 1:
        return _compare_scalar(oracle.rows[0][0], gen_rows[0][0], rel_tol, aligned_note)

    cols_o, cols_g, approx = _canonical_columns(oracle.rows, gen_rows, width)
    keys_o = _row_keys(cols_o, len(oracle.rows))
    keys_g = _row_keys(cols_g, len(gen_rows))
    # Equal in the same order is the common case and needs no counting.
    if keys_o != keys_g:
        counts_o, counts_g = Counter(keys_o), Counter(keys_g)
        missing = _occurrences(keys_o, counts_o - counts_g)
        extra = _occurrences(keys_g, counts_g - counts_o)
        if approx and missing and extra:
            missing, extra = _pair_within_tolerance(keys_o, missing, keys_g, extra, approx, rel_tol)
        if missing or extra:
            return _diverged_rows(oracle.rows, missing, gen_rows, extra, aligned_note)

    rows = len(oracle.rows)
    summary = f"{rows} row{'' if rows == 1 else 's'} match"
    positions = _resolve_order(order or (), oracle.columns)
    if not positions:
        return Comparison(Verdict.MATCH, (), summary + aligned_note)
    labels = ", ".join(key.label() for key, _ in positions)
    indices = [index for _, index in positions]
    first_diff = _first_order_difference(cols_o, cols_g, indices, rel_tol)
    if first_diff is None:
        return Comparison(
            Verdict.MATCH, (), f"{summary} in sort-key order ({labels}){aligned_note}"
        )
    at = first_diff
    shown_o = ", ".join(_show(oracle.rows[at][i]) for i in indices)
    shown_g = ", ".join(_show(gen_rows[at][i]) for i in indices)
    return Comparison(
        Verdict.DIVERGED,
        (DivergenceKind.ORDER,),
        f"rows match but the order of ({labels}) differs at row {at + 1}: "
        f"oracle ({shown_o}) vs generated ({shown_g}){aligned_note}",
    )


# --- verdict builders -------------------------------------------------------------


def _inconclusive(oracle_capped: bool, generated_capped: bool) -> Comparison:
    if oracle_capped and generated_capped:
        who = "both oracle and generated results"
    elif oracle_capped:
        who = "the oracle result"
    else:
        who = "the generated result"
    return Comparison(
        Verdict.INCONCLUSIVE,
        (),
        f"{who} hit the row cap (truncated), so the rows cannot be compared",
    )


def _compare_scalar(a: Any, b: Any, rel_tol: float, note: str) -> Comparison:
    if _cells_match(_canon(a), _canon(b), rel_tol, tolerant=True):
        return Comparison(Verdict.MATCH, (), "1 row matches (1×1)" + note)
    return Comparison(
        Verdict.DIVERGED,
        (DivergenceKind.SINGLE_CELL,),
        f"oracle {_show(a)} vs generated {_show(b)}",
        missing=((a,),),
        extra=((b,),),
        missing_count=1,
        extra_count=1,
    )


def _diverged_rows(
    rows_o: Sequence[tuple[Any, ...]],
    missing: list[int],
    rows_g: Sequence[tuple[Any, ...]],
    extra: list[int],
    note: str,
) -> Comparison:
    kinds: list[DivergenceKind] = []
    parts: list[str] = []
    if missing:
        kinds.append(DivergenceKind.MISSING_ROWS)
        parts.append(f"{len(missing)} missing row{'' if len(missing) == 1 else 's'}")
    if extra:
        kinds.append(DivergenceKind.EXTRA_ROWS)
        parts.append(f"{len(extra)} extra row{'' if len(extra) == 1 else 's'}")
    return Comparison(
        Verdict.DIVERGED,
        tuple(kinds),
        ", ".join(parts) + note,
        missing=tuple(rows_o[i] for i in sorted(missing)[:MAX_REPORTED_ROWS]),
        extra=tuple(rows_g[i] for i in sorted(extra)[:MAX_REPORTED_ROWS]),
        missing_count=len(missing),
        extra_count=len(extra),
    )


# --- columns ----------------------------------------------------------------------


def _align_by_name(oracle: Sequence[str], generated: Sequence[str]) -> tuple[int, ...] | None:
    """For each oracle column, the generated column with its name; None → by position."""
    folded_o = [name.casefold() for name in oracle]
    folded_g = [name.casefold() for name in generated]
    if len(set(folded_o)) != len(folded_o) or set(folded_o) != set(folded_g):
        return None
    if len(set(folded_g)) != len(folded_g):
        return None
    where = {name: i for i, name in enumerate(folded_g)}
    return tuple(where[name] for name in folded_o)


def _check_widths(side: str, rows: Sequence[tuple[Any, ...]], width: int) -> None:
    if not rows or set(map(len, rows)) == {width}:
        return
    for number, row in enumerate(rows, start=1):
        if len(row) != width:
            raise ValueError(
                f"{side} row {number} has {len(row)} cells but the result has {width} columns"
            )


def _names(columns: Sequence[str]) -> str:
    return ", ".join(columns) if columns else "no columns"


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


def _canon(value: Any) -> Any:
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
        return _canon(float(value))
    if isinstance(value, Decimal):
        return _canon(Decimal(value))
    if isinstance(value, Fraction):
        return Fraction(value)
    if isinstance(value, datetime):
        return _canon(datetime.combine(value.date(), value.timetz()))
    if isinstance(value, date):
        return date(value.year, value.month, value.day)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return _Tagged("seq", tuple(_canon(item) for item in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: repr(item[0]))
        return _Tagged("map", tuple((repr(k), _canon(v)) for k, v in items))
    try:
        hash(value)
    except TypeError:
        return _Tagged("repr", repr(value))
    return value


def _canonical_columns(
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
        canon_o = tuple(map(_canon, col_o))
        canon_g = tuple(map(_canon, col_g))
        if (set(map(type, canon_o)) | set(map(type, canon_g))) & _INEXACT_TYPES:
            approx.add(index)
        cols_o.append(canon_o)
        cols_g.append(canon_g)
    return cols_o, cols_g, frozenset(approx)


def _row_keys(columns: list[tuple[Any, ...]], rows: int) -> list[tuple[Any, ...]]:
    if not columns:
        return [() for _ in range(rows)]
    return list(zip(*columns, strict=True))


def _occurrences(keys: Sequence[tuple[Any, ...]], wanted: Counter[tuple[Any, ...]]) -> list[int]:
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


def _cells_match(a: Any, b: Any, rel_tol: float, *, tolerant: bool) -> bool:
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


def _pair_within_tolerance(
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
            _cells_match(keys_o[i][c], keys_g[j][c], rel_tol, tolerant=False) for c in columns
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
                    _cells_match(row_o[c], keys_g[ordered_g[position]][c], rel_tol, tolerant=False)
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


# --- order ------------------------------------------------------------------------


def _resolve_order(order: Iterable[OrderKey], columns: Sequence[str]) -> list[tuple[OrderKey, int]]:
    """Sort keys as 0-based column indices; stops at the first that does not resolve."""
    folded = [name.casefold() for name in columns]
    resolved: list[tuple[OrderKey, int]] = []
    for key in order:
        if key.position is not None:
            if key.position > len(columns):
                break
            resolved.append((key, key.position - 1))
            continue
        assert key.column is not None  # guaranteed by OrderKey.__post_init__
        hits = [i for i, name in enumerate(folded) if name == key.column.casefold()]
        if len(hits) != 1:
            break
        resolved.append((key, hits[0]))
    return resolved


def _first_order_difference(
    cols_o: list[tuple[Any, ...]],
    cols_g: list[tuple[Any, ...]],
    indices: list[int],
    rel_tol: float,
) -> int | None:
    """The first row where the sort-key sequences disagree, or None."""
    suspect = [c for c in indices if cols_o[c] != cols_g[c]]
    if not suspect:
        return None
    for row, cells in enumerate(zip(*(cols_o[c] for c in suspect), strict=True)):
        others = [cols_g[c][row] for c in suspect]
        if not all(
            _cells_match(a, b, rel_tol, tolerant=False) for a, b in zip(cells, others, strict=True)
        ):
            return row
    return None


# --- rendering --------------------------------------------------------------------


def _show(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _json_cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    return str(value)
