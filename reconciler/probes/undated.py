"""The undated-rows gate: a period must not silently leave out the rows it counts (sqlglot).

DESIGN §1 runtime gates, for every tier. "How many cancelled bookings were there in
2024?" filtered on ``used_at``, a date every cancelled booking leaves NULL, is a
well-formed query that answers 0: the period cannot see the rows the question counts,
and nothing in the result says so. The same holds for any date a share of the rows
lacks: a period on it leaves those rows out, however it is spelled.

:func:`undated_probe` finds, in the SELECT reading FROM a table (the top one, or the
one a ranking wraps), the range conditions of its WHERE on one column against a date
(``>=``, ``>``, ``<``, ``<=``, ``BETWEEN``, the other side a date or timestamp literal or
cast, no column), else the one date its GROUP BY buckets (``DATE_TRUNC``: "Which month
had the most cancellations?"), and writes one bounded query: the same FROM, joins and
other conditions (a test that the column is not NULL dropped), counting the rows whose
column is NULL. :func:`judge_undated` blocks when the answer is empty or every number in
it is 0 or NULL while such rows exist (the date, not the data, made it empty), and
otherwise passes with a note giving how many rows the date could not place. Ranges on
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
from reconciler.probes.cuts import failed
from reconciler.resultset import ResultSet
from reconciler.trust import Evaluation, Execution

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


def _innermost(node: exp.Expr) -> exp.Select | None:
    """The SELECT that reads the table: ``node``, or the one its FROM wraps (a ranking's
    ``SELECT … FROM (SELECT … GROUP BY …) AS cut``), at most a few levels down."""
    for _ in range(4):
        while isinstance(node, exp.Subquery):
            node = node.this
        if not isinstance(node, exp.Select):
            return None
        source = node.args.get("from_")
        if source is None or not isinstance(source.this, exp.Subquery):
            return node
        node = source.this
    return None


def _grouped(select: exp.Select, key: exp.Expr) -> exp.Expr:
    """The expression a GROUP BY key stands for: a position or an output name is the
    select list's expression (``GROUP BY 1``, ``GROUP BY month``)."""
    shown = select.expressions
    if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.this) <= len(shown):
        key = shown[int(key.this) - 1]
    elif isinstance(key, exp.Column) and not key.table:
        key = next((e for e in shown if e.alias_or_name == key.name and e is not key), key)
    return key.this if isinstance(key, exp.Alias) else key


def _not_null(condition: exp.Expr, column: str, dialect: str) -> bool:
    """Whether ``condition`` only says ``column`` is not NULL (it leaves out the rows the
    probe counts, so the probe drops it)."""
    test = condition.this if isinstance(condition, exp.Not) else None
    return (
        isinstance(test, exp.Is)
        and isinstance(test.expression, exp.Null)
        and test.this.sql(dialect=dialect) == column
    )


def _bucketed(key: exp.Expr) -> exp.Column | None:
    """The date column a GROUP BY key buckets (``DATE_TRUNC('month', used_at)``), or
    ``None``."""
    while isinstance(key, exp.Cast):
        key = key.this
    if isinstance(key, (exp.DateTrunc, exp.TimestampTrunc)) and isinstance(key.this, exp.Column):
        return key.this
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

    ``None`` when the query does not parse, is not a SELECT reading FROM a table (at
    its top, or inside the FROM of a ranking around it), or neither its WHERE bounds
    one column against a date nor its GROUP BY buckets one date (module docstring).
    """
    try:
        node = shared_query(sql, dialect)  # read only: the probe is built from copies
    except UnsafeSqlError:
        return None
    select = _innermost(node)
    if select is None:
        return None
    source, where = select.args.get("from_"), select.args.get("where")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    conditions = _conjuncts(where) if where is not None else []
    ranged = [(c, column) for c in conditions if (column := _ranged(c)) is not None]
    group = select.args.get("group")
    keys = [_grouped(select, k) for k in (group.expressions if group is not None else [])]
    dates = {c.sql(dialect=dialect): c for _, c in ranged} or {
        c.sql(dialect=dialect): c for k in keys if (c := _bucketed(k)) is not None
    }
    if len(dates) != 1:
        return None
    column = next(iter(dates.values()))
    named = column.sql(dialect=dialect)
    ranged += [(c, column) for c in conditions if _not_null(c, named, dialect)]
    kept = [c.copy() for c in conditions if all(c is not r for r, _ in ranged)]
    body = exp.select(exp.alias_(exp.Count(this=exp.Star()), "dst_undated"))
    body.set("from_", source.copy())
    body.set("joins", [j.copy() for j in select.args.get("joins") or []])
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
        "a period or a bucket of it leaves them out"
    )
    if not _nothing(served):
        return Evaluation(GATE_UNDATED, True, "info", detail=detail)
    hint = f"put the period on a date those rows have, not {undated.column}"
    return failed(GATE_UNDATED, "blocking", f"{detail}, and the answer is empty or 0", hint, ex)
