"""Executable gates and the trust ladder (pure).

Each gate is a pure function over one :class:`Execution` — the route the serving
path took, the SQL it ran and what the warehouse returned — and returns one
:class:`Evaluation`: whether it ``passed``, how much a failure matters
(``info`` < ``warning`` < ``blocking``), a ``suggested_repair`` for a person and a
machine-readable :class:`RepairAction` (``retry`` the same route with a hint, or
``escalate`` to another route) for the bounded repair loop.

:func:`trust_state_from_evaluations` maps a route and its evaluations to the
answer's trust state, in this order (the first rule that applies wins):

1. any failed ``blocking`` evaluation → ``blocked``;
2. route ``certified_answer`` → ``certified``;
3. route ``clarify`` (or ``refuse``: nothing is served) → ``not_applicable``;
4. route ``generated`` or ``research`` with grounding and execution passed, and no
   failed ``warning`` (a tie the answer picked from, a key whose uniqueness is unknown,
   many rows for a one-value question) → ``grounded``;
5. otherwise the route's fallback, ``review_required``.

No rule yields ``certified`` for anything but the certified-answer route, and that
route only serves SQL a human certified: only a human certifies.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler import guard
from reconciler.assembly.grain import join_doubt, joins_used, key_duplicated
from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.text import tokenize
from reconciler.errors import UnsafeSqlError
from reconciler.lens import Lens

Route = Literal["certified_answer", "generated", "research", "clarify", "refuse"]
Severity = Literal["info", "warning", "blocking"]
TrustState = Literal["certified", "grounded", "review_required", "blocked", "not_applicable"]

ROUTE_FALLBACK: dict[str, TrustState] = {
    "certified_answer": "review_required",
    "generated": "review_required",
    "research": "review_required",
    "clarify": "not_applicable",
    "refuse": "not_applicable",
}

GATE_EXECUTION_ERROR = "execution_error"
GATE_NO_ANSWER = "no_answer"
GATE_GROUNDING = "grounding"
GATE_EXECUTED = "result_executed"
GATE_CARDINALITY = "semantic_cardinality"
GATE_JOIN_GRAIN = "join_grain"
GATE_ROWS_ASKED = "rows_asked"

SCALAR_HINT = "return a single aggregated value"

# Phrasings that ask for one value ("what is the total revenue", "how many orders").
_SCALAR = re.compile(
    r"^(what is|what s|what was|how many|how much|total|count|sum|average|"
    r"overall|give me the total|tell me the total)\b|\b(in total|overall|altogether)\b"
)
# One number made of per-group numbers ("the average of the average prices of each
# category", "the total of the maximum scores"): "each" names the inner groups, not a
# breakdown of the answer.
_OF_AGGREGATES = re.compile(
    r"\b(average|mean|sum|total|maximum|minimum|max|min|median|highest|lowest)\s+of\s+"
    r"(the\s+|all\s+the\s+|all\s+)?(averages?|means|sums|totals|maximums?|minimums?|maxima|"
    r"minima|max|min|medians|counts|numbers)\b"
)
# Phrasing that asks for rows ("Which books are in the Poetry genre?", "List the …",
# "Show the member named …"), and the words that turn it into a count after all.
_ROWS = re.compile(r"^(which|list|show|name|what are the names|give me the names)\b")
_COUNTED = re.compile(r"\b(number|numbers|how many|count|counts|total|totals|amount)\b")
# Breakdown phrasing: a multi-row answer is what was asked for.
_BREAKDOWN = re.compile(
    r"\b(top|bottom|by|each|every|per|who|which|list|show all|breakdown|split|"
    r"across|for all|highest|lowest|rank|ranking|most|least|compare|versus|vs)\b"
)
# Time-series and window phrasing.
_SERIES = re.compile(
    r"\b(daily|weekly|monthly|quarterly|yearly|annually|over time|trend|running total|"
    r"cumulative|month over month|year over year|week over week|each month|each year|"
    r"per month|per year|per day|per week|time series)\b"
)


@dataclass(frozen=True)
class RepairAction:
    """What the repair loop does about a failed evaluation."""

    kind: Literal["retry", "escalate"]
    route: Route
    hint: str

    def to_json(self) -> dict[str, str]:
        """``{"kind", "route", "hint"}``."""
        return {"kind": self.kind, "route": self.route, "hint": self.hint}


@dataclass(frozen=True)
class Evaluation:
    """One gate's verdict on one execution."""

    gate: str
    passed: bool
    severity: Severity
    detail: str = ""
    suggested_repair: str | None = None
    repair_action: RepairAction | None = None

    def to_json(self) -> dict[str, object]:
        """The evaluation as JSON (``repair_action`` is ``null`` when passed)."""
        return {
            "gate": self.gate,
            "passed": self.passed,
            "severity": self.severity,
            "detail": self.detail,
            "suggested_repair": self.suggested_repair,
            "repair_action": self.repair_action.to_json() if self.repair_action else None,
        }


