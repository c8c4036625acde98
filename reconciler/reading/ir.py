"""What the ``fast`` tier reads a question into: a :class:`Plan` of measures (pure).

:mod:`reconciler.generators.fast` builds the plan, :mod:`reconciler.reading.compile`
compiles it into SQL, and :class:`Declined` is how either says the question is outside
the grammar.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

import sqlglot
from sqlglot import exp

from reconciler.assembly.retrieval import metric_models
from reconciler.lens import Lens
from reconciler.reading.today import Day

FACT_FUNCTIONS: Mapping[str, type[exp.Func]] = {
    "avg": exp.Avg,
    "sum": exp.Sum,
    "min": exp.Min,
    "max": exp.Max,
}


class DeclineKind(enum.StrEnum):
    """Why the ``fast`` tier declined a question: the class of its decline.

    The message says what in the question declined and what to say instead; the
    kind groups the messages so a caller (a suite, a report, a golden case) can tell
    a gap in the grammar from a guess it refused.
    """

    UNKNOWN_TERM = "unknown_term"
    """A word or name no lens phrase, grammar word or column accounts for."""
    AMBIGUOUS_READING = "ambiguous_reading"
    """A phrase reads several ways (two metrics, two columns, a count or a filter …):
    which is meant would be a guess."""
    TWO_READINGS = "two_readings"
    """Two readers read the whole question into different SQL."""
    UNSUPPORTED_CONSTRUCT = "unsupported_construct"
    """Every word is known, but the grammar does not read them together (a ranking
    with no count, a change with a comparison …)."""
    NO_JOIN_PATH = "no_join_path"
    """No single safe join path: none, several, one that fans rows out, or a join
    whose grain the warehouse does not confirm."""
    OUT_OF_PERIOD = "out_of_period"
    """A period the lens's dates cannot answer: after its pinned ``as_of``, relative
    with no ``as_of``, not a calendar date, or a range that ends before it starts."""
    UNSAFE_RESULT = "unsafe_result"
    """The SQL would run but its answer would be wrong: rows fanned out or lost,
    groups that do not add up, an aggregate that does not sum."""
    MISSING_IN_LENS = "missing_in_lens"
    """The lens lacks a declaration the reading needs (a primary key, a time
    dimension, a person dimension)."""
    EXCLUDED = "excluded"
    """The lens's ``exclusions`` or ``clarify`` terms, or a metric assembly did not select."""
    BUILD_FAILED = "build_failed"
    """SQL could not be built or parsed (an exemplar's, or the tier's own)."""


