"""The ``fast`` tier: a deterministic semantic compiler from questions to SQL (pure).

It understands one small grammar and declines everything else, because a wrong
answer is worse than no answer. A question is read as

* exactly one metric (name, label or synonym);
* optional breakdown dimensions (at most two), on the metric's model or on a model
  reached through declared joins (``orders → customers → regions``);
* an optional time grain (``monthly``, ``by quarter`` …) on the nearest time dimension;
* an optional period: a year (``2024``), a quarter (``Q3 2024``, ``third quarter of
  2024``) or a month (``March 2024``), as a half-open range;
* optional equality filters on dimension values the warehouse holds (``values``) or
  the lens lists in ``sample_values`` (``for Electronics``, ``in the West region``);
* an optional ranking: ``top 5 …``, ``which 3 … lowest …``, ``bottom 2 …``.

Every word must be accounted for: a lens phrase, a grammar word, a stopword or the
name of a model the query uses. Anything left over — ``since``, ``not``, ``weather``
— declines, and so does a question holding one of the lens's ``exclusions`` or
``clarify`` terms, an ambiguous phrase, or a dimension no safe join path reaches.

The SQL follows the conventions of the question grammar: time bucket, then
dimensions in question order, then the metric; bucket aliased by its grain and cast
to DATE; time series ordered by bucket, rankings by the metric, breakdowns by the
metric descending (dimensions break ties).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assembly import (
    GRAIN_WORDS,
    MONTHS,
    QUARTER_RE,
    STOPWORDS,
    YEAR_RE,
    GenerationRequest,
    Mention,
    Retrieval,
    Target,
    join_paths,
    metric_models,
    model_named,
    model_nouns,
    normalize,
    retrieve,
    time_models,
)
from reconciler.generators import DimensionValues, Generation
from reconciler.lens import Join, Lens, Model

TIER = "fast"
MAX_DIMENSIONS = 2

_GRAIN_ORDER = ("day", "week", "month", "quarter", "year")
_DESCENDING = frozenset({"top", "highest", "largest", "biggest", "most", "greatest"})
_ASCENDING = frozenset({"bottom", "lowest", "smallest", "least", "fewest"})
_NUMBERS = "one two three four five six seven eight nine ten"
_NUMBER_WORDS = {w: i for i, w in enumerate(_NUMBERS.split(), start=1)}
_ORDINAL_QUARTERS = {
    w: i
    for i, ws in enumerate(("", "first 1st", "second 2nd", "third 3rd", "fourth 4th"))
    for w in ws.split()
}
# Aggregation words a question may add, and the aggregates the metric must use for
# the word to be redundant rather than a different question ("average revenue").
_AGGREGATE_WORDS: Mapping[str, tuple[type[exp.Expr], ...]] = {
    "total": (exp.Sum, exp.Count),
    "sum": (exp.Sum,),
    "number": (exp.Count, exp.Sum),
    "count": (exp.Count,),
    "average": (exp.Avg, exp.Div),
    "avg": (exp.Avg, exp.Div),
    "mean": (exp.Avg, exp.Div),
}
_NUMBER_RE = re.compile(r"^-?\d+(\.\d+)?$")
_NUMERIC_TYPES = re.compile(
    r"^(int|bigint|smallint|number|numeric|decimal|float|double|real)", re.IGNORECASE
)


class Declined(Exception):
    """The question is outside the grammar; ``reason`` says where.

    Control flow inside this tier, not a :class:`~reconciler.errors.DstError`:
    :func:`compile_request` turns it into a declined :class:`Generation`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Plan:
    """A question compiled to its semantic parts, before rendering.

    Attributes:
        metric: the metric's name.
        base: the metric's model (the FROM table).
        breakdowns: ``(model, dimension)`` pairs in question order.
        filters: ``(model, dimension, exact stored value)`` equality filters.
        time: ``(model, time dimension)`` used by the grain and the period, if any.
        grain: DATE_TRUNC unit of the time bucket, if any.
        period: half-open ``[start, end)`` date range, if any.
        rank: ``(descending, n)`` for top/bottom N, if any.
    """

    metric: str
    base: str
    breakdowns: tuple[tuple[str, str], ...] = ()
    filters: tuple[tuple[str, str, str], ...] = ()
    time: tuple[str, str] | None = None
    grain: str | None = None
    period: tuple[date, date] | None = None
    rank: tuple[bool, int] | None = None