@dataclass(frozen=True)
class Execution:
    """What the serving path produced for one question.

    ``sql`` is ``None`` when no SQL was produced (a decline, a clarification or a
    refusal); ``error`` holds the warehouse's message when the SQL failed; ``rows``
    are the (capped) result rows, ``columns`` their names; ``per_entity``: the rows are
    one per entity a name filter named (the namesake gate's repair), so many rows answer
    a single-value question.
    """

    question: str
    route: Route
    sql: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    error: str | None = None
    executed: bool = False
    dialect: str = "duckdb"
    notes: tuple[str, ...] = field(default=())
    per_entity: bool = False


def execution_error(ex: Execution) -> Evaluation:
    """Fails (``warning``) when the SQL raised; retry on the same route with the error as hint."""
    if ex.error is None:
        return Evaluation(GATE_EXECUTION_ERROR, True, "info")
    return Evaluation(
        GATE_EXECUTION_ERROR,
        False,
        "warning",
        detail=ex.error,
        suggested_repair="fix the SQL so that it runs",
        repair_action=RepairAction("retry", ex.route, f"the previous SQL failed: {ex.error}"),
    )


def no_answer(ex: Execution) -> Evaluation:
    """Fails (``blocking``) when a data route produced no SQL; escalates to research."""
    if ex.route not in ("generated", "research") or ex.sql:
        return Evaluation(GATE_NO_ANSWER, True, "info")
    return Evaluation(
        GATE_NO_ANSWER,
        False,
        "blocking",
        detail="no SQL was produced",
        suggested_repair="answer through the research route, or add an exemplar",
        repair_action=RepairAction("escalate", "research", "the generator produced no SQL"),
    )


def result_executed(ex: Execution) -> Evaluation:
    """Fails (``blocking``) when SQL was produced but never executed without error."""
    if ex.sql is None or (ex.executed and ex.error is None):
        return Evaluation(GATE_EXECUTED, True, "info")
    return Evaluation(
        GATE_EXECUTED,
        False,
        "blocking",
        detail="the SQL did not execute" + (f": {ex.error}" if ex.error else ""),
        suggested_repair="run the SQL against the warehouse before serving it",
        repair_action=RepairAction("retry", ex.route, "produce SQL that executes"),
    )


def grounding(ex: Execution, lens: Lens) -> Evaluation:
    """Passes when every table and column the SQL reads resolves in the lens.

    Tables resolve against the models' ``table`` (or model name); columns against
    the models' column names, the identifiers their expressions use, primary and
    join keys, and names the query itself defines (select aliases, CTE and
    subquery outputs); a star (``*``, ``d.*``) reads only what its table holds. Unparseable
    SQL fails. A failure is a ``warning``: the
    answer may still be right, but it is not grounded in the lens.
    """
    if ex.sql is None:
        return Evaluation(GATE_GROUNDING, True, "info", detail="no SQL")
    try:
        tree = sqlglot.parse_one(ex.sql, read=ex.dialect)
    except SqlglotError as err:
        return _ungrounded(ex, f"the SQL does not parse: {err}")
    tables, columns = _lens_vocabulary(lens, ex.dialect)
    defined = _defined_names(tree)
    unknown_tables = sorted(
        {
            t.name.lower()
            for t in tree.find_all(exp.Table)
            if t.name and t.name.lower() not in tables and t.name.lower() not in defined
        }
    )
    unknown_columns = sorted(
        {
            c.name.lower()
            for c in tree.find_all(exp.Column)
            if c.name
            and not isinstance(c.this, exp.Star)  # `d.*`: the table, checked above
            and c.name.lower() not in columns
            and c.name.lower() not in defined
        }
    )
    if not unknown_tables and not unknown_columns:
        return Evaluation(GATE_GROUNDING, True, "info")
    parts = []
    if unknown_tables:
        parts.append("tables " + ", ".join(unknown_tables))
    if unknown_columns:
        parts.append("columns " + ", ".join(unknown_columns))
    return _ungrounded(ex, "not in the lens: " + "; ".join(parts))


