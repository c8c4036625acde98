"""Ambiguous oracles: a top-level LIMIT that cuts through tied rows (pure, sqlglot).

DESIGN §4 step 3: an oracle is *ambiguous* when its top-level LIMIT/FETCH cuts
through rows tied on its ORDER BY keys, or limits without ORDER BY. Another
correct query may then keep other tied rows, so a generated result that differs
from the oracle only in *which* tied rows it kept is correct (with an
``ambiguous oracle`` note), never wrong.

Seeing the ties needs the rows the LIMIT dropped: :func:`limit_cut` reads the
limit from the AST and renders the oracle without it, the suite executes that
(capped at ``row_cap`` like any statement), and :func:`ambiguity` and
:func:`kept_other_ties` decide on the three results. Only a literal row count
counts; a LIMIT with an OFFSET, a ``FETCH … WITH TIES`` (it keeps every tie) and
an ORDER BY whose keys are not all output columns are left strict.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from reconciler.compare.cells import canon, cells_match
from reconciler.compare.diff import DivergenceKind, Verdict, align_by_name, compare, resolve_order
from reconciler.compare.ordering import OrderKey, order_keys
from reconciler.errors import UnsafeSqlError
from reconciler.guard import parse_query
from reconciler.resultset import ResultSet

AMBIGUOUS = "ambiguous oracle"
"""The note a comparison carries when the oracle's LIMIT cuts through ties."""


@dataclass(frozen=True)
class LimitCut:
    """The oracle's top-level LIMIT, and the oracle without it.

    Attributes:
        limit: the row count the LIMIT (or FETCH FIRST) keeps.
        keys: the ORDER BY keys as output columns; ``None`` without ORDER BY.
        unlimited_sql: the same query with the top-level LIMIT removed, in the
            oracle's dialect (its ORDER BY kept).
    """

    limit: int
    keys: tuple[OrderKey, ...] | None
    unlimited_sql: str

    def describe(self) -> str:
        """``LIMIT 3 on (total DESC)`` or ``LIMIT 3 without ORDER BY``, for messages."""
        if self.keys is None:
            return f"LIMIT {self.limit} without ORDER BY"
        return f"LIMIT {self.limit} on ({', '.join(k.label() for k in self.keys)})"


def top_level(sql: str, dialect: str) -> exp.Expr | None:
    """The query whose LIMIT cuts the result: ``sql``'s tree through parentheses that
    carry no LIMIT of their own (a fresh copy); ``None`` when it does not parse."""
    try:
        node = parse_query(sql, dialect)
    except UnsafeSqlError:
        return None
    while isinstance(node, exp.Subquery) and not node.args.get("limit"):
        node = node.this
    return node


@functools.lru_cache(maxsize=4096)  # a suite asks for every oracle on every run
def limit_cut(sql: str, dialect: str) -> LimitCut | None:
    """The top-level LIMIT of ``sql`` when ties could matter, else ``None`` (kept by text).

    ``None`` also when the query does not parse, the count is not an integer
    literal, there is an OFFSET, the FETCH keeps ties, or an ORDER BY key is not
    an output column (the ties could not be seen in the result).
    """
    node = top_level(sql, dialect)
    if node is None:
        return None
    limit = node.args.get("limit")
    if limit is None or node.args.get("offset") is not None:
        return None
    count = limit.args.get("count") if isinstance(limit, exp.Fetch) else limit.expression
    options = limit.args.get("limit_options")
    if options is not None and options.args.get("with_ties"):
        return None
    if not (isinstance(count, exp.Literal) and count.is_int):
        return None
    unlimited = node.copy()
    unlimited.set("limit", None)
    order = node.args.get("order")
    keys = order_keys(unlimited.sql(dialect=dialect), dialect) if order is not None else None
    if order is not None and (keys is None or len(keys) != len(order.expressions)):
        return None
    return LimitCut(int(count.this), keys, unlimited.sql(dialect=dialect))