@dataclass
class _Reading:
    """What the grammar words outside lens phrases said (mutable while scanning)."""

    period: tuple[date, date, str] | None = None
    grains: dict[str, int] = field(default_factory=dict)
    directions: set[bool] = field(default_factory=set)
    numbers: list[int] = field(default_factory=list)
    model_nouns: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)


def _period_at(toks: tuple[str, ...], i: int, free: set[int]) -> tuple[int, date, date, str] | None:
    """A period phrase starting at ``i``: ``(end, start date, end date, unit)``."""

    def tok(k: int) -> str:
        return toks[k] if k < len(toks) and k in free else ""

    def year(k: int) -> int | None:
        return int(tok(k)) if YEAR_RE.match(tok(k)) else None

    def skip_of(k: int) -> int:
        return k + 1 if tok(k) in ("of", "in") else k

    def quarter(y: int, q: int, end: int) -> tuple[int, date, date, str]:
        start = date(y, 3 * q - 2, 1)
        stop = date(y + 1, 1, 1) if q == 4 else date(y, 3 * q + 1, 1)
        return end, start, stop, "quarter"

    q_match = QUARTER_RE.match(tok(i))
    if q_match:
        k = skip_of(i + 1)
        y = year(k)
        return quarter(y, int(q_match.group(1)), k + 1) if y else None
    if tok(i) in _ORDINAL_QUARTERS and tok(i + 1) == "quarter":
        k = skip_of(i + 2)
        y = year(k)
        return quarter(y, _ORDINAL_QUARTERS[tok(i)], k + 1) if y else None
    k = i + 2 if (tok(i), tok(i + 1)) == ("month", "of") else i
    if tok(k) in MONTHS:
        m = MONTHS[tok(k)]
        j = skip_of(k + 1)
        y = year(j)
        if y is None:
            return None
        stop = date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1)
        return j + 1, date(y, m, 1), stop, "month"
    k = i + 1 if tok(i) == "year" else i
    y = year(k)
    if y is not None:
        q2 = QUARTER_RE.match(tok(k + 1))
        if q2 and k == i:
            return quarter(y, int(q2.group(1)), k + 2)
        return k + 1, date(y, 1, 1), date(y + 1, 1, 1), "year"
    return None


def _read_grammar(lens: Lens, found: Retrieval) -> _Reading:
    """Classify every token outside a lens phrase, or record it as unknown."""
    toks = found.tokens
    free = set(range(len(toks))) - found.covered()
    nouns = model_nouns(lens)
    longest_noun = max((len(k) for k in nouns), default=0)
    r = _Reading()
    i = 0
    while i < len(toks):
        if i not in free:
            i += 1
            continue
        period = _period_at(toks, i, free)
        if period is not None:
            end, start, stop, unit = period
            if r.period is not None and r.period != (start, stop, unit):
                raise Declined("the question names more than one period")
            r.period = (start, stop, unit)
            i = end
            continue
        noun = next(
            (
                (n, nouns[toks[i : i + n]])
                for n in range(longest_noun, 0, -1)
                if toks[i : i + n] in nouns and all(k in free for k in range(i, i + n))
            ),
            None,
        )
        t = toks[i]
        if noun is not None:
            r.model_nouns.add(noun[1])
            i += noun[0]
            continue
        if t in GRAIN_WORDS:
            r.grains.setdefault(GRAIN_WORDS[t], i)
        elif t in _DESCENDING or t in _ASCENDING:
            r.directions.add(t in _DESCENDING)
        elif t.isdigit() or t in _NUMBER_WORDS:
            r.numbers.append(int(t) if t.isdigit() else _NUMBER_WORDS[t])
        elif t in _AGGREGATE_WORDS:
            r.aggregates.add(t)
        elif t not in STOPWORDS:
            r.unknown.append(found.words[i])
        i += 1
    return r