def semantic_cardinality(ex: Execution) -> Evaluation:
    """Fails when a question that asks for one value returned more than one row.

    ``blocking`` for an aggregate of aggregates ("the average of the average prices
    of each category": one number, whatever "each" says); ``warning`` for other
    scalar phrasing ("what is the total …", "how many …"). Guards against false
    positives: breakdown phrasing ("top", "by region", "each", "who"), time-series
    or window phrasing ("monthly", "running total", "month over month"), certified
    results, research routes and the namesake gate's one row per entity are never
    flagged.
    """
    text = " ".join(tokenize(ex.question)) if ex.question else ""
    raw = ex.question.lower()
    if ex.route == "generated" and len(ex.rows) > 1 and _OF_AGGREGATES.search(raw):
        return Evaluation(
            GATE_CARDINALITY,
            False,
            "blocking",
            detail=(
                f"a question for one number made of per-group numbers returned {len(ex.rows)} rows"
            ),
            suggested_repair=SCALAR_HINT,
            repair_action=RepairAction("retry", ex.route, SCALAR_HINT),
        )
    if (
        ex.route != "generated"
        or ex.per_entity
        or len(ex.rows) <= 1
        or not _SCALAR.search(raw)
        or _BREAKDOWN.search(raw)
        or _SERIES.search(raw)
        or _SERIES.search(text)
    ):
        return Evaluation(GATE_CARDINALITY, True, "info")
    return Evaluation(
        GATE_CARDINALITY,
        False,
        "warning",
        detail=f"a single-value question returned {len(ex.rows)} rows",
        suggested_repair=SCALAR_HINT,
        repair_action=RepairAction("retry", ex.route, SCALAR_HINT),
    )


def rows_asked(ex: Execution) -> Evaluation:
    """Fails (``blocking``) when a question asking for rows was served one count.

    "Which books are in the Poetry genre?" answered ``COUNT(DISTINCT book_id)`` = 5 is
    a misreading: "which", "list", "show" ask for the rows themselves. A question that
    names a count ("show the number of …", "list the total …") is not flagged; neither
    are certified answers or results of more than one cell.
    """
    raw = ex.question.lower().strip()
    one_cell = len(ex.rows) == 1 and len(ex.columns) == 1
    if ex.route != "generated" or not one_cell or not _ROWS.search(raw) or _COUNTED.search(raw):
        return Evaluation(GATE_ROWS_ASKED, True, "info")
    tree = _read_only_tree(ex.sql, ex.dialect) if ex.sql else None
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1:
        return Evaluation(GATE_ROWS_ASKED, True, "info")
    only = tree.expressions[0]
    body = only.this if isinstance(only, exp.Alias) else only
    if not isinstance(body, exp.Count):
        return Evaluation(GATE_ROWS_ASKED, True, "info")
    hint = "list the rows the question asks for, not their count"
    return Evaluation(
        GATE_ROWS_ASKED,
        False,
        "blocking",
        detail="a question asking for rows was served one count",
        suggested_repair=hint,
        repair_action=RepairAction("retry", ex.route, hint),
    )


def join_grain(ex: Execution, lens: Lens, values: DimensionValues) -> Evaluation:
    """Fails (``blocking``) when the SQL joins through a "one" side that is not unique.

    DESIGN §1 "join-grain gate": for every many-to-one or one-to-one join of the
    lens the SQL performs (:func:`reconciler.assembly.grain.joins_used`), the
    warehouse facts in ``values`` (:class:`~reconciler.assembly.grain.WarehouseFacts`)
    must say the "one" side is unique on the join key; a duplicate fans every
    matching row out, so the answer is blocked and the smart tier is asked to
    aggregate that side first. A key whose uniqueness is unknown (no facts, or the
    check failed) fails as a ``warning``: the answer is not proven safe, not
    proven wrong. Certified SQL and SQL that does not parse are not this gate's
    business (grounding reports the latter).
    """
    if ex.sql is None or ex.route == "certified_answer":
        return Evaluation(GATE_JOIN_GRAIN, True, "info")
    tree = _read_only_tree(ex.sql, ex.dialect)
    if tree is None:
        return Evaluation(GATE_JOIN_GRAIN, True, "info", detail="the SQL does not parse")
    broken: list[str] = []
    doubts: list[str] = []
    for here, join in joins_used(tree, lens):
        doubt = join_doubt(values, here, join)
        if doubt is not None:
            (broken if key_duplicated(values, join) else doubts).append(doubt)
    if broken:
        hint = (
            f"{broken[0]}; aggregate that side to one row per key before joining, "
            "or join on a unique key"
        )
        return Evaluation(
            GATE_JOIN_GRAIN,
            False,
            "blocking",
            detail="; ".join(broken),
            suggested_repair="fix the join key in the lens, or de-duplicate the table",
            repair_action=RepairAction("retry", ex.route, hint),
        )
    if doubts:
        return Evaluation(GATE_JOIN_GRAIN, False, "warning", detail="; ".join(doubts))
    return Evaluation(GATE_JOIN_GRAIN, True, "info")


