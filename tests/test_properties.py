"""Properties: the lens loader fails only with a located load error; the comparator is fair.

The loader half feeds random bytes, and random lens trees that are structured but
wrong, to :func:`reconciler.lens.load_lens`: every outcome is a loaded lens or a
``LensLoadError`` (exit 2, naming a file under the lens), never another exception.
The comparator half checks that :func:`reconciler.compare.diff.compare` gives the same
verdict whichever side is the oracle (missing and extra rows trade places), and
that it ignores row order and, for named columns, column order.
"""

from __future__ import annotations

import time
from datetime import date
from decimal import Decimal
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from reconciler.compare.diff import Comparison, compare
from reconciler.errors import LensLoadError
from reconciler.lens import load_lens
from reconciler.loader import load_yaml
from reconciler.resultset import ResultSet
from tests.figures import record

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_TRIED = {"bytes": 0, "trees": 0, "compare": 0}

# --- the loader ---------------------------------------------------------------------

VALID = {
    "lens.yaml": b'name: shop\nas_of: "2024-12-31"\neval_gate: warn\n',
    "models/orders.yaml": b"name: orders\ntable: orders\ndimensions:\n  - name: region\n"
    b"time_dimensions:\n  - name: order_date\n    data_type: date\nfacts:\n  - name: amount\n",
    "metrics/revenue.yaml": b"name: revenue\nmodel: orders\nexpression: SUM(amount)\n",
    "answers/total.yaml": b"id: total\nquestion: What is the revenue?\n"
    b"sql: SELECT SUM(amount) FROM orders\nprovenance:\n  certified_by: Ana\n"
    b'  certified_at: "2025-01-01"\n',
    "exemplars/by_region.yaml": b"name: by_region\nquestion: Revenue by region?\n"
    b"sql: SELECT region, SUM(amount) FROM orders GROUP BY region\n",
    "skills/notes.md": b"# Notes\nRevenue is net of refunds.\n",
    "evals/cases.yaml": b"cases:\n  - question: Revenue?\n    expect: answer\n",
}
KEYS = [
    "name", "table", "id", "question", "sql", "model", "expression", "dimensions",
    "facts", "joins", "to", "on", "provenance", "certified_by", "status", "eval_gate",
    "row_cap", "as_of", "dialect", "warehouse", "generator", "tiers", "cases", "expect",
]  # fmt: skip
PATHS = [*VALID, "models/b.yaml", "answers/b.yml", "skills/x.md", "seeds/t.csv", "other.txt"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(["NO", "1.10", "012", "12:30", "off", "SELECT 1", "DELETE FROM t", "~"]),
    st.dates().map(str),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5),
    ),
    max_leaves=20,
)


def _dump(data: Any) -> bytes:
    return yaml.safe_dump(data, allow_unicode=True).encode()


@st.composite
def wrong_files(draw: st.DrawFn) -> bytes:
    """One file's bytes: random YAML data, a valid file mangled, or raw bytes."""
    kind = draw(st.sampled_from(["data", "mangled", "bytes", "valid"]))
    if kind == "data":
        return _dump(draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=6)))
    base = draw(st.sampled_from(sorted(VALID.values())))
    if kind == "valid":
        return base
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    at = draw(st.integers(0, len(base)))
    cut = draw(st.integers(0, 5))
    junk = draw(st.binary(max_size=6) | st.sampled_from([b"\t", b"&a", b"*a", b"\n  -", b": "]))
    return base[:at] + junk + base[at + cut :]


def _load(files: dict[str, bytes]) -> None:
    try:
        load_lens("shop", files)
    except LensLoadError as exc:
        assert exc.path.startswith("lenses/shop/"), exc.path
        assert exc.line is None or exc.line >= 1
        assert exc.fix


@SETTINGS
@given(content=st.binary(max_size=400), path=st.sampled_from(PATHS))
def test_random_bytes_load_or_fail_with_a_load_error(content: bytes, path: str) -> None:
    _TRIED["bytes"] += 1
    try:
        load_yaml("f.yaml", content)
    except LensLoadError as exc:
        assert exc.path == "f.yaml" and exc.fix
    _load({**VALID, path: content})


@SETTINGS
@given(
    tree=st.dictionaries(st.sampled_from(PATHS), wrong_files(), min_size=1, max_size=6),
    keep=st.sets(st.sampled_from(sorted(VALID))),
)
def test_structured_but_wrong_lens_trees_fail_with_a_load_error(
    tree: dict[str, bytes], keep: set[str]
) -> None:
    _TRIED["trees"] += 1
    _load({**{k: VALID[k] for k in keep}, **tree})


