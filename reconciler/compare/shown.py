"""An oracle that ranks by a value it does not show, widened to show it (pure, sqlglot).

"Which year had the most concerts?" is certified as ``SELECT year … GROUP BY year
ORDER BY count(*) DESC LIMIT 1``: the count decides the answer but is not an output
column. A generated answer that shows the year *and* its count (the evidence for
"most") is the same answer, yet a column-for-column comparison calls it a column
mismatch. :func:`with_ranking_values` writes the oracle with each such ordering key
appended as an output column, after the oracle's own; the suite runs it (one more
bounded query, only after a column mismatch with more generated columns than the
oracle has) and compares the generated result with that. A match is correct with
the :data:`SHOWN_NOTE` note: every oracle column, row for row, plus the very values
the oracle ranked by — never a column the oracle did not compute.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from reconciler.compare.ties import top_level

SHOWN_NOTE = "it also shows the value the oracle ranks by"
"""The note on an answer that matched the oracle widened by its ordering values."""

SHOWN_PREFIX = "dst_order_"
"""Output names of the appended ordering values (``dst_order_0`` …)."""


@functools.lru_cache(maxsize=1024)
def with_ranking_values(sql: str, dialect: str) -> tuple[str, int] | None:
    """``sql`` with every top-level ORDER BY key that is no output column appended as one.

    Args:
        sql: one query, in ``dialect``.
        dialect: a sqlglot dialect name.

    Returns:
        ``(widened SQL, number of appended columns)``, or ``None`` when there is
        nothing to widen: the query does not parse, is not a plain SELECT (a set
        operation), is ``DISTINCT`` (another column would split its rows), selects
        a star, has no ORDER BY, or every ordering key is already an output
        column (by position, output name or equal expression).
    """
    node = top_level(sql, dialect)
    if not isinstance(node, exp.Select) or node.args.get("distinct"):
        return None
    order = node.args.get("order")
    if order is None:
        return None
    selects = list(node.expressions)
    if any(s.is_star for s in selects):
        return None
    normalized = normalize_identifiers(node.copy(), dialect=dialect)
    assert isinstance(normalized, exp.Select)
    names = {s.alias_or_name.casefold() for s in normalized.expressions if s.alias_or_name}
    bodies = [s.this if isinstance(s, exp.Alias) else s for s in normalized.expressions]
    added: list[exp.Expr] = []
    norm_order = normalized.args["order"]
    for written, ordered in zip(order.expressions, norm_order.expressions, strict=True):
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            continue
        if isinstance(key, exp.Column) and not key.table and key.name.casefold() in names:
            continue
        if any(body == key for body in bodies):
            continue
        added.append(exp.alias_(written.this.copy(), f"{SHOWN_PREFIX}{len(added)}"))
    if not added:
        return None
    widened = node.copy()
    widened.set("expressions", [*(s.copy() for s in selects), *added])
    return widened.sql(dialect=dialect), len(added)
