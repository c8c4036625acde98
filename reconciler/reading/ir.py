"""What the ``fast`` tier reads a question into: a :class:`Plan` of measures (pure).

:mod:`reconciler.generators.fast` builds the plan, :mod:`reconciler.reading.compile`
compiles it into SQL, and :class:`Declined` is how either says the question is outside
the grammar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

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


class Declined(Exception):
    """The question is outside the grammar; ``reason`` says where.

    Control flow inside the fast tier, not a :class:`~reconciler.errors.DstError`:
    :func:`reconciler.generators.fast.compile_request` turns it into a declined
    :class:`~reconciler.generators.Generation`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
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
            ("with amount more than 100").
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
            *(m for m, _ in self.flags),
            *(m for m, _, _, _ in self.bounds),
            *((self.time[0],) if self.time else ()),
            *self.measure.models,
            *(m for extra in self.extra for m in extra.models),
        ]
        return tuple(dict.fromkeys(named))


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