def _one_path(lens: Lens, base: str, target: str) -> tuple[tuple[str, Join], ...]:
    paths = join_paths(lens, base, target)
    if not paths:
        raise Declined(f"no declared join leads from model {base!r} to model {target!r}")
    if len(paths) > 1:
        routes = " / ".join("→".join([base, *(j.to for _, j in p)]) for p in paths)
        raise Declined(f"model {target!r} is reachable from {base!r} in several ways ({routes})")
    for here, join in paths[0]:
        if join.relationship == "one_to_many":
            raise Declined(f"join {here} → {join.to} is one_to_many and would fan out the metric")
    return paths[0]


def _resolve(lens: Lens, base: str, targets: tuple[Target, ...], what: str, phrase: str) -> Target:
    """The one target reachable from ``base`` (through a safe join path), else decline."""
    reachable = [t for t in targets if join_paths(lens, base, t.model)]
    if not reachable:
        _one_path(lens, base, targets[0].model)
    places = sorted({(t.model, t.name) for t in reachable})
    if len(places) > 1:
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(f"{what} {phrase!r} is ambiguous: it could mean {listed}")
    chosen = [t for t in reachable if (t.model, t.name) == places[0]]
    if len({t.value for t in chosen}) > 1:
        listed = ", ".join(repr(t.value) for t in chosen)
        raise Declined(f"{phrase!r} matches several stored values ({listed})")
    _one_path(lens, base, chosen[0].model)
    return chosen[0]


def _plural(found: Retrieval, index: int) -> bool:
    return found.words[index] != found.tokens[index]


