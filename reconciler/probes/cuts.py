"""A ranked result's cut: the tie gate and the NULL-group gate (sqlglot; one bounded query).

DESIGN §1 runtime gates, for every tier. A served result *cut* by a top-level
``LIMIT n`` (or ``FETCH FIRST n ROWS``) answers "the top n", "the most", "which X
has the fewest": the rows it keeps are an answer only when

* the cut does not fall inside rows tied on the ordering keys (**tie gate**):
  otherwise which of the tied rows survive is the engine's silent pick;
* no kept row is a NULL group ranked as an entity (**NULL-group gate**): a group
  whose every key is NULL (the rows with no agent, or an unmatched LEFT JOIN) is not
  an agent, and a NULL ordering value is not a rank (PostgreSQL sorts NULL first in
  ``DESC``).

:func:`cut_of` reads the cut from the AST and writes one probe: the same query
with the ordering keys and a NULL-group flag as hidden columns, the NULL groups and
NULL first keys left out, ranked with ``RANK()`` and kept while the rank is within
the limit, so every row tied at the cut survives. :func:`judge` compares the probe's
rows with the served ones:

* equal → both gates pass, the served answer stands;
* different, and the query's output columns have plain names → the probe is the
  repaired answer (``LIMIT n`` becomes ``rank ≤ n``), served with a note
  ("3 rows tie at the cut; all are shown");
* different otherwise → the tie gate fails as a ``warning`` (the answer is
  ``review_required`` with the tie named), the NULL-group gate as ``blocking``.

A cut with an OFFSET ("the second highest") is only checked, never repaired: a tie
at either edge is a ``warning``. A LIMIT without ORDER BY that drops rows is an
arbitrary pick (``warning``). The probe costs one query, capped like any statement.
A breakdown with no cut may show its NULL group: :func:`null_group_note` labels it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from reconciler.compare.cells import canon
from reconciler.compare.diff import DivergenceKind, Verdict, compare
from reconciler.compare.ties import AMBIGUOUS, top_level
from reconciler.errors import DstError, UnsafeSqlError
from reconciler.guard import shared_query
from reconciler.resultset import ResultSet
from reconciler.trust import Evaluation, Execution, RepairAction, Severity

GATE_TIE = "tie"
GATE_NULL_GROUP = "null_group"

RANK = "dst_rank"
_KEY = "dst_k"
_NULL = "dst_null_group"
_TIE_HINT = (
    "keep every row tied at the cut: rank the rows (RANK() OVER (ORDER BY …) <= n) "
    "or use FETCH FIRST n ROWS WITH TIES, and add a tie-breaker only if the question names one"
)
_NULL_HINT = "leave out the group whose key is NULL before ranking (WHERE key IS NOT NULL)"


@dataclass(frozen=True)
class Cut:
    """A top-level LIMIT on a query, and the probe that checks it.

    Attributes:
        limit: rows the LIMIT keeps.
        offset: rows the OFFSET skips (0 without one).
        keys: the ORDER BY keys as they read (``count(*) DESC``); empty without ORDER BY.
        entities: 0-based output positions of a grouped query's key columns (the
            columns that name the group); empty when the query is not grouped or
            its outputs cannot be told apart.
        first_key: the output position of the first ORDER BY key, when it is one.
        width: the number of output columns the probe's first columns repeat;
            ``None`` when the select list has a star (the served result tells).
        probe_sql: the probe (module docstring), in the query's dialect. Its rows
            begin with the query's own columns; the rank is the last column.
        repaired_sql: the probe without its hidden columns, servable in place of
            the query; ``None`` when the outputs have no plain, distinct names or
            the cut has an OFFSET.
    """

    limit: int
    offset: int
    keys: tuple[str, ...]
    entities: tuple[int, ...]
    first_key: int | None
    width: int | None
    probe_sql: str
    repaired_sql: str | None

    def describe(self) -> str:
        """``LIMIT 3 on (total DESC)``, for messages."""
        on = f" on ({', '.join(self.keys)})" if self.keys else " without ORDER BY"
        skip = f" OFFSET {self.offset}" if self.offset else ""
        return f"LIMIT {self.limit}{skip}{on}"


@dataclass(frozen=True)
class Judgement:
    """What the two gates found on one cut.

    Attributes:
        evaluations: the tie and NULL-group evaluations (each may have passed).
        repaired: the repaired result to serve instead, with ``repaired_sql``; ``None``
            when the served answer stands (or cannot be repaired).
        repaired_sql: the SQL that produced ``repaired``.
        notes: one line per repair, for the asker.
    """

    evaluations: tuple[Evaluation, ...]
    repaired: ResultSet | None = None
    repaired_sql: str | None = None
    notes: tuple[str, ...] = ()


@functools.lru_cache(maxsize=1024)
def cut_of(sql: str, dialect: str) -> Cut | None:
    """The top-level cut of ``sql``, or ``None`` when there is none to check (kept by text).

    ``None`` when the query does not parse, has no top-level LIMIT/FETCH, keeps ties
    already (``WITH TIES``), limits by something other than an integer literal, or
    orders by a window function or a key it cannot carry into the probe (a DISTINCT
    query ordered by a non-output expression, a set operation ordered by position).
    """
    node = top_level(sql, dialect)
    if node is None:
        return None
    counts = _limit(node)
    if counts is None:
        return None
    limit, offset = counts
    select = _wrap_set(node) if isinstance(node, exp.SetOperation) else node
    if not isinstance(select, exp.Select):
        return None
    return _build(select, limit, offset, dialect)


def _limit(node: exp.Expr) -> tuple[int, int] | None:
    limit = node.args.get("limit")
    if limit is None:
        return None
    count = limit.args.get("count") if isinstance(limit, exp.Fetch) else limit.expression
    options = limit.args.get("limit_options")
    if options is not None and options.args.get("with_ties"):
        return None
    if not (isinstance(count, exp.Literal) and count.is_int) or int(count.this) < 1:
        return None
    offset = node.args.get("offset")
    skip = 0
    if offset is not None:
        value = offset.expression
        if not (isinstance(value, exp.Literal) and value.is_int):
            return None
        skip = int(value.this)
    return int(count.this), skip


def _wrap_set(node: exp.SetOperation) -> exp.Select | None:
    """``A UNION B ORDER BY x LIMIT n`` as ``SELECT * FROM (A UNION B) ORDER BY x LIMIT n``;
    ``None`` when a key is a position or an expression (it names no output here)."""
    order = node.args.get("order")
    if order is not None and any(
        not isinstance(o.this, exp.Column) or o.this.table for o in order.expressions
    ):
        return None
    body = node.copy()
    for part in ("order", "limit", "offset"):
        body.set(part, None)
    select = exp.select(exp.Star()).from_(body.subquery("dst_set"))
    for part in ("order", "limit", "offset"):
        select.set(part, node.args.get(part))
    return select


def _output_name(projection: exp.Expr) -> exp.Identifier | None:
    if isinstance(projection, exp.Alias):
        ident = projection.args.get("alias")
        return ident if isinstance(ident, exp.Identifier) else None
    if isinstance(projection, exp.Column) and not isinstance(projection.this, exp.Star):
        ident = projection.this
        return ident if isinstance(ident, exp.Identifier) else None
    return None


def _bare(projection: exp.Expr) -> exp.Expr:
    return projection.this if isinstance(projection, exp.Alias) else projection


def _is_entity(projection: exp.Expr) -> bool:
    body = _bare(projection)
    if isinstance(body, (exp.Literal, exp.Null)):
        return False
    return body.find(exp.AggFunc, exp.Window) is None


def _resolve_keys(
    node: exp.Select, projections: Sequence[exp.Expr]
) -> list[tuple[exp.Expr, bool, bool, int | None]] | None:
    """Each ORDER BY key as (expression, desc, nulls_first, output position or None)."""
    order = node.args.get("order")
    if order is None:
        return []
    names: dict[str, int] = {}
    for i, p in enumerate(projections):
        ident = _output_name(p)
        if ident is not None:
            names.setdefault(ident.name.lower(), i)
    bodies = [_bare(p) for p in projections]
    keys: list[tuple[exp.Expr, bool, bool, int | None]] = []
    for ordered in order.expressions:
        key = ordered.this
        position: int | None = None
        if isinstance(key, exp.Literal) and key.is_int:
            position = int(key.this) - 1
            if not 0 <= position < len(projections) or isinstance(bodies[position], exp.Star):
                return None
            key = bodies[position]
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            position = names[key.name.lower()]
            key = bodies[position]
        else:
            position = next((i for i, b in enumerate(bodies) if b == key), None)
        if key.find(exp.Window) is not None:
            return None
        desc = bool(ordered.args.get("desc"))
        keys.append((key.copy(), desc, bool(ordered.args.get("nulls_first")), position))
    return keys


def _build(node: exp.Select, limit: int, offset: int, dialect: str) -> Cut | None:
    projections = list(node.expressions)
    keys = _resolve_keys(node, projections)
    if keys is None:
        return None
    if node.args.get("distinct") and any(position is None for *_, position in keys):
        return None  # a hidden key would split the DISTINCT rows
    starred = any(
        isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
        for p in projections
    )
    names = [_output_name(p) for p in projections]
    plain = not starred and all(names) and len({n.name.lower() for n in names if n}) == len(names)
    grouped = node.args.get("group") is not None
    # The columns that name what is ranked: every output that is neither aggregated nor
    # an ordering key ("g.genre" beside "COALESCE(m.n, 0)" when the groups were made in a
    # subquery, "store_name" beside "staff" in a ranking of rows).
    ordering = {
        position
        for i, (key, _, _, position) in enumerate(keys)
        if position is not None and (i == 0 or key.find(exp.AggFunc) is not None)
    }
    entities = (
        tuple(
            i for i, p in enumerate(projections) if _is_entity(p) and (grouped or i not in ordering)
        )
        if not starred
        else ()
    )
    inner = node.copy()
    for part in ("order", "limit", "offset"):
        inner.set(part, None)
    hidden = [exp.alias_(k, f"{_KEY}{i}") for i, (k, *_) in enumerate(keys)]
    if entities:
        flag = exp.and_(
            *(exp.Is(this=_bare(projections[i]).copy(), expression=exp.Null()) for i in entities)
        )
        hidden.append(
            exp.alias_(
                exp.If(this=flag, true=exp.Literal.number(1), false=exp.Literal.number(0)), _NULL
            )
        )
    inner.set("expressions", [*inner.expressions, *hidden])
    # The ranked keys: the first, and any later one that is a measure. A later plain
    # key (the fast tier's "the keys always break ties", a name after a count) only
    # breaks ties the question never asked to break, so it is no part of the rank.
    ranked_keys = [i for i, (k, *_) in enumerate(keys) if i == 0 or k.find(exp.AggFunc) is not None]
    window_order = exp.Order(
        expressions=[
            exp.Ordered(this=exp.column(f"{_KEY}{i}"), desc=keys[i][1], nulls_first=keys[i][2])
            for i in ranked_keys
        ]
    )
    rank = exp.Window(this=exp.Anonymous(this="RANK"), order=window_order) if keys else None
    middle = exp.select(exp.Star()).from_(inner.subquery("dst_cut"))
    if rank is not None:
        middle = middle.select(exp.alias_(rank, RANK))
    else:
        middle = middle.select(exp.alias_(exp.Literal.number(1), RANK))
    conditions: list[exp.Expr] = []
    if keys:
        conditions.append(exp.Not(this=exp.Is(this=exp.column(f"{_KEY}0"), expression=exp.Null())))
    if entities:
        conditions.append(exp.EQ(this=exp.column(_NULL), expression=exp.Literal.number(0)))
    if conditions:
        middle = middle.where(exp.and_(*conditions))
    ranked = middle.subquery("dst_ranked")
    outer_order = [
        exp.Ordered(this=exp.column(f"{_KEY}{i}"), desc=desc, nulls_first=nulls_first)
        for i, (_, desc, nulls_first, _) in enumerate(keys)
    ]
    if keys and offset == 0:
        probe = (
            exp.select(exp.Star())
            .from_(ranked)
            .where(exp.LTE(this=exp.column(RANK), expression=exp.Literal.number(limit)))
        )
        probe = probe.order_by(*outer_order)
    elif keys:
        probe = (
            exp.select(exp.Star())
            .from_(ranked)
            .order_by(exp.column(RANK))
            .limit(offset + limit + 1)
        )
    else:
        probe = exp.select(exp.Star()).from_(ranked).limit(offset + limit + 1)
    repaired: str | None = None
    if plain and keys and offset == 0:
        columns = [exp.column(n.copy()) for n in names if n is not None]
        served = probe.copy()
        served.set("expressions", columns)
        repaired = served.sql(dialect=dialect)
    key_text = tuple(
        keys[i][0].sql(dialect=dialect) + (" DESC" if keys[i][1] else "") for i in ranked_keys
    )
    return Cut(
        limit=limit,
        offset=offset,
        keys=key_text,
        entities=entities,
        first_key=keys[0][3] if keys else None,
        width=None if starred else len(projections),
        probe_sql=probe.sql(dialect=dialect),
        repaired_sql=repaired,
    )


def needs_probe(cut: Cut, served: ResultSet) -> bool:
    """Whether the served rows could hide a tie or hold a NULL group (else no query runs).

    A result shorter than its limit was not cut, so only a NULL group can be wrong in it.
    """
    if served.truncated:
        return False
    if cut.offset or len(served.rows) >= cut.limit:
        return True
    return any(_null_row(cut, row) for row in served.rows)


def judge(cut: Cut, served: ResultSet, probe: ResultSet, ex: Execution) -> Judgement:
    """The tie and NULL-group evaluations of ``served`` given the probe's result.

    Args:
        cut: :func:`cut_of` of the served SQL.
        served: the result the query returned (with its LIMIT).
        probe: the result of ``cut.probe_sql``; one that hit the row cap cannot
            count its ties, and both gates then pass with a note in the detail.
        ex: the execution, for the repair action's route.
    """
    passed_tie = Evaluation(GATE_TIE, True, "info")
    passed_null = Evaluation(GATE_NULL_GROUP, True, "info")
    if probe.truncated:
        detail = "the ties at the cut could not be counted: the probe hit the row cap"
        return Judgement((Evaluation(GATE_TIE, True, "info", detail=detail), passed_null))
    nulls = [row for row in served.rows if _null_row(cut, row)]
    null_eval = passed_null
    if nulls:
        detail = f"{cut.describe()} ranks a group whose key is NULL, which names no entity"
        null_eval = failed(GATE_NULL_GROUP, "blocking", detail, _NULL_HINT, ex)
    if not cut.keys:
        return Judgement((_unordered(cut, probe, ex), null_eval))
    ranks = [row[-1] for row in probe.rows]
    if cut.offset:
        return Judgement((_offset_tie(cut, ranks, ex), null_eval))
    width = cut.width if cut.width is not None else len(served.columns)
    kept = ResultSet(served.columns, tuple(row[:width] for row in probe.rows))
    if _same_rows(kept.rows, served.rows):
        return Judgement((passed_tie, passed_null))
    tied = len(kept.rows) > cut.limit
    notes: list[str] = []
    if tied:
        last = ranks[-1] if ranks else None
        at = sum(1 for r in ranks if r == last)
        notes.append(
            f"{at} rows tie at the cut of {cut.describe()}; all are shown "
            f"({len(kept.rows)} rows for a limit of {cut.limit})"
        )
    if nulls:
        notes.append("the group whose key is NULL (no value) is not ranked")
    elif not tied:
        notes.append("a row whose ordering value is NULL is not ranked")
    if cut.repaired_sql is not None:
        tie_eval = Evaluation(GATE_TIE, True, "info", detail=notes[0]) if tied else passed_tie
        null_ok = (
            Evaluation(GATE_NULL_GROUP, True, "info", detail=notes[-1])
            if not tied or nulls
            else passed_null
        )
        return Judgement((tie_eval, null_ok), kept, cut.repaired_sql, tuple(notes))
    tie_eval = passed_tie
    if tied:
        detail = notes[0].replace("; all are shown", "; the served rows are one pick of them")
        tie_eval = failed(GATE_TIE, "warning", detail, _TIE_HINT, ex)
    return Judgement((tie_eval, null_eval))


def null_groups(ex: Execution, dialect: str) -> tuple[int, str] | None:
    """``(how many served rows are the NULL group, its key columns)`` of a breakdown (a
    grouped query with no cut) that shows its NULL group, else ``None``.

    A ``SELECT DISTINCT`` list of values is such a breakdown too, grouped by every
    column it shows ("the distinct specialties": a NULL among them is no specialty).
    """
    if ex.sql is None or not ex.rows:
        return None
    try:
        node = shared_query(ex.sql, dialect)  # read only
    except UnsafeSqlError:
        return None
    while isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Select):
        return None
    if node.args.get("group") is None and node.args.get("distinct") is None:
        return None
    if node.args.get("limit") is not None:
        return None
    projections = list(node.expressions)
    if len(projections) != len(ex.columns):
        return None
    entities = [i for i, p in enumerate(projections) if _is_entity(p)]
    if not entities:
        return None
    count = sum(1 for row in ex.rows if all(row[i] is None for i in entities))
    if not count:
        return None
    return count, ", ".join(ex.columns[i] for i in entities)


def null_group_note(ex: Execution, dialect: str) -> str | None:
    """The note for a breakdown that shows its NULL group (:func:`null_groups`):
    ``"1 group has no value for <columns>; it is shown as NULL (the rows whose key is
    missing)"``, else ``None``."""
    found = null_groups(ex, dialect)
    if found is None:
        return None
    count, named = found
    return (
        f"{count} group has no value for {named}; it is shown as NULL "
        "(the rows whose key is missing)"
    )