def ambiguity(cut: LimitCut, oracle: ResultSet, unlimited: ResultSet) -> str | None:
    """The ``ambiguous oracle`` note when the LIMIT cut through ties, else ``None``.

    Args:
        cut: the oracle's :func:`limit_cut`.
        oracle: the oracle's result (with its LIMIT).
        unlimited: the result of ``cut.unlimited_sql``; when it hit the row cap the
            ties cannot be counted and the answer is ``None``.
    """
    if unlimited.truncated or len(unlimited.rows) <= len(oracle.rows) or not oracle.rows:
        return None
    if cut.keys is not None and len(resolve_order(cut.keys, oracle.columns)) != len(cut.keys):
        return None  # a key names no output column: its ties are not visible
    if cut.keys is None:
        return (
            f"{AMBIGUOUS}: {cut.describe()} keeps {len(oracle.rows)} of "
            f"{len(unlimited.rows)} rows, any of which another query may keep; "
            "add an ORDER BY with a tie-breaker"
        )
    tied = _tie_test(cut.keys, oracle)
    dropped = sum(map(tied, unlimited.rows)) - sum(map(tied, oracle.rows))
    if dropped <= 0:
        return None
    return (
        f"{AMBIGUOUS}: {cut.describe()} cuts through rows tied on the last kept row's sort keys "
        f"({dropped} tied row(s) dropped); add a tie-breaker to the ORDER BY"
    )


def kept_other_ties(
    cut: LimitCut, oracle: ResultSet, unlimited: ResultSet, generated: ResultSet
) -> bool:
    """Whether ``generated`` differs from ``oracle`` only in which tied rows it kept.

    Without ORDER BY: it has the oracle's row count and every row is a row of the
    unlimited result (multiset). With ORDER BY: the rows before the tie match the
    oracle's (in sort-key order), the tied rows sit where the oracle's do, and
    each is one of the unlimited result's rows tied on those keys.
    """
    if len(generated.rows) != len(oracle.rows) or ambiguity(cut, oracle, unlimited) is None:
        return False
    columns = oracle.columns
    if len(generated.columns) != len(columns):
        return False
    permutation = align_by_name(columns, generated.columns)
    rows = generated.rows
    if permutation is not None:
        rows = tuple(tuple(row[i] for i in permutation) for row in rows)
    if cut.keys is None:
        return _within(ResultSet(columns, unlimited.rows), ResultSet(columns, rows))
    tied = _tie_test(cut.keys, oracle)
    if [tied(r) for r in rows] != [tied(r) for r in oracle.rows]:
        return False
    before = compare(
        ResultSet(columns, tuple(r for r in oracle.rows if not tied(r))),
        ResultSet(columns, tuple(r for r in rows if not tied(r))),
        order=cut.keys,
    )
    pool = ResultSet(columns, tuple(r for r in unlimited.rows if tied(r)))
    return before.verdict is Verdict.MATCH and _within(
        pool, ResultSet(columns, tuple(r for r in rows if tied(r)))
    )


def _within(pool: ResultSet, part: ResultSet) -> bool:
    """``part`` is a sub-multiset of ``pool`` (nothing extra, rows may be missing)."""
    if not part.rows:
        return True
    result = compare(pool, part)
    return result.verdict is Verdict.MATCH or result.kinds == (DivergenceKind.MISSING_ROWS,)


def _tie_test(keys: Sequence[OrderKey], oracle: ResultSet) -> Callable[[Sequence[Any]], bool]:
    """A predicate: a row's sort-key cells equal those of the oracle's last row."""
    indices = [i for _, i in resolve_order(keys, oracle.columns)]
    last = [canon(oracle.rows[-1][i]) for i in indices]

    def tied(row: Sequence[Any]) -> bool:
        return all(
            cells_match(canon(row[i]), want, 1e-9, tolerant=True)
            for i, want in zip(indices, last, strict=True)
        )

    return tied