def parse(
    lens: Lens,
    question: str,
    values: DimensionValues,
    allowed_metrics: tuple[str, ...] | None = None,
) -> Plan:
    """Compile ``question`` into a :class:`Plan`.

    Args:
        lens: the lens whose phrases, models and joins are used.
        question: the question as asked.
        values: ``{(model, dimension): distinct values}`` read from the warehouse.
        allowed_metrics: when given, the metrics assembly selected; a different
            reading declines rather than silently using an unrecorded asset.

    Raises:
        Declined: the question is outside the grammar, names no or several
            metrics, names something ambiguous or unknown, or needs a join the
            lens does not declare.
    """
    found = retrieve(lens, question, values)
    _check_terms(lens, found.tokens)

    def phrase(m: Mention) -> str:
        return " ".join(found.words[m.start : m.end])

    metric_mentions = [m for m in found.mentions if m.kind == "metric"]
    for m in metric_mentions:
        if len(m.targets) > 1:
            names = ", ".join(sorted(t.name for t in m.targets))
            raise Declined(f"{phrase(m)!r} could mean several metrics ({names})")
    metric_names = sorted({m.targets[0].name for m in metric_mentions})
    if not metric_names:
        raise Declined("the question names no metric of the lens")
    if len(metric_names) > 1:
        raise Declined(f"the question names several metrics ({', '.join(metric_names)})")
    metric = metric_names[0]
    if allowed_metrics is not None and metric not in allowed_metrics:
        raise Declined(f"metric {metric!r} was not selected by assembly")
    base = lens.metrics[metric].model

    reading = _read_grammar(lens, found)
    if reading.unknown:
        listed = ", ".join(repr(w) for w in reading.unknown)
        raise Declined(f"unrecognised words: {listed}")

    # A dimension phrase right next to a value of that dimension ("the West region",
    # "segment Enterprise"), or one that is also the name of the value's model
    # ("Enterprise customers"), qualifies the value instead of asking for a breakdown.
    dims = [m for m in found.mentions if m.kind in ("dimension", "time_dimension")]
    nouns = model_nouns(lens)
    qualifiers: set[Mention] = set()
    filters: list[tuple[str, str, str]] = []
    for v in (m for m in found.mentions if m.kind == "value"):
        targets = v.targets
        for d in dims:
            if d.end == v.start or d.start == v.end:
                named = {(t.model, t.name) for t in d.targets}
                noun = nouns.get(found.tokens[d.start : d.end])
                narrowed = tuple(t for t in targets if (t.model, t.name) in named) or tuple(
                    t for t in targets if t.model == noun
                )
                if narrowed:
                    targets = narrowed
                    qualifiers.add(d)
        chosen = _resolve(lens, base, targets, "value", phrase(v))
        assert chosen.value is not None
        new = (chosen.model, chosen.name, chosen.value)
        if any(f[:2] == new[:2] and f != new for f in filters):
            raise Declined(f"several values of {chosen.model}.{chosen.name} are named")
        if new not in filters:
            filters.append(new)

    breakdowns: list[tuple[str, str]] = []
    explicit_time: tuple[str, str] | None = None
    plural_breakdown = False
    for d in dims:
        if d in qualifiers:
            continue
        chosen = _resolve(lens, base, d.targets, "dimension", phrase(d))
        place = (chosen.model, chosen.name)
        if chosen.kind == "time_dimension":
            if explicit_time not in (None, place):
                raise Declined("the question names several time dimensions")
            explicit_time = place
            continue
        if place not in breakdowns:
            breakdowns.append(place)
        plural_breakdown = plural_breakdown or _plural(found, d.end - 1)
    if len(breakdowns) > MAX_DIMENSIONS:
        raise Declined(f"more than {MAX_DIMENSIONS} breakdown dimensions")

    if len(reading.grains) > 1:
        raise Declined(f"several time grains ({', '.join(sorted(reading.grains))})")
    grain = next(iter(reading.grains), None)
    period = reading.period
    if grain and period and _GRAIN_ORDER.index(grain) >= _GRAIN_ORDER.index(period[2]):
        raise Declined(f"a {grain} breakdown within one {period[2]} is not a question I can read")
    time: tuple[str, str] | None = None
    if explicit_time is not None:
        if grain is None and period is None:
            raise Declined(f"time dimension {explicit_time[1]!r} named without a grain or period")
        time = explicit_time
    elif grain is not None or period is not None:
        candidates = time_models(lens, base)
        if len(candidates) != 1:
            raise Declined(f"no single time dimension is reachable from model {base!r}")
        _one_path(lens, base, candidates[0])
        col = lens.models[candidates[0]].time_dimension()
        assert col is not None
        time = (candidates[0], col.name)

    rank = _rank(reading, found, grain, bool(breakdowns), plural_breakdown)
    _check_aggregates(lens, metric, reading)

    involved = {base, *(m for m, _ in breakdowns), *(m for m, _, _ in filters)}
    if time:
        involved.add(time[0])
    for target in sorted(involved | set(metric_models(lens, metric))):
        involved.update(j.to for _, j in _one_path(lens, base, target))
    stray = ", ".join(sorted(reading.model_nouns - involved))
    if stray:
        raise Declined(f"the question names model(s) {stray} that the query would not use")
    span = (period[0], period[1]) if period else None
    return Plan(metric, base, tuple(breakdowns), tuple(filters), time, grain, span, rank)


def _check_terms(lens: Lens, tokens: tuple[str, ...]) -> None:
    """Decline a question holding one of the lens's excluded or clarify terms."""
    text = f" {' '.join(tokens)} "
    for term in lens.config.exclusions:
        if f" {normalize(term)} " in text:
            raise Declined(f"the lens excludes questions about {term!r}")
    for clarify in lens.config.clarify:
        if f" {normalize(clarify.term)} " in text:
            raise Declined(f"{clarify.term!r} needs clarification: {clarify.ask}")


