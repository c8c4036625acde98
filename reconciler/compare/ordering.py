"""The oracle's top-level ORDER BY, as output-column sort keys (pure, sqlglot).

Row order counts only where the oracle's top-level query has ORDER BY, read
from the AST, and then only the order of the sort keys (DESIGN §4 step 3);
``compare`` checks the sequence of key values these keys select.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from reconciler.guard import shared_query


@dataclass(frozen=True)
class OrderKey:
    """One sort key of the oracle's top-level ORDER BY, as an output column.

    Exactly one of ``column`` and ``position`` is set.

    Attributes:
        column: an output column name (an alias, or a plain column in the select
            list); resolved case-insensitively against the result's columns.
        position: a 1-based output position, as in ``ORDER BY 2``.
        desc: the key sorts descending. Informational: the check compares the
            generated sequence with the oracle's, not with a sort direction,
            so NULL placement and collation need no modelling.

    Raises:
        ValueError: both or neither of ``column`` and ``position`` given, or a
            position below 1.
    """

    column: str | None = None
    position: int | None = None
    desc: bool = False

    def __post_init__(self) -> None:
        if (self.column is None) == (self.position is None):
            raise ValueError("an OrderKey names exactly one of column and position")
        if self.position is not None and self.position < 1:
            raise ValueError(f"an output position is 1-based, got {self.position}")

    def label(self) -> str:
        """The key as it reads in a message: ``total DESC`` or ``#2``."""
        name = self.column if self.column is not None else f"#{self.position}"
        return f"{name} DESC" if self.desc else name


@functools.lru_cache(maxsize=4096)  # a suite asks for every oracle on every run
def order_keys(sql: str, dialect: str) -> tuple[OrderKey, ...] | None:
    """The sort keys of the top-level query's ORDER BY, as output columns (kept by text).

    Only the outermost query counts (through parentheses, and on a UNION the
    ORDER BY that applies to the whole); an ORDER BY inside a CTE, a subquery
    or a window does not constrain the result's row order.

    Each key maps, in this order of preference:

    * an integer literal (``ORDER BY 2``) → that output position;
    * an unqualified column whose name is an output name (an alias or a plain
      column of the select list) → that output name; when the select list has
      a star and no item carries the name, the name itself, on the bet that
      the star produced it;
    * an expression equal to a select-list expression (identifiers normalized
      for the dialect) → that item's position, or its output name when a star
      before it makes the position unknowable.

    A key that maps to nothing (an expression outside the select list) ends
    the mapping: the keys after it only order rows within its ties, which are
    unobservable, so the longest mappable prefix is returned. The first key
    unmappable yields ``()``: there is an ORDER BY but nothing to check.

    Args:
        sql: the oracle's SQL, one query.
        dialect: a sqlglot dialect name (``duckdb``, ``postgres`` …).

    Returns:
        The keys in ORDER BY order, ``()`` as above, or ``None`` when the
        top-level query has no ORDER BY.

    Raises:
        UnsafeSqlError: the SQL does not parse as exactly one statement.
    """
    node = shared_query(sql, dialect)  # read only: normalized on a copy below
    order = node.args.get("order")
    # `(SELECT … ORDER BY a)` parses as a Subquery around the real query.
    while order is None and isinstance(node, exp.Subquery):
        node = node.this
        order = node.args.get("order")
    if order is None:
        return None
    while isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Query):
        return None
    # Names are taken from the tree as written (that is what a driver reports);
    # equality is decided on a copy normalized for the dialect, so `SUM(X)`
    # and `sum(x)` are the same expression where the dialect folds case.
    normalized = normalize_identifiers(node.copy(), dialect=dialect)
    normalized_order = normalized.args.get("order")
    if not isinstance(normalized, exp.Query) or normalized_order is None:
        return None
    written = list(node.selects)
    items = list(normalized.selects)
    keys: list[OrderKey] = []
    for ordered in normalized_order.expressions:
        desc = bool(ordered.args.get("desc"))
        sort_expr = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        key = _map_sort_key(sort_expr, desc, written, items)
        if key is None:
            break
        keys.append(key)
    return tuple(keys)


def _map_sort_key(
    sort_expr: exp.Expr,
    desc: bool,
    written: list[exp.Expr],
    items: list[exp.Expr],
) -> OrderKey | None:
    if isinstance(sort_expr, exp.Literal) and sort_expr.is_int:
        position = int(sort_expr.this)
        return OrderKey(position=position, desc=desc) if position >= 1 else None
    star_at = next((i for i, item in enumerate(items) if item.is_star), None)
    if isinstance(sort_expr, exp.Column) and not sort_expr.table:
        wanted = sort_expr.name.casefold()
        for i, item in enumerate(items):
            if item.alias_or_name and item.alias_or_name.casefold() == wanted:
                return OrderKey(column=written[i].alias_or_name, desc=desc)
        if star_at is not None:
            return OrderKey(column=sort_expr.name, desc=desc)
    for i, item in enumerate(items):
        inner = item.this if isinstance(item, exp.Alias) else item
        if inner != sort_expr and not _same_column(inner, sort_expr):
            continue
        if star_at is None or i < star_at:
            return OrderKey(position=i + 1, desc=desc)
        name = written[i].alias_or_name
        return OrderKey(column=name, desc=desc) if name else None
    return None


def _same_column(item: exp.Expr, sort_expr: exp.Expr) -> bool:
    # `ORDER BY t.x` against a select item `x` (or the reverse) names one column.
    if not (isinstance(item, exp.Column) and isinstance(sort_expr, exp.Column)):
        return False
    if item.name != sort_expr.name:
        return False
    return not item.table or not sort_expr.table or item.table == sort_expr.table