def test_the_valid_lens_loads() -> None:
    # Without this the two properties above could pass by failing every example.
    lens = load_lens("shop", VALID)
    assert set(lens.models) == {"orders"} and set(lens.answers) == {"total"}


# --- the comparator -----------------------------------------------------------------

# Exact values only: tolerance is not transitive, and the comparator documents
# that a chain of near-equal floats may pair differently from each side.
cells = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.5, -2.0, 1e300]),
    st.sampled_from([Decimal("1.50"), Decimal("2")]),
    st.sampled_from(["a", "b", "1"]),
    st.sampled_from([date(2024, 1, 1), date(2024, 1, 2)]),
    st.booleans(),
)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[ResultSet, ResultSet]:
    """An oracle and a generated result over the same named columns, often close."""
    width = draw(st.integers(1, 3))
    names = tuple(draw(st.permutations(["region", "total", "day"]))[:width])
    row = st.tuples(*[cells] * width)
    left = draw(st.lists(row, max_size=6))
    if draw(st.booleans()):
        right = draw(st.lists(row, max_size=6))
    else:  # a reshuffle of the oracle with rows dropped or duplicated
        right = [r for r in left if draw(st.booleans())] + draw(
            st.lists(st.sampled_from(left or [tuple([1] * width)]), max_size=2)
        )
        right = draw(st.permutations(right))
    return ResultSet(names, tuple(left)), ResultSet(names, tuple(right))


def _key(c: Comparison) -> tuple[Any, ...]:
    return c.verdict, c.kinds, c.missing_count, c.extra_count


def _mirror(c: Comparison) -> tuple[Any, ...]:
    swap = {"missing_rows": "extra_rows", "extra_rows": "missing_rows"}
    kinds = tuple(sorted(swap.get(k.value, k.value) for k in c.kinds))
    return c.verdict, kinds, c.extra_count, c.missing_count


def _permute_columns(result: ResultSet, order: list[int]) -> ResultSet:
    return ResultSet(
        tuple(result.columns[i] for i in order),
        tuple(tuple(row[i] for i in order) for row in result.rows),
    )


@SETTINGS
@given(pair=pairs())
def test_comparison_is_symmetric(pair: tuple[ResultSet, ResultSet]) -> None:
    _TRIED["compare"] += 1
    left, right = pair
    there, back = compare(left, right), compare(right, left)
    assert (there.verdict, tuple(sorted(k.value for k in there.kinds))) == _mirror(back)[:2]
    assert (there.missing_count, there.extra_count) == (back.extra_count, back.missing_count)


@SETTINGS
@given(pair=pairs(), data=st.data())
def test_comparison_ignores_row_order(
    pair: tuple[ResultSet, ResultSet], data: st.DataObject
) -> None:
    _TRIED["compare"] += 1
    left, right = pair
    expected = _key(compare(left, right))
    shuffled_left = ResultSet(left.columns, tuple(data.draw(st.permutations(left.rows))))
    shuffled_right = ResultSet(right.columns, tuple(data.draw(st.permutations(right.rows))))
    assert _key(compare(shuffled_left, right)) == expected
    assert _key(compare(left, shuffled_right)) == expected
    assert _key(compare(shuffled_left, shuffled_right)) == expected


@SETTINGS
@given(pair=pairs(), data=st.data())
def test_comparison_ignores_the_order_of_named_columns(
    pair: tuple[ResultSet, ResultSet], data: st.DataObject
) -> None:
    _TRIED["compare"] += 1
    left, right = pair
    expected = _key(compare(left, right))
    width = len(left.columns)
    order = data.draw(st.permutations(list(range(width))))
    other = data.draw(st.permutations(list(range(width))))
    assert _key(compare(left, _permute_columns(right, order))) == expected
    both = compare(_permute_columns(left, other), _permute_columns(right, order))
    assert _key(both) == expected


def test_zz_record_figures() -> None:
    # Runs last in this module (pytest keeps file order): the counts of what was tried.
    started = time.perf_counter()
    record(
        f"properties: {_TRIED['bytes']} random byte files, {_TRIED['trees']} wrong lens trees "
        f"loaded (load error or success only); {_TRIED['compare']} comparator pairs checked "
        f"for symmetry and row/column-order invariance"
    )
    assert time.perf_counter() - started < 1