def _null_row(cut: Cut, row: Sequence[Any]) -> bool:
    if cut.entities and all(row[i] is None for i in cut.entities if i < len(row)):
        return True
    return cut.first_key is not None and cut.first_key < len(row) and row[cut.first_key] is None


def _same_rows(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    if len(a) != len(b):
        return False
    key = [repr(tuple(canon(v) for v in row)) for row in a]
    other = [repr(tuple(canon(v) for v in row)) for row in b]
    return sorted(key) == sorted(other)


def _unordered(cut: Cut, probe: ResultSet, ex: Execution) -> Evaluation:
    if len(probe.rows) <= cut.offset + cut.limit:
        return Evaluation(GATE_TIE, True, "info")
    return Evaluation(
        GATE_TIE,
        False,
        "warning",
        detail=f"{cut.describe()} keeps rows the engine picks among more",
        suggested_repair="order by the key the question ranks on",
        repair_action=RepairAction("retry", ex.route, "add an ORDER BY on the ranked key"),
    )


def _offset_tie(cut: Cut, ranks: Sequence[Any], ex: Execution) -> Evaluation:
    edges = []
    first, last = cut.offset, cut.offset + cut.limit  # 1-based rows first+1 … last
    if 0 < first < len(ranks) and ranks[first] == ranks[first - 1]:
        edges.append(f"rows {first} and {first + 1}")
    if last < len(ranks) and ranks[last] == ranks[last - 1]:
        edges.append(f"rows {last} and {last + 1}")
    if not edges:
        return Evaluation(GATE_TIE, True, "info")
    detail = f"{cut.describe()} cuts between tied {' and between '.join(edges)}"
    return failed(GATE_TIE, "warning", detail, _TIE_HINT, ex)


def kept_a_tie(
    oracle_sql: str,
    dialect: str,
    oracle: ResultSet,
    generated: ResultSet,
    run: Callable[[str], ResultSet],
) -> str | None:
    """The ``ambiguous oracle`` note when ``generated`` differs from an oracle only at a tie.

    DESIGN §4 step 3: an oracle whose top-level LIMIT cuts through rows tied on its
    ORDER BY keys — output columns or not (``ORDER BY count(*) DESC LIMIT 1``) — is
    *ambiguous*. A generated result is then correct when it kept every tied row (as
    the tie gate serves it) or kept other tied rows than the oracle did (same row
    count, every row ranked before the tie, the rest from the tie).

    Args:
        oracle_sql: the oracle's SQL, in ``dialect``.
        dialect: a sqlglot dialect name.
        oracle: the oracle's result.
        generated: the generated result, already found to differ from it.
        run: executes one statement the way the oracle ran (capped, read-only);
            called at most once, with the oracle's probe.

    Returns:
        The note, or ``None`` when the oracle is not ambiguous or the difference is
        more than the tie (and when the probe fails or hits the row cap).
    """
    cut = cut_of(oracle_sql, dialect)
    if cut is None or not cut.keys or cut.offset or len(oracle.rows) < cut.limit:
        return None
    try:
        probe = run(cut.probe_sql)
    except DstError:
        return None
    width = cut.width if cut.width is not None else len(oracle.columns)
    if probe.truncated or len(probe.rows) <= len(oracle.rows):
        return None
    kept = ResultSet(oracle.columns, tuple(row[:width] for row in probe.rows))
    note = (
        f"{AMBIGUOUS}: {cut.describe()} cuts through {len(kept.rows)} rows ranked within "
        f"the limit; add a tie-breaker to the ORDER BY"
    )
    if compare(kept, generated).verdict is Verdict.MATCH:
        return note
    last = probe.rows[-1][-1]
    before = ResultSet(oracle.columns, tuple(row[:width] for row in probe.rows if row[-1] != last))
    same_size = len(generated.rows) == len(oracle.rows)
    if same_size and _within(kept, generated) and (not before.rows or _within(generated, before)):
        return note
    return None


def _within(pool: ResultSet, part: ResultSet) -> bool:
    """``part`` is a sub-multiset of ``pool`` (nothing extra; rows may be missing)."""
    result = compare(pool, part)
    return result.verdict is Verdict.MATCH or result.kinds == (DivergenceKind.MISSING_ROWS,)


def failed(gate: str, severity: Severity, detail: str, hint: str, ex: Execution) -> Evaluation:
    """A failed evaluation whose repair retries the route with ``hint``."""
    return Evaluation(
        gate,
        False,
        severity,
        detail=detail,
        suggested_repair=hint,
        repair_action=RepairAction("retry", ex.route, hint),
    )