class Declined(Exception):
    """The question is outside the grammar; ``kind`` says how, ``reason`` says where.

    Control flow inside the fast tier, not a :class:`~reconciler.errors.DstError`:
    :func:`reconciler.generators.fast.compile_request` turns it into a declined
    :class:`~reconciler.generators.Generation`.

    Args:
        kind: the class of the decline (:class:`DeclineKind`).
        reason: what in the question declined, and what to ask instead.
    """

    def __init__(self, kind: DeclineKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class Measure:
    """What a query aggregates: a lens metric, or an aggregate of one model fact.

    Attributes:
        name: the output column alias (the metric's name, or ``avg_amount``).
        model: the model the aggregate reads (the FROM table).
        expression: aggregate SQL whose bare columns are ``model``'s columns.
        filters: SQL conditions the measure always carries (a metric's ``filters``).
        models: every model the expression and filters read (for joins).
        metric: the metric's name, or ``None`` for a fact aggregate.
        function: for a fact aggregate, its :data:`FACT_FUNCTIONS` key;
            ``count_distinct`` for a count of entities (``COUNT(DISTINCT key)``).
    """

    name: str
    model: str
    expression: str
    filters: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    metric: str | None = None
    function: str | None = None

    @classmethod
    def of_metric(cls, lens: Lens, name: str) -> Measure:
        """The lens metric ``name``: its expression, filters and the models they read."""
        m = lens.metrics[name]
        return cls(name, m.model, m.expression, m.filters, metric_models(lens, name), name)

    @classmethod
    def of_fact(cls, lens: Lens, model: str, fact: str, function: str) -> Measure:
        """``function`` (``avg``, ``sum``, ``min``, ``max``) of ``model``'s fact ``fact``,
        aliased ``<function>_<fact>``; the fact's own ``expr`` is expanded when compiled."""
        sql = FACT_FUNCTIONS[function](this=exp.column(fact)).sql(dialect=lens.config.dialect)
        return cls(f"{function}_{fact}", model, sql, (), (model,), None, function)


@dataclass(frozen=True)
class Plan:
    """A question read into its semantic parts, before it is compiled to SQL.

    Attributes:
        measure: what is aggregated; its model is the FROM table (``base``).
        breakdowns: ``(model, dimension)`` pairs in question order.
        filters: ``(model, dimension, exact stored value)`` equality filters.
        excluded: ``(model, dimension, exact stored value)`` negated value filters
            ("not from Oslo", :mod:`reconciler.reading.phrases.negation`): ``<>``, which
            leaves out a row whose column is NULL.
        flags: ``(model, boolean dimension)`` pairs that must be TRUE.
        time: ``(model, time dimension)`` used by the grain and the period, if any.
        grain: DATE_TRUNC unit of the time bucket, if any.
        period: half-open ``[start, end)`` date range, if any (a bound may be a
            :class:`~reconciler.reading.today.Today`, for ``as_of: today``).
        rank: ``(descending, n)`` for top/bottom N, if any.
        extra: further measures on the same model, as more columns.
        compared: half-open ranges of compared periods (one bucket each), if any.
        share: the share word (``share``, ``percentage`` …) when the question asks
            for the measure's share of the total, else ``None``.
        ties: a ranking keeps every row tied within the first ``n``.
        change: ``(grain, "change" | "percent", first bucket shown or None)`` for a
            change between consecutive buckets; ``period`` then starts one bucket
            earlier than the question's period, so its first bucket has a change.
        joined: plans of measures on other models, with the same keys, filters and
            period; each is aggregated apart, then stacked and grouped on the keys.
        bounds: ``(model, fact, operator, whole number)`` comparison filters
            ("with amount more than 100"; :func:`comparison`).
        order: ``(output column, descending)`` an ordering phrase asked for
            ("sorted by region"), first in the ORDER BY; the other keys break ties.
        bucket_at: how many breakdown columns come before the time bucket
            (:mod:`reconciler.reading.phrases.columns`).
        hidden_keys: ``(model, column)`` grouped by but not shown: the key of each
            person a breakdown names (:mod:`reconciler.reading.phrases.persons`).
        weekdays: days of the week (0 Sunday … 6 Saturday) the ``time`` must fall on
            ("on weekends", :mod:`reconciler.reading.phrases.weekdays`), if any.
        months: ``(stored value, month number)`` of the month names the ``order``
            column holds, when it is ordered in calendar order
            (:mod:`reconciler.reading.phrases.months`), else empty.
    """

    measure: Measure
    breakdowns: tuple[tuple[str, str], ...] = ()
    filters: tuple[tuple[str, str, str], ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    time: tuple[str, str] | None = None
    grain: str | None = None
    period: tuple[Day, Day] | None = None
    rank: tuple[bool, int] | None = None
    extra: tuple[Measure, ...] = ()
    compared: tuple[tuple[date, date], ...] = ()
    share: str | None = None
    ties: bool = False
    change: tuple[str, str, date | None] | None = None
    joined: tuple[Plan, ...] = ()
    order: tuple[str, bool] | None = None
    bounds: tuple[tuple[str, str, str, str], ...] = ()
    hidden_keys: tuple[tuple[str, str], ...] = ()
    bucket_at: int = 0
    weekdays: tuple[int, ...] = ()
    months: tuple[tuple[str, int], ...] = ()
    excluded: tuple[tuple[str, str, str], ...] = ()

    @property
    def base(self) -> str:
        """The measure's model: the FROM table every join starts from."""
        return self.measure.model

    def models(self) -> tuple[str, ...]:
        """Models the plan reads directly (before adding the join paths between them)."""
        named = [
            self.base,
            *(m for m, _ in self.breakdowns),
            *(m for m, _, _ in self.filters),
            *(m for m, _, _ in self.excluded),
            *(m for m, _ in self.flags),
            *(m for m, _, _, _ in self.bounds),
            *((self.time[0],) if self.time else ()),
            *self.measure.models,
            *(m for extra in self.extra for m in extra.models),
        ]
        return tuple(dict.fromkeys(named))

    def reads_as(self) -> str:
        """The plan in one compact, stable line (a golden case's ``reads_as``).

        ``<measures> by <keys> where <conditions> during <period> <ranking> …``, then
        ``+ (<part>)`` for each part aggregated on another model and joined on the keys:
        a metric by name, a fact aggregate as ``avg(model.fact)``, a count of
        entities as ``count(model)``; a time bucket as ``month(model.column)`` among
        the keys where it stands; each part only when the plan has it.
        """
        measures = ", ".join(_measure_form(m) for m in (self.measure, *self.extra))
        parts = [measures]
        keys = [f"{m}.{d}" for m, d in self.breakdowns]
        if self.grain is not None and self.time is not None:
            keys.insert(self.bucket_at, f"{self.grain}({self.time[0]}.{self.time[1]})")
        keys += [f"key {m}.{c}" for m, c in self.hidden_keys]
        if keys:
            parts.append("by " + ", ".join(keys))
        said: dict[str, list[str]] = {}
        for m, d, v in self.filters:
            said.setdefault(f"{m}.{d}", []).append(repr(v))
        conditions = [
            f"{c}={vs[0]}" if len(vs) == 1 else f"{c} in ({','.join(vs)})" for c, vs in said.items()
        ]
        conditions += [f"{m}.{d}<>{v!r}" for m, d, v in self.excluded]
        conditions += [f"{m}.{d}" for m, d in self.flags]
        conditions += [
            f"{m}.{f} {op} ({n})" if op == "in" else f"{m}.{f} {op} {n}"
            for m, f, op, n in self.bounds
        ]
        if self.weekdays and self.time is not None:
            days = ",".join(str(d) for d in self.weekdays)
            conditions.append(f"dow({self.time[0]}.{self.time[1]}) in ({days})")
        if conditions:
            parts.append("where " + " and ".join(conditions))
        if self.period is not None:
            on = f" on {self.time[0]}.{self.time[1]}" if self.time else ""
            parts.append(f"during {_span(*self.period)}{on}")
        if self.compared:
            parts.append("compared " + " vs ".join(_span(a, b) for a, b in self.compared))
        if self.share is not None:
            parts.append(f"as {self.share} of total")
        if self.change is not None:
            parts.append(f"{self.change[1]} over {self.change[0]}")
        if self.rank is not None:
            end = "top" if self.rank[0] else "bottom"
            parts.append(f"{end} {self.rank[1]}" + (" with ties" if self.ties else ""))
        if self.order is not None:
            parts.append(f"ordered by {self.order[0]} {'desc' if self.order[1] else 'asc'}")
        if self.months:
            parts.append("in calendar order")
        parts += [f"+ ({p.reads_as()})" for p in self.joined]
        return " ".join(parts)


def _measure_form(measure: Measure) -> str:
    """A metric by name (its filters are its own); else the aggregate, with the
    conditions the question put on its rows (``count(papers if year = 2020)``)."""
    if measure.metric is not None:
        return measure.metric
    if measure.function == "count_distinct":
        form = measure.model
    elif measure.function is None:
        form = measure.name
    else:
        form = f"{measure.model}.{measure.name.removeprefix(f'{measure.function}_')}"
    if measure.filters:
        form += " if " + " and ".join(measure.filters)
    if measure.function is None:
        return form
    return f"{'count' if measure.function == 'count_distinct' else measure.function}({form})"


def _span(start: Day, end: Day) -> str:
    return f"[{_day(start)}, {_day(end)})"


def _day(day: Day) -> str:
    if isinstance(day, date):
        return "-inf" if day == date.min else "+inf" if day == date.max else day.isoformat()
    unit = f"{day.unit}(today)" if day.unit else "today"
    return unit if day.n == 0 else f"{unit}{day.n:+d} {day.step}"


_COMPARISONS: Mapping[str, type[exp.Binary]] = {
    ">": exp.GT,
    ">=": exp.GTE,
    "<": exp.LT,
    "<=": exp.LTE,
    "=": exp.EQ,
}


def comparison(column: exp.Expr, op: str, number: str) -> exp.Expr:
    """``column <op> <number>``: the condition of one comparison a reading carries.

    ``op`` is ``>``, ``>=``, ``<``, ``<=``, ``=``, or ``in`` with ``number`` the whole
    numbers joined by commas ("whose birth year is either 1948 or 1949": ``in``,
    ``1948,1949``). ``column`` is used as given (copy it to reuse it).
    """
    if op == "in":
        return column.isin(*(exp.Literal.number(n) for n in number.split(",")))
    return _COMPARISONS[op](this=column, expression=exp.Literal.number(number))


def null_note(column: str, value: str) -> str:
    """The comment a ``<column> <> <value>`` condition carries: NULL rows are left out."""
    return f" rows whose {column} is NULL are not known to differ from {value!r} and are left out "


# The two kinds of a two-measure spelling (:class:`TwoMeasures`).
RATIO, DIFFERENCE = "ratio", "difference"


@dataclass(frozen=True)
class TwoMeasures:
    """A ratio or difference spelling found in a question.

    Attributes:
        kind: :data:`RATIO` or :data:`DIFFERENCE`.
        word: the column name's middle word (``per``, ``minus``, ``share_of``,
            ``percentage_of``).
        percent: the ratio is shown times 100.
        listed: the question with the spelling's words taken out and the two
            measures joined by ``and`` ("net revenue and orders by region").
        per: the spelling is a bare ``per``, which may as well be a breakdown.
        sides: ``(words before the spelling, A, B)`` as written.
    """

    kind: str
    word: str
    percent: bool
    listed: str
    per: bool
    sides: tuple[str, str, str] = ("", "", "")


Read = tuple[str, str]
"""``(SQL, reads_as)`` of one reading."""


def sql_form(lens: Lens, reader: str, sql: str) -> str:
    """The text form of SQL a shape wrote without a plan: ``reader(model: columns)``.

    The model is the one whose table the outermost ``FROM`` reads (the table name when
    no model has it); the columns are the outermost ``SELECT``'s names, in order.
    """
    tree = sqlglot.parse_one(sql, read=lens.config.dialect)
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    base = "?"
    if select is not None:
        source = select.args.get("from") or select.args.get("from_")
        table = source.find(exp.Table) if source is not None else None
        if table is not None:
            tables = {m.table.split(".")[-1].lower(): m.name for m in lens.models.values()}
            base = tables.get(table.name.lower(), table.name)
    columns = ", ".join(select.named_selects) if select is not None else ""
    return f"{reader}({base}: {columns})"