def _rank(
    reading: _Reading, found: Retrieval, grain: str | None, has_dims: bool, plural_breakdown: bool
) -> tuple[bool, int] | None:
    if not reading.directions:
        if reading.numbers:
            raise Declined(f"the number {reading.numbers[0]} has no meaning in this question")
        return None
    if len(reading.directions) > 1:
        raise Declined("the question asks for both the highest and the lowest")
    if not has_dims and grain is None:
        raise Declined("a top/bottom ranking needs something to rank (a dimension or grain)")
    if len(reading.numbers) > 1:
        raise Declined("the question names several counts")
    descending = next(iter(reading.directions))
    if reading.numbers:
        n = reading.numbers[0]
        if n < 1:
            raise Declined("a ranking of zero rows")
        return descending, n
    grain_plural = grain is not None and _plural(found, reading.grains[grain])
    if plural_breakdown or (not has_dims and grain_plural):
        raise Declined("a top/bottom ranking without a count")
    return descending, 1


def _check_aggregates(lens: Lens, metric: str, reading: _Reading) -> None:
    if not reading.aggregates:
        return
    tree = sqlglot.parse_one(lens.metrics[metric].expression, read=lens.config.dialect)
    kinds: set[type[exp.Expr]] = {
        type(node) for node in tree.walk() if isinstance(node, exp.AggFunc)
    }
    if isinstance(tree, exp.Div):
        kinds.add(exp.Div)
    for word in sorted(reading.aggregates):
        allowed = _AGGREGATE_WORDS[word]
        if not kinds or not any(issubclass(k, allowed) for k in kinds):
            raise Declined(f"{word!r} does not fit metric {metric!r} ({tree.sql()})")
        if word in ("total", "sum") and kinds - {exp.Sum, exp.Count}:
            raise Declined(f"{word!r} does not fit metric {metric!r} ({tree.sql()})")