@functools.lru_cache(maxsize=4096)
def _read_only_tree(sql: str, dialect: str | None) -> exp.Expr | None:
    """``sql`` parsed once per text and dialect, for gates that only read it; ``None``
    when it does not parse. A suite gates the same generations run after run (the
    fast tier is deterministic), so the tree is kept: callers must not change it. The
    statement ran, so the guard's memo holds its tree, which is shared as it is
    (:func:`reconciler.guard.shared_query`); anything the guard refuses is parsed here."""
    if dialect is not None:
        try:
            return guard.shared_query(sql, dialect)
        except UnsafeSqlError:
            pass
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None


def evaluate(
    ex: Execution, lens: Lens, values: DimensionValues | None = None
) -> tuple[Evaluation, ...]:
    """Every executable gate on ``ex``, in a fixed order; ``values`` (with the
    warehouse's join-key facts) feed the join-grain gate, which runs only when given."""
    gates = (
        execution_error(ex),
        no_answer(ex),
        grounding(ex, lens),
        result_executed(ex),
        semantic_cardinality(ex),
        rows_asked(ex),
    )
    return gates if values is None else (*gates, join_grain(ex, lens, values))


def trust_state_from_evaluations(route: Route, evaluations: Iterable[Evaluation]) -> TrustState:
    """The trust state of an answer (rules in the module docstring, first match wins)."""
    evals = tuple(evaluations)
    if any(not e.passed and e.severity == "blocking" for e in evals):
        return "blocked"
    if route == "certified_answer":
        return "certified"
    if route in ("clarify", "refuse"):
        return "not_applicable"
    passed = {e.gate for e in evals if e.passed}
    warned = any(not e.passed and e.severity == "warning" for e in evals)
    if (
        route in ("generated", "research")
        and {GATE_GROUNDING, GATE_EXECUTED} <= passed
        and not warned
    ):
        return "grounded"
    return ROUTE_FALLBACK[route]


def first_repair(evaluations: Sequence[Evaluation]) -> RepairAction | None:
    """The repair action of the first failed evaluation that has one, else ``None``."""
    return next((e.repair_action for e in evaluations if not e.passed and e.repair_action), None)


def _ungrounded(ex: Execution, detail: str) -> Evaluation:
    return Evaluation(
        GATE_GROUNDING,
        False,
        "warning",
        detail=detail,
        suggested_repair="use only the lens's models and columns",
        repair_action=RepairAction("retry", ex.route, f"use only lens assets; {detail}"),
    )


def _lens_vocabulary(lens: Lens, dialect: str) -> tuple[set[str], set[str]]:
    tables: set[str] = set()
    columns: set[str] = set()
    for name, model in lens.models.items():
        tables.add(name.lower())
        tables.add(model.table.split(".")[-1].strip('"').lower())
        columns.update(k.lower() for k in model.primary_key)
        for join in model.joins:
            columns.update(k.lower() for pair in join.on.items() for k in pair)
        for col in (*model.dimensions, *model.time_dimensions, *model.facts):
            columns.add(col.name.lower())
            if col.expr:
                columns.update(_identifiers(col.expr, dialect))
    for metric in lens.metrics.values():
        columns.update(_identifiers(metric.expression, dialect))
        for f in metric.filters:
            columns.update(_identifiers(f, dialect))
    return tables, columns


def _identifiers(sql: str, dialect: str) -> set[str]:
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column) if c.name}


def _defined_names(tree: exp.Expr) -> set[str]:
    names: set[str] = set()
    for node in tree.find_all(exp.Alias, exp.TableAlias, exp.CTE):
        if node.alias:
            names.add(node.alias.lower())
        if isinstance(node, exp.TableAlias):
            names.update(c.name.lower() for c in node.columns)
    return names
