"""The thinned-join gate: an INNER join must not drop rows the question counts (sqlglot).

DESIGN §1 runtime gates, for every tier. "How many branches are there in each
region?" answered through an employee table that also carries ``region``, with an
INNER join, loses every branch that has no employee: the counts are too low, and
nothing in the result says so. A semantic layer joins a breakdown's dimension with a
LEFT JOIN for this reason.

:func:`thinning_probe` finds, in an aggregating query with no top-level cut (a cut's
NULL group is the NULL-group gate's business, :mod:`reconciler.probes.cuts`), the INNER
joins whose table the query reads only to group or show by — never in WHERE, HAVING,
an aggregate's argument, or the ON of a join it needs — and writes one bounded
query: the query's FROM and WHERE with those joins turned LEFT, counting every row
and the rows every such join matched. :func:`judge_thinning` fails (``blocking``)
when the two counts differ: the join dropped rows of the counted model. A join whose
ON is not a plain equality of columns, or unqualified columns in WHERE or HAVING
(whose table cannot be told), leave the query unchecked.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot import exp

from reconciler.assembly.joins import bare_key
from reconciler.errors import UnsafeSqlError
from reconciler.guard import shared_query
from reconciler.resultset import ResultSet
from reconciler.trust import Evaluation, Execution, RepairAction

GATE_THINNED_JOIN = "thinned_join"


@dataclass(frozen=True)
class Thinning:
    """The INNER joins of a breakdown that only group, and the probe that counts their loss.

    Attributes:
        base: the FROM table's name (the counted model's table).
        joined: the names of the grouping-only INNER joins' tables.
        probe_sql: one row, two columns: every row of the FROM with those joins
            LEFT (``dst_rows``), and the rows each of them matched (``dst_matched``).
    """

    base: str
    joined: tuple[str, ...]
    probe_sql: str


def _is_inner(join: exp.Join) -> bool:
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    keyed = join.args.get("on") is not None or bool(join.args.get("using"))
    return not side and kind in ("", "INNER") and keyed


def _tables_of(node: exp.Expr | None) -> set[str] | None:
    """The table qualifiers of the columns in ``node``; ``None`` when one is unqualified."""
    if node is None:
        return set()
    names: set[str] = set()
    for column in node.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            continue
        if not column.table:
            return None
        names.add(column.table.lower())
    return names


def _matched_column(join: exp.Join, alias: str) -> exp.Column | None:
    using = join.args.get("using")
    if using:
        return exp.column(using[0].name, table=alias)
    on = join.args.get("on")
    equalities = list(on.find_all(exp.EQ)) if on is not None else []
    if not equalities or any(
        not (
            isinstance(bare_key(e.this), exp.Column)
            and isinstance(bare_key(e.expression), exp.Column)
        )
        for e in equalities
    ):
        return None
    for eq in equalities:
        for side in (bare_key(eq.this), bare_key(eq.expression)):
            if isinstance(side, exp.Column) and side.table.lower() == alias:
                return side.copy()
    return None


def _grouping_joins(
    node: exp.Select, aggregates: list[exp.AggFunc], joins: list[exp.Join]
) -> set[int]:
    """Positions of the INNER joins to tables the query reads only to group or show by."""
    needed: set[str] = set()
    for part in (node.args.get("where"), node.args.get("having"), *aggregates):
        tables = _tables_of(part)
        if tables is None:
            return set()
        needed |= tables
    aliases = [j.this.alias_or_name.lower() for j in joins]
    changed = True
    while changed:  # a join the query needs needs the tables its ON reads
        changed = False
        for i, join in enumerate(joins):
            if aliases[i] in needed:
                more = (_tables_of(join.args.get("on")) or set()) - needed
                if more:
                    needed |= more
                    changed = True
    return {
        i
        for i, j in enumerate(joins)
        if _is_inner(j) and isinstance(j.this, exp.Table) and aliases[i] not in needed
    }


@functools.lru_cache(maxsize=1024)
def thinning_probe(sql: str, dialect: str) -> Thinning | None:
    """The thinned-join probe of ``sql``, or ``None`` when there is nothing to check.

    ``None`` when the query does not parse, is not a top-level SELECT that
    aggregates (GROUP BY, or an aggregate in its select list), has a top-level
    LIMIT, reads FROM something other than a table, or has no INNER join that
    only groups (module docstring).
    """
    try:
        node = shared_query(sql, dialect)  # read only: the probe is built from copies
    except UnsafeSqlError:
        return None
    while isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Select) or node.args.get("limit") is not None:
        return None
    aggregates = [a for p in node.expressions for a in p.find_all(exp.AggFunc)]
    if node.args.get("group") is None and not aggregates:
        return None
    source = node.args.get("from_")
    joins = list(node.args.get("joins") or [])
    if source is None or not isinstance(source.this, exp.Table) or not joins:
        return None
    grouping = _grouping_joins(node, aggregates, joins)
    if not grouping:
        return None
    aliases = [j.this.alias_or_name.lower() for j in joins]
    matched: list[exp.Expr] = []
    body = exp.select(exp.alias_(exp.Count(this=exp.Star()), "dst_rows"))
    body.set("from_", source.copy())
    probe_joins = []
    for i, join in enumerate(joins):
        copy = join.copy()
        if i in grouping:
            column = _matched_column(join, aliases[i])
            if column is None:
                return None
            copy.set("side", "LEFT")
            copy.set("kind", None)
            matched.append(exp.Not(this=exp.Is(this=column, expression=exp.Null())))
        probe_joins.append(copy)
    body.set("joins", probe_joins)
    if node.args.get("where") is not None:
        body.set("where", node.args["where"].copy())
    flag = exp.If(this=exp.and_(*matched), true=exp.Literal.number(1))
    body = body.select(exp.alias_(exp.Count(this=flag), "dst_matched"))
    return Thinning(
        base=source.this.name,
        joined=tuple(joins[i].this.name for i in sorted(grouping)),
        probe_sql=body.sql(dialect=dialect),
    )


def judge_thinning(thinning: Thinning, probe: ResultSet, ex: Execution) -> Evaluation:
    """``blocking`` when the grouping joins dropped rows (``dst_rows > dst_matched``)."""
    if len(probe.rows) != 1 or len(probe.rows[0]) != 2:
        return Evaluation(GATE_THINNED_JOIN, True, "info", detail="the probe returned no count")
    total, kept = (int(v or 0) for v in probe.rows[0])
    if kept >= total:
        return Evaluation(GATE_THINNED_JOIN, True, "info")
    joined = ", ".join(thinning.joined)
    hint = (
        f"group by a column of {thinning.base} itself, or reach {joined} with a LEFT JOIN "
        "so that the rows without a match form a group of their own"
    )
    return Evaluation(
        GATE_THINNED_JOIN,
        False,
        "blocking",
        detail=(
            f"the INNER join to {joined} drops {total - kept} of {total} rows of "
            f"{thinning.base} that the question counts"
        ),
        suggested_repair=hint,
        repair_action=RepairAction("retry", ex.route, hint),
    )
