"""The undated-rows gate: a period must not silently leave out the rows it counts (sqlglot).

DESIGN §1 runtime gates, for every tier. "How many cancelled bookings were there in
2024?" filtered on ``used_at``, a date every cancelled booking leaves NULL, is a
well-formed query that answers 0: the period cannot see the rows the question counts,
and nothing in the result says so. The same holds for any date a share of the rows
lacks: a period on it leaves those rows out, however it is spelled.

:func:`undated_probe` finds, in a top-level SELECT reading FROM a table, the range
conditions of its WHERE on one column against a date (``>=``, ``>``, ``<``, ``<=``,
``BETWEEN``, the other side a date or timestamp literal or cast, no column) and writes
one bounded query: the same FROM, joins and other conditions, counting the rows whose
column is NULL. :func:`judge_undated` blocks when the answer is empty or every number in
it is 0 or NULL while such rows exist (the period, not the data, made it empty), and
otherwise passes with a note giving how many rows the period could not date. Ranges on
two columns, or a WHERE that is not a conjunction at its top, leave the query unchecked.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal

from sqlglot import exp

from reconciler.errors import UnsafeSqlError
from reconciler.guard import shared_query
from reconciler.resultset import ResultSet
from reconciler.trust import Evaluation, Execution, RepairAction

GATE_UNDATED = "undated_rows"

_DATE_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}")
_RANGES = (exp.GTE, exp.GT, exp.LT, exp.LTE)


@dataclass(frozen=True)
class Undated:
    """The date column a query's period filters on, and the probe counting rows without it.

    Attributes:
        column: the column's SQL, for messages.
        probe_sql: one row, one column ``dst_undated``: the rows the query's other
            conditions keep whose ``column`` is NULL.
    """

    column: str
    probe_sql: str


def _is_date(node: exp.Expr) -> bool:
    """Whether ``node`` is a date: a date or timestamp literal or cast, no column in it."""
    if node.find(exp.Column) is not None:
        return False
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        return True
    if isinstance(node, exp.Literal) and node.is_string:
        return bool(_DATE_TEXT.match(node.this))
    return isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp, exp.DateAdd, exp.DateSub))


def _ranged(condition: exp.Expr) -> exp.Column | None:
    """The column ``condition`` bounds against a date, else ``None``."""
    if isinstance(condition, exp.Between):
        low, high = condition.args.get("low"), condition.args.get("high")
        if isinstance(condition.this, exp.Column) and low is not None and high is not None:
            return condition.this if _is_date(low) and _is_date(high) else None
        return None
    if not isinstance(condition, _RANGES):
        return None
    for column, other in (
        (condition.this, condition.expression),
        (condition.expression, condition.this),
    ):
        if isinstance(column, exp.Column) and _is_date(other):
            return column
    return None


def _conjuncts(where: exp.Expr) -> list[exp.Expr]:
    node = where.this if isinstance(where, exp.Where) else where
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [c for part in node.flatten() for c in _conjuncts(part)]
    return [node]


@functools.lru_cache(maxsize=1024)
def undated_probe(sql: str, dialect: str) -> Undated | None:
    """The undated-rows probe of ``sql``, or ``None`` when there is nothing to check.

    ``None`` when the query does not parse, is not a top-level SELECT reading FROM a
    table, or its WHERE bounds no column against a date, or bounds two (module
    docstring).
    """
    try:
        node = shared_query(sql, dialect)  # read only: the probe is built from copies
    except UnsafeSqlError:
        return None
    while isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Select):
        return None
    source, where = node.args.get("from_"), node.args.get("where")
    if source is None or not isinstance(source.this, exp.Table) or where is None:
        return None
    conditions = _conjuncts(where)
    ranged = [(c, column) for c in conditions if (column := _ranged(c)) is not None]
    if len({column.sql(dialect=dialect) for _, column in ranged}) != 1:
        return None
    column = ranged[0][1]
    kept = [c.copy() for c in conditions if all(c is not r for r, _ in ranged)]
    body = exp.select(exp.alias_(exp.Count(this=exp.Star()), "dst_undated"))
    body.set("from_", source.copy())
    body.set("joins", [j.copy() for j in node.args.get("joins") or []])
    body = body.where(exp.and_(*kept, exp.Is(this=column.copy(), expression=exp.Null())))
    return Undated(column.sql(dialect=dialect), body.sql(dialect=dialect))


def _nothing(served: ResultSet) -> bool:
    """Whether ``served`` holds no rows, or only zeros and NULLs."""
    return all(
        v is None or (isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) and v == 0)
        for row in served.rows
        for v in row
    )


def judge_undated(
    undated: Undated, probe: ResultSet, served: ResultSet, ex: Execution
) -> Evaluation:
    """``blocking`` when rows without the date exist and the answer is nothing (empty,
    or only 0 and NULL); a passed evaluation whose detail counts them otherwise."""
    if len(probe.rows) != 1 or len(probe.rows[0]) != 1:
        return Evaluation(GATE_UNDATED, True, "info", detail="the probe returned no count")
    missing = int(probe.rows[0][0] or 0)
    if missing == 0:
        return Evaluation(GATE_UNDATED, True, "info")
    detail = (
        f"{missing} row(s) the other conditions keep have no {undated.column}: "
        "the period leaves them out"
    )
    if not _nothing(served):
        return Evaluation(GATE_UNDATED, True, "info", detail=detail)
    hint = f"put the period on a date those rows have, not {undated.column}"
    return Evaluation(
        GATE_UNDATED,
        False,
        "blocking",
        detail=f"{detail}, and the answer is empty or 0 without them",
        suggested_repair=hint,
        repair_action=RepairAction("retry", ex.route, hint),
    )
