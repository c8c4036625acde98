"""Scoring an answer that shows what the oracle ranks by (one bounded query).

:mod:`reconciler.compare.shown` widens an oracle that orders by a value it does not
show; this module runs the widened oracle and compares, for the suite and for the
accuracy benchmarks alike.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.compare.diff import Verdict, compare
from reconciler.compare.ordering import order_keys
from reconciler.compare.shown import with_ranking_values
from reconciler.errors import DstError
from reconciler.probes.cuts import kept_a_tie
from reconciler.resultset import ResultSet


def shows_ranking(
    oracle_sql: str,
    dialect: str,
    oracle: ResultSet,
    generated: ResultSet,
    run: Callable[[str], ResultSet],
) -> bool:
    """``generated`` is the oracle's result plus the values the oracle ranks by.

    Args:
        oracle_sql: the oracle, in ``dialect``.
        dialect: a sqlglot dialect name.
        oracle: the oracle's result, already found to differ from ``generated``.
        generated: the generated result.
        run: executes one statement as the oracle ran (capped, read-only); called
            only when ``generated`` has exactly as many more columns as the widened
            oracle adds, once for the widened oracle and at most once more for its
            tie probe.

    Returns:
        ``True`` when the generated result matches the widened oracle
        (:func:`~reconciler.compare.shown.with_ranking_values`), or differs from it
        only in which rows tied at its LIMIT it kept
        (:func:`~reconciler.probes.cuts.kept_a_tie`); ``False`` otherwise, and when
        the widened oracle fails or hits the row cap.
    """
    widened = with_ranking_values(oracle_sql, dialect)
    if widened is None or len(oracle.columns) + widened[1] != len(generated.columns):
        return False
    sql = widened[0]
    try:
        wide = run(sql)
    except DstError:
        return False
    if wide.truncated:
        return False
    if compare(wide, generated, order=order_keys(sql, dialect)).verdict is Verdict.MATCH:
        return True
    return kept_a_tie(sql, dialect, wide, generated, run) is not None
