"""What sqlglot (30.x) parses from another dialect but writes wrongly, or not at all, for MySQL.

:func:`fill_gaps` rewrites the tree of a statement read in the lens's dialect before it
is written in MySQL's (MariaDB's is the same), so that it runs there and means what it
meant in the lens's dialect:

* ``MAKE_DATE(y, m, d)`` becomes ``MAKEDATE(y, 1) + INTERVAL (m - 1) MONTH + INTERVAL
  (d - 1) DAY`` (sqlglot writes a ``DATE_FROM_PARTS`` MySQL lacks);
* ``agg(x) FILTER (WHERE c)`` becomes ``agg(CASE WHEN c THEN x END)`` (``COUNT(*)``
  counts ``CASE WHEN c THEN 1 END``): MySQL has no ``FILTER``;
* ``GROUP BY ALL`` lists every selected expression that holds no aggregate;
* ``ORDER BY 1`` names the selected expression (its alias, when it has one), so sqlglot
  can write the lens dialect's NULL ordering (``CASE WHEN … IS NULL``), which it refuses
  for a position;
* ``DATE_TRUNC('week', x)`` is the Monday of ``x``'s week (sqlglot counts weeks from
  a Saturday), and every ``DATE_TRUNC`` returns a ``DATETIME``, as DuckDB's returns a
  ``TIMESTAMP`` (sqlglot's ``DATE_ADD('0000-01-01 00:00:00', …)`` is a string in MySQL);
* ``dayofweek`` (and ``EXTRACT(DOW …)``, which MySQL lacks) counts Sunday as 0 (MySQL's
  ``DAYOFWEEK`` counts it as 1), ``isodow`` is ``WEEKDAY() + 1`` (MySQL has no
  ``DAYOFWEEK_ISO``), and ``date_part('unit', x)`` is ``EXTRACT(unit FROM x)``.

Sources: MySQL 8.0 "Date and Time Functions", "Aggregate Function Descriptions";
DuckDB "Date Part Functions", "FILTER Clause".
"""

from __future__ import annotations

from sqlglot import exp


def fill_gaps(tree: exp.Expr) -> exp.Expr:
    """``tree`` rewritten so its MySQL text runs and keeps the lens dialect's meaning."""
    for select in list(tree.find_all(exp.Select)):
        _expand_group_by_all(select)
        _name_positions(select)
    return tree.transform(_rewrite)


def _rewrite(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.DateFromParts):
        return _make_date(node)
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
        return _unfiltered(node.this, node.expression.this)
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc) and node.text("unit").upper() in (
        "WEEK",
        "ISOWEEK",
    ):
        # sqlglot counts weeks from 0000-01-01, a Saturday; DuckDB's weeks start on Monday.
        day = exp.cast(node.this.copy(), exp.DataType.build("date"))
        weekday = exp.Anonymous(this="WEEKDAY", expressions=[day.copy()])
        monday = exp.Sub(this=day, expression=exp.Interval(this=weekday, unit=exp.var("DAY")))
        return exp.cast(exp.Paren(this=monday), exp.DataType.build("datetime"))
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc) and not isinstance(
        node.parent, exp.Cast
    ):
        return exp.cast(node, exp.DataType.build("datetime"))
    if isinstance(node, exp.Extract) and node.name.upper() in ("DOW", "DAYOFWEEK", "ISODOW"):
        iso = node.name.upper() == "ISODOW"
        node = (exp.DayOfWeekIso if iso else exp.DayOfWeek)(this=node.expression)
    if isinstance(node, exp.DayOfWeekIso):
        weekday = exp.Anonymous(this="WEEKDAY", expressions=[node.this])
        return exp.Paren(this=exp.Add(this=weekday, expression=exp.Literal.number(1)))
    if isinstance(node, exp.DayOfWeek):
        sunday_one = exp.Anonymous(this="DAYOFWEEK", expressions=[node.this])
        return exp.Paren(this=exp.Sub(this=sunday_one, expression=exp.Literal.number(1)))
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "date_part":
        unit, value = [*node.expressions, None, None][:2]
        if isinstance(unit, exp.Literal) and unit.is_string and value is not None:
            return _rewrite(exp.Extract(this=exp.var(unit.name.upper()), expression=value))
    return node


def _make_date(node: exp.DateFromParts) -> exp.Expr:
    year, month, day = (node.args.get(k) for k in ("year", "month", "day"))
    if year is None or month is None or day is None:
        return node
    start = exp.Anonymous(this="MAKEDATE", expressions=[year, exp.Literal.number(1)])

    def plus(base: exp.Expr, part: exp.Expr, unit: str) -> exp.Expr:
        offset = exp.Paren(this=exp.Sub(this=part, expression=exp.Literal.number(1)))
        return exp.Add(this=base, expression=exp.Interval(this=offset, unit=exp.var(unit)))

    return exp.Paren(this=plus(plus(start, month, "MONTH"), day, "DAY"))


def _unfiltered(agg: exp.AggFunc, condition: exp.Expr) -> exp.Expr:
    """``agg`` whose argument is ``CASE WHEN condition THEN argument END``."""
    agg = agg.copy()
    target: exp.Expr = agg
    argument = agg.this
    if isinstance(argument, exp.Distinct) and len(argument.expressions) == 1:
        target, argument = argument, argument.expressions[0]
    value = (
        exp.Literal.number(1) if argument is None or isinstance(argument, exp.Star) else argument
    )
    case = exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
    if target is agg:
        agg.set("this", case)
    else:
        target.set("expressions", [case])
    return agg


def _expand_group_by_all(select: exp.Select) -> None:
    group = select.args.get("group")
    if group is None or not group.args.get("all"):
        return
    positions = [
        exp.Literal.number(i)
        for i, item in enumerate(select.expressions, start=1)
        if not item.find(exp.AggFunc, exp.Window)
    ]
    select.set("group", exp.Group(expressions=positions) if positions else None)


def _name_positions(select: exp.Select) -> None:
    order = select.args.get("order")
    if order is None:
        return
    for ordered in order.expressions:
        key = ordered.this
        if not (isinstance(key, exp.Literal) and key.is_int):
            continue
        index = int(key.name) - 1
        if not 0 <= index < len(select.expressions):
            continue
        item = select.expressions[index]
        if isinstance(item, exp.Alias):
            ordered.set("this", exp.column(item.alias, quoted=True))
        elif not isinstance(item, exp.Star):
            ordered.set("this", item.copy())