class _Renderer:
    """Builds the SQL of a plan with sqlglot, in the lens's dialect."""

    def __init__(self, lens: Lens, plan: Plan) -> None:
        self.lens = lens
        self.plan = plan
        self.dialect = lens.config.dialect
        self.aliases: dict[str, str] = {}
        self.edges: list[tuple[str, Join]] = []
        needed = [*(m for m, _ in plan.breakdowns), *(m for m, _, _ in plan.filters)]
        if plan.time:
            needed.append(plan.time[0])
        needed.extend(metric_models(lens, plan.metric))
        self._alias(plan.base)
        for target in needed:
            for here, join in _one_path(lens, plan.base, target):
                if join.to not in self.aliases:
                    self._alias(join.to)
                    self.edges.append((here, join))

    def _alias(self, model: str) -> None:
        initials = "".join(part[0] for part in model.lower().split("_") if part) or "t"
        alias, n = initials, 1
        while alias in self.aliases.values():
            n += 1
            alias = f"{initials}{n}"
        self.aliases[model] = alias

    def expr(self, sql: str, model: Model, *, expand: bool = True) -> exp.Expr:
        """``sql`` with bare columns qualified by ``model``'s alias.

        A bare column naming one of the model's columns that has its own ``expr``
        is replaced by that expression (once, not recursively); a column qualified
        by a model or table name is re-qualified with that model's alias.
        """
        own = {c.name: c for c in model.columns()}
        alias = self.aliases[model.name]

        def fix(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
                return node
            if not node.table:
                col = own.get(node.name)
                if expand and col is not None and col.expr and col.expr != col.name:
                    return exp.Paren(this=self.expr(col.expr, model, expand=False))
                new = node.copy()
                new.set("table", exp.to_identifier(alias))
                return new
            target = model_named(self.lens, node.table)
            if target is None or target not in self.aliases:
                raise Declined(f"{node.sql()} names a table the query does not join")
            new = node.copy()
            new.set("table", exp.to_identifier(self.aliases[target]))
            return new

        return sqlglot.parse_one(sql, read=self.dialect).transform(fix)

    def column(self, model_name: str, column: str) -> exp.Expr:
        model = self.lens.models[model_name]
        col = next(c for c in model.columns() if c.name == column)
        return self.expr(col.sql, model, expand=False)

    def table(self, model_name: str) -> exp.Expr:
        model = self.lens.models[model_name]
        table = exp.to_table(model.table, dialect=self.dialect)
        return exp.alias_(table, self.aliases[model_name], table=True)

    def render(self) -> str:
        plan, lens = self.plan, self.lens
        metric = lens.metrics[plan.metric]
        base = lens.models[plan.base]
        keys: list[tuple[exp.Expr, str]] = []
        if plan.grain and plan.time:
            trunc = sqlglot.parse_one(
                f"CAST(DATE_TRUNC('{plan.grain}', __t) AS DATE)", read="duckdb"
            )
            time_col = self.column(*plan.time)
            bucket = trunc.transform(lambda n: time_col.copy() if isinstance(n, exp.Column) else n)
            keys.append((bucket, plan.grain))
        keys.extend((self.column(m, d), d) for m, d in plan.breakdowns)
        measure = self.expr(metric.expression, base)
        query = exp.select(
            *(exp.alias_(e, a) for e, a in keys), exp.alias_(measure, metric.name)
        ).from_(self.table(plan.base))
        for here, join in self.edges:
            left, right = self.aliases[here], self.aliases[join.to]
            keys_eq = (exp.column(a, left).eq(exp.column(b, right)) for a, b in join.on.items())
            query = query.join(self.table(join.to), on=exp.and_(*keys_eq), join_type="inner")
        conditions = [self.expr(f, base) for f in metric.filters]
        if plan.period and plan.time:
            start, stop = (exp.cast(exp.Literal.string(d.isoformat()), "date") for d in plan.period)
            conditions.append(self.column(*plan.time) >= start)
            conditions.append(self.column(*plan.time) < stop)
        for model, dim, value in plan.filters:
            conditions.append(self.column(model, dim).eq(self._literal(model, dim, value)))
        if conditions:
            query = query.where(exp.and_(*conditions))
        if keys:
            query = query.group_by(*(e.copy() for e, _ in keys))
        order: list[exp.Ordered] = []
        if plan.rank:
            order.append(exp.Ordered(this=measure.copy(), desc=plan.rank[0]))
        elif plan.grain is None and keys:
            order.append(exp.Ordered(this=measure.copy(), desc=True))
        order.extend(exp.Ordered(this=e.copy(), desc=False) for e, _ in keys)
        if order:
            query = query.order_by(*order)
        if plan.rank:
            query = query.limit(plan.rank[1])
        return query.sql(dialect=self.dialect, pretty=True)

    def _literal(self, model_name: str, dim: str, value: str) -> exp.Expr:
        col = next(c for c in self.lens.models[model_name].dimensions if c.name == dim)
        numeric = _NUMERIC_TYPES.match(col.data_type) and _NUMBER_RE.match(value)
        return exp.Literal.number(value) if numeric else exp.Literal.string(value)


def render(lens: Lens, plan: Plan) -> str:
    """The SQL of ``plan`` in ``lens.config.dialect``.

    Raises:
        Declined: a metric expression names a table the query does not join.
    """
    return _Renderer(lens, plan).render()


def compile_request(lens: Lens, request: GenerationRequest, values: DimensionValues) -> Generation:
    """Answer ``request`` with the fast tier.

    An exemplar folded into the request whose normalized question equals the
    question is returned verbatim; otherwise the question is parsed and rendered.

    Returns:
        ``Generation(tier="fast", sql=...)``, or ``sql=None`` with the reason it declined.
    """
    asked = normalize(request.question)
    for name in request.exemplars:
        exemplar = lens.exemplars.get(name)
        if exemplar is not None and normalize(exemplar.question) == asked:
            return Generation(TIER, exemplar.sql)
    try:
        plan = parse(lens, request.question, values, allowed_metrics=request.metrics)
        return Generation(TIER, render(lens, plan))
    except Declined as exc:
        return Generation(TIER, None, exc.reason)
    except SqlglotError as exc:
        return Generation(TIER, None, f"could not build SQL: {exc}")
