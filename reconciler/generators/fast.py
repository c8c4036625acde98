"""The ``fast`` tier: a deterministic semantic compiler from questions to SQL (pure).

It understands one small grammar and declines everything else, because a wrong
answer is worse than no answer. A question is read as

* one or more measures (:mod:`reconciler.generators.measures`): a metric (name,
  label or synonym), or an aggregation word right before a model fact (``average
  deal size`` → ``AVG(amount)``; ``average``, ``mean``, ``total``, ``sum``,
  ``minimum``, ``maximum``, optionally with ``of the`` between). A phrase naming
  both a metric and a fact is the metric unless the word does not fit the
  metric's aggregate (``average`` on a ``SUM``): then it is the fact, provided the
  metric carries no filters of its own. Several measures must be a plain list
  (``net revenue and orders``) on one model; with no measure, ``how many
  customers`` counts the distinct primary keys of the model the noun names (a
  period only on a date of that model the question names, "created in 2024"; a
  breakdown only after ``by``/``per``/``each``, or in a ranking;
  :mod:`reconciler.generators.counts`);
* optional breakdown dimensions (at most two), on the measure's model or on a model
  reached through declared joins (``orders → customers → regions``), else through one
  hop against a join's direction (a bridge model: ``papers ← paper_datasets →
  datasets``), which only some measures survive (:mod:`reconciler.generators.paths`);
  a person dimension also groups by its model's key (:mod:`reconciler.generators.persons`);
  the result's key columns follow the question (:mod:`reconciler.generators.columns`);
* an optional time grain (``monthly``, ``by quarter`` …) on the nearest time dimension,
  shown oldest first unless the lens says ``series_order: newest_first``; with
  ``cumulative``, a running total over it (:mod:`reconciler.generators.cumulative`);
* an optional period (:mod:`reconciler.generators.periods`): a year (``2024``), a
  quarter (``Q3 2024``, ``third quarter of 2024``), a month (``March 2024``) or a
  relative period at the lens's ``as_of`` (``last quarter``, ``this year``, ``year
  to date``), as a half-open range — or the whole span (``over the entire
  available time period``, ``of all time``), which adds no filter; two periods of
  one unit with ``vs`` / ``compared`` / ``compare`` are a comparison (one bucket
  per period);
* an optional change between consecutive buckets: ``month over month`` /
  ``quarter over quarter`` / ``year over year`` (``mom``, ``qoq``, ``yoy``) with
  ``change`` or ``percent change``;
* an optional share of total: ``share``, ``proportion``, ``fraction`` (a ratio) or
  ``percentage``, ``percent`` (times 100) of one summed or counted measure over
  exactly one breakdown or grain;
* optional equality filters on dimension values the warehouse holds (``values``) or
  the lens lists in ``sample_values`` (``in the West region``, ``named 'Acme'``: ``naming``);
* optional comparisons on facts (:mod:`reconciler.generators.bounds`): ``with
  amount more than 100``, ``quantity between 2 and 5``; days of the week on the time
  dimension (``on weekends``, ``on Mondays``: :mod:`reconciler.generators.weekdays`);
* optional boolean flags: a boolean dimension ``is_<word>`` whose ``<word>``
  stands right before a noun naming its model (``won opportunities`` →
  ``iswon = TRUE``); the word anywhere else (``closed revenue``) declines;
* an optional closing ordering phrase (:mod:`reconciler.generators.ordering`):
  ``ordered by …``, ``sorted by … descending``, ``from highest to lowest``;
* or, alone, a ranking of rows by a raw column of the noun's model: ``top 3
  products by price``, or a listing of a model's columns: ``the names and prices
  of the products in Toys, ordered alphabetically`` (:mod:`reconciler.generators.listing`),
  kept by related rows (``customers who have not made any transactions``:
  :mod:`reconciler.generators.existence`) or by comparisons on their own facts, or a
  ratio of two facts of each row (:mod:`reconciler.generators.rawfacts`);
* output lists, two-measure rankings, count ratios, counts compared: ``outputs``, ``having``;
* an optional ranking: ``top 5 …``, ``which 3 … lowest …``, ``bottom 2 …``, and
  ``Who has the highest …?``: an opening "who" ranks the one *person* dimension
  (a name or synonym ending in ``rep``, ``owner``, ``employee`` …; see
  :func:`~reconciler.assembly.lexicon.person_dimensions`); ``in the team`` / ``on our
  team`` then means all of those people; ``with ties`` / ``including ties`` keeps
  every row tied within the first n.

Every join the query uses must pass the join-grain gate (DESIGN §1): the "one"
side of each many-to-one join unique on its key in the warehouse, as the
:class:`~reconciler.assembly.grain.WarehouseFacts` passed in with the values say;
with no such facts (a plain mapping: no warehouse) a join is unknown, and declined.

Every word must be accounted for: a lens phrase, a grammar word, a stopword or the
name of a model the query uses. Anything left over — ``since``, ``not``, ``weather``
— declines, and so does a question holding one of the lens's ``exclusions`` or
``clarify`` terms, an ambiguous phrase, a fact without an aggregation word, or a
dimension no safe join path reaches. This module reads the question into a
:class:`~reconciler.generators.compiler.Plan`; :mod:`reconciler.generators.compiler`
compiles the plan into SQL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import date

from sqlglot.errors import SqlglotError

from reconciler.assembly.grain import join_doubt
from reconciler.assembly.lexicon import Target, model_nouns, person_dimensions
from reconciler.assembly.request import GenerationRequest
from reconciler.assembly.retrieval import Mention, Retrieval, counted_model, retrieve, time_models
from reconciler.assembly.text import normalize
from reconciler.generators import paths
from reconciler.generators.adapt import from_exemplars
from reconciler.generators.bounds import Bound, split_bounds
from reconciler.generators.columns import bucket_at
from reconciler.generators.compiler import Declined, Measure, Plan, one_path, plan_edges, render
from reconciler.generators.counts import check_entity_count, new_is_restated
from reconciler.generators.cumulative import render_cumulative, split_cumulative
from reconciler.generators.doubts import check_doubts, entity_breakdowns
from reconciler.generators.generation import DimensionValues, Generation
from reconciler.generators.grammar import Reading, phrase_of, plural, read_grammar
from reconciler.generators.measures import check_extras, select_measures
from reconciler.generators.nouns import check_noun_breakdowns, with_row_keys
from reconciler.generators.ordering import order_plan, split_ordering
from reconciler.generators.periodcounts import check_compared_count, render_period_counts
from reconciler.generators.periods import (
    RANGE,
    check_unit_phrases,
    earlier,
    first_day,
    spell_to_date,
)
from reconciler.generators.persons import with_person_keys
from reconciler.generators.shapes import other_shapes
from reconciler.generators.today import Day
from reconciler.generators.weekdays import split_weekdays, with_weekdays
from reconciler.lens import Lens

__all__ = ["TIER", "Declined", "Measure", "Plan", "compile_request", "parse", "render"]

TIER = "fast"
MAX_DIMENSIONS = 2

_GRAIN_ORDER = ("day", "week", "month", "quarter", "year")


def _resolve(lens: Lens, base: str, targets: tuple[Target, ...], what: str, phrase: str) -> Target:
    """The one target reachable from ``base`` (through a safe join path), else decline."""
    reachable = paths.reachable(lens, base, targets)
    if not reachable:
        one_path(lens, base, targets[0].model)
    places = sorted({(t.model, t.name) for t in reachable})
    if len(places) > 1:
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(f"{what} {phrase!r} is ambiguous: it could mean {listed}")
    chosen = [t for t in reachable if (t.model, t.name) == places[0]]
    if len({t.value for t in chosen}) > 1:
        listed = ", ".join(repr(t.value) for t in chosen)
        raise Declined(f"{phrase!r} matches several stored values ({listed})")
    one_path(lens, base, chosen[0].model)
    return chosen[0]


def _flags(
    lens: Lens, found: Retrieval, base: str, nouns: Mapping[tuple[str, ...], str]
) -> list[tuple[str, str]]:
    """Boolean flags, each right before a noun naming its model ("won opportunities")."""
    longest = max((len(k) for k in nouns), default=0)
    flags: list[tuple[str, str]] = []
    for f in (m for m in found.mentions if m.kind == "flag"):
        follows = next(
            (
                nouns[k]
                for n in range(longest, 0, -1)
                if (k := found.tokens[f.end : f.end + n]) in nouns
            ),
            None,
        )
        targets = tuple(t for t in f.targets if t.model == follows)
        if not targets:
            raise Declined(
                f"{phrase_of(found, f)!r} is a yes/no column; say which rows it describes "
                f"(e.g. '{phrase_of(found, f)} {f.targets[0].model}')"
            )
        chosen = _resolve(lens, base, targets, "flag", phrase_of(found, f))
        if (chosen.model, chosen.name) not in flags:
            flags.append((chosen.model, chosen.name))
    return flags


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
        values: ``{(model, dimension): distinct values}`` read from the warehouse;
            a :class:`~reconciler.assembly.grain.WarehouseFacts` also carries the
            join-key facts every join the plan uses must pass.
        allowed_metrics: when given, the metrics assembly selected; a different
            reading declines rather than silently using an unrecorded asset.

    Measures on several models ("net revenue and customer count by region") are
    planned once per model — each aggregated on its own, through its own joins and
    its own time dimension — and joined on the result keys afterwards
    (:attr:`Plan.joined`), so no join fans a measure out; the parts must agree on
    breakdowns, filters, flags, grain and period.

    Raises:
        Declined: the question is outside the grammar, names no measure, names
            something ambiguous or unknown, needs a join the lens does not declare,
            or joins through a "one" side not known to be unique on its key.
    """
    question, ordering = split_ordering(question)
    question, days = split_weekdays(lens, question, values)
    question, bounds = split_bounds(lens, spell_to_date(question), values)
    found = retrieve(lens, question, values)
    _check_terms(lens, found.tokens)
    reading = read_grammar(lens, found)
    new_is_restated(lens, found, reading)
    measures = select_measures(lens, found, reading, allowed_metrics)
    check_doubts(lens, found, reading, measures)
    check_unit_phrases(found)
    if reading.unknown:
        listed = ", ".join(repr(w) for w in reading.unknown)
        raise Declined(f"unrecognised words: {listed}")
    bases = dict.fromkeys(m.model for m in measures)
    plans = [
        _bounded(
            lens,
            _plan(lens, found, reading, measures, tuple(m for m in measures if m.model == b)),
            bounds,
        )
        for b in bases
    ]
    plan = plans[0]
    for other in plans[1:]:
        if _shape(other) != _shape(plan):
            raise Declined(
                f"the question reads differently from models {plan.base!r} and "
                f"{other.base!r}: {_shape(plan)} / {_shape(other)}"
            )
    involved: set[str] = set()
    for part in plans:
        involved.update(part.models())
        for here, join in plan_edges(lens, part):
            involved.add(join.to)
            if (doubt := join_doubt(values, here, join)) is not None:
                raise Declined(doubt)
    stray = ", ".join(sorted(reading.model_nouns - involved))
    if stray:
        raise Declined(f"the question names model(s) {stray} that the query would not use")
    plan = dataclasses.replace(plan, joined=tuple(plans[1:])) if len(plans) > 1 else plan
    plan = with_weekdays(lens, with_row_keys(lens, with_person_keys(lens, plan)), days)
    return plan if ordering is None else order_plan(lens, plan, ordering, values)


def _shape(plan: Plan) -> tuple[object, ...]:
    """What every model's part of a several-model question must agree on."""
    return (
        plan.breakdowns,
        plan.filters,
        plan.flags,
        plan.grain,
        plan.period,
        plan.compared,
        plan.bounds,
    )


def _bounded(lens: Lens, plan: Plan, bounds: tuple[Bound, ...]) -> Plan:
    """``plan`` with the comparison filters on facts (:mod:`reconciler.generators.bounds`),
    each fact resolved from the plan's base along a safe join path."""
    out: list[tuple[str, str, str, str]] = []
    for bound in bounds:
        chosen = _resolve(lens, plan.base, bound.facts, "fact", bound.phrase)
        out.extend((chosen.model, chosen.name, op, n) for op, n in bound.conditions)
    return dataclasses.replace(plan, bounds=tuple(out)) if out else plan


def _plan(
    lens: Lens,
    found: Retrieval,
    reading: Reading,
    measures: tuple[Measure, ...],
    group: tuple[Measure, ...],
) -> Plan:
    """The plan of ``group`` (the measures on one model) within a question asking
    for ``measures``; see :func:`parse`."""
    measure = group[0]
    base = measure.model
    dims = [m for m in found.mentions if m.kind in ("dimension", "time_dimension")]
    filters, qualifiers = _value_filters(lens, found, base, dims)
    flags = _flags(lens, found, base, model_nouns(lens))
    counted = counted_model(lens, found)
    if counted is not None and measure.function != "count_distinct":
        words = " ".join(found.words[counted[0] : counted[2]])
        names = ", ".join(m.name for m in measures)
        raise Declined(f"{words!r} counts {counted[3]}, but the question also names {names}")
    asked = [
        d for d in dims if not (d in qualifiers or (counted and (d.start, d.end) == counted[1:3]))
    ]
    split = _breakdowns(lens, found, base, asked)
    breakdowns, plural_breakdown = split.places, split.plural
    breakdowns += [p for p in entity_breakdowns(lens, found, reading) if p not in breakdowns]
    if reading.who:
        breakdowns = [_who(lens, base, breakdowns, reading)]
        plural_breakdown = plural_breakdown or reading.who_plural
    if len(breakdowns) > MAX_DIMENSIONS:
        raise Declined(f"more than {MAX_DIMENSIONS} breakdown dimensions")
    grain, period, compared, change = _when(reading, len(measures))
    rank = _rank(reading, found, grain, bool(breakdowns), plural_breakdown)
    check_noun_breakdowns(lens, found, split.mentions, rank)
    if measure.function == "count_distinct":
        check_entity_count(lens, found, measure, split.mentions,
                           (grain, period, bool(compared)), split.time, rank)  # fmt: skip
        if compared:
            check_compared_count(measure.model, reading, bool(breakdowns), rank)
    if grain and reading.who:
        raise Declined(f"'who' with a {grain} breakdown: one person overall, or one per {grain}?")
    time = _time_column(lens, base, split.time, grain is not None or period is not None)
    check_extras(lens, measures, reading, rank, len(breakdowns) + (grain is not None))
    return Plan(
        measure,
        tuple(breakdowns),
        tuple(filters),
        tuple(flags),
        time,
        grain,
        earlier(period, change[0]) if change and period else period,
        rank,
        extra=group[1:],
        compared=compared,
        share=reading.share,
        ties=reading.ties,
        change=(change[0], change[1], first_day(period)) if change else None,
        bucket_at=bucket_at(reading, grain, split.mentions, len(split.places)),
    )


def _value_filters(
    lens: Lens, found: Retrieval, base: str, dims: list[Mention]
) -> tuple[list[tuple[str, str, str]], set[Mention]]:
    """``(model, dimension, value)`` equality filters, and the dimension mentions that
    only qualify a value.

    A dimension phrase right next to a value of that dimension ("the West region",
    "segment Enterprise", "the city of Paris"), or one that is also the name of the value's model
    ("Enterprise customers"), qualifies the value instead of asking for a breakdown.
    """
    nouns = model_nouns(lens)
    qualifiers: set[Mention] = set()
    filters: list[tuple[str, str, str]] = []
    for v in (m for m in found.mentions if m.kind == "value"):
        targets = v.targets
        for d in dims:
            # "the West region", "segment Enterprise", "the city of San Francisco"
            of = found.tokens[d.end : v.start] == ("of",)
            if d.end == v.start or d.start == v.end or of:
                named = {(t.model, t.name) for t in d.targets}
                noun = nouns.get(found.tokens[d.start : d.end])
                narrowed = tuple(t for t in targets if (t.model, t.name) in named) or tuple(
                    t for t in targets if t.model == noun
                )
                if narrowed:
                    targets = narrowed
                    qualifiers.add(d)
        chosen = _resolve(lens, base, targets, "value", phrase_of(found, v))
        assert chosen.value is not None
        new = (chosen.model, chosen.name, chosen.value)
        if any(f[:2] == new[:2] and f != new for f in filters):
            raise Declined(f"several values of {chosen.model}.{chosen.name} are named")
        if new not in filters:
            filters.append(new)
    return filters, qualifiers


@dataclasses.dataclass
class _Breakdowns:
    """The dimensions a question breaks down by.

    Attributes:
        places: ``(model, dimension)`` in question order, each once.
        mentions: the mentions that asked for them.
        time: the time dimension the question names, if any (not a breakdown).
        plural: whether a breakdown phrase is plural ("regions").
    """

    places: list[tuple[str, str]]
    mentions: list[Mention]
    time: tuple[str, str] | None
    plural: bool


def _breakdowns(lens: Lens, found: Retrieval, base: str, dims: list[Mention]) -> _Breakdowns:
    """Resolve the breakdown dimension mentions ``dims`` from model ``base``."""
    out = _Breakdowns([], [], None, False)
    for d in dims:
        chosen = _resolve(lens, base, d.targets, "dimension", phrase_of(found, d))
        place = (chosen.model, chosen.name)
        if chosen.kind == "time_dimension":
            if out.time not in (None, place):
                raise Declined("the question names several time dimensions")
            out.time = place
            continue
        out.mentions.append(d)
        if place not in out.places:
            out.places.append(place)
        out.plural = out.plural or plural(found, d.end - 1)
    return out


def _when(
    reading: Reading, measures: int
) -> tuple[
    str | None,
    tuple[Day, Day] | None,
    tuple[tuple[date, date], ...],
    tuple[str, str] | None,
]:
    """``(grain, period, compared periods, change)`` of a question with ``measures`` measures."""
    if len(reading.grains) > 1:
        raise Declined(f"several time grains ({', '.join(sorted(reading.grains))})")
    change = _change(reading, next(iter(reading.grains), None))
    grain, period, compared = _periods(
        reading, change[0] if change else next(iter(reading.grains), None)
    )
    if change and period and period[0] == date.min:
        raise Declined("a change between periods needs a first period, not 'before …'")
    if change and period and not isinstance(period[0], date):
        raise Declined("a change between periods counted from today is not read")
    if change and (compared or reading.share or measures > 1 or reading.directions):
        raise Declined(
            "a change between periods is read alone (not with a comparison, share, "
            "ranking or several metrics)"
        )
    return grain, period, compared, change


def _time_column(
    lens: Lens, base: str, named: tuple[str, str] | None, bucketed: bool
) -> tuple[str, str] | None:
    """The time dimension a grain or period (``bucketed``) applies to: the one the
    question ``named``, else the single one reachable from ``base``."""
    if named is not None:
        if not bucketed:
            raise Declined(f"time dimension {named[1]!r} named without a grain or period")
        return named
    if not bucketed:
        return None
    candidates = time_models(lens, base)
    if len(candidates) != 1:
        raise Declined(f"no single time dimension is reachable from model {base!r}")
    one_path(lens, base, candidates[0])
    col = lens.models[candidates[0]].time_dimension()
    assert col is not None
    return candidates[0], col.name


def _change(reading: Reading, grain: str | None) -> tuple[str, str] | None:
    """``(grain, "change" | "percent")`` of "month over month change", "yoy percent
    change" …, else ``None``; only month, quarter and year steps (a week has no one
    calendar)."""
    if not reading.change_grains:
        if reading.change:
            raise Declined("a change needs its step: month over month, year over year …")
        return None
    steps = sorted(reading.change_grains)
    if len(steps) > 1:
        raise Declined(f"several change steps ({', '.join(steps)})")
    step = steps[0]
    if step not in ("month", "quarter", "year"):
        raise Declined(f"a {step}-over-{step} change is not read (only month, quarter, year)")
    if grain not in (None, step):
        raise Declined(f"a {step}-over-{step} change shown by {grain}")
    kinds = sorted(set(reading.change))
    if len(kinds) != 1:
        raise Declined(
            f"say what to show {step} over {step}: 'change' (a difference) or 'percent change'"
        )
    return step, kinds[0]


def _periods(
    reading: Reading, grain: str | None
) -> tuple[str | None, tuple[Day, Day] | None, tuple[tuple[date, date], ...]]:
    """``(grain, period, compared periods)`` from the period phrases.

    One period filters; two or more of one unit with a comparison word ("2024 vs
    2023", "compare … in Q1 2024 and Q1 2023") become one bucket per period (the
    unit, or a finer grain the question names) over just those periods.
    """
    periods = reading.periods
    if periods and reading.all_time:
        raise Declined("the question names both a period and the whole time span")
    if reading.comparison:
        if len(periods) < 2:
            raise Declined("a comparison needs two periods to compare (e.g. '2024 vs 2023')")
        units = sorted({p.unit for p in periods})
        if RANGE in units:
            raise Declined("a comparison of periods with a bound (since, before …) is not read")
        if len(units) > 1:
            raise Declined(f"the compared periods are of different units ({', '.join(units)})")
        if grain and _GRAIN_ORDER.index(grain) > _GRAIN_ORDER.index(units[0]):
            raise Declined(f"a {grain} breakdown of {units[0]}s is not a question I can read")
        spans = [(p.start, p.stop) for p in periods]
        dated = [(a, b) for a, b in spans if isinstance(a, date) and isinstance(b, date)]
        if len(dated) != len(spans):
            raise Declined("a comparison of periods counted from today is not read")
        return grain or units[0], None, tuple(dated)  # in question order
    if len(periods) > 1:
        raise Declined("the question names more than one period")
    period = periods[0] if periods else None
    if period and period.unit == RANGE:
        return grain, period.span, ()  # any grain may break a bounded span down
    if grain and period and _GRAIN_ORDER.index(grain) >= _GRAIN_ORDER.index(period.unit):
        raise Declined(f"a {grain} breakdown within one {period.unit} is not a question I can read")
    return grain, period.span if period else None, ()


def _who(
    lens: Lens, base: str, breakdowns: list[tuple[str, str]], reading: Reading
) -> tuple[str, str]:
    """The person dimension an opening "who" ranks (the only breakdown it allows)."""
    persons = person_dimensions(lens)
    if not persons:
        raise Declined("'who' asks for a person, but no dimension of the lens names one")
    person = _resolve(lens, base, persons, "person", "who")
    place = (person.model, person.name)
    others = [f"{m}.{d}" for m, d in breakdowns if (m, d) != place]
    if others:
        raise Declined(
            f"'who' ranks {place[0]}.{place[1]}; it cannot also break down by {others[0]}"
        )
    if not reading.directions:
        raise Declined("'who' needs a ranking word (highest, most, lowest …)")
    return place


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
    reading: Reading, found: Retrieval, grain: str | None, has_dims: bool, plural_breakdown: bool
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
    grain_plural = grain is not None and plural(found, reading.grains[grain])
    if plural_breakdown or (not has_dims and grain_plural):
        raise Declined("a top/bottom ranking without a count")
    return descending, 1


def compile_request(lens: Lens, request: GenerationRequest, values: DimensionValues) -> Generation:
    """Answer ``request`` with the fast tier.

    An exemplar folded into the request whose normalized question equals the
    question is returned verbatim, one whose question differs only in slots is
    adapted (:mod:`reconciler.generators.adapt`: one that reads like it but cannot be
    adapted without doubt declines); otherwise the question is parsed
    and rendered (the shapes of :mod:`reconciler.generators.shapes` first; a running
    total by :mod:`reconciler.generators.cumulative`).

    Returns:
        ``Generation(tier="fast", sql=...)``, or ``sql=None`` with the reason it declined.
    """
    asked = normalize(request.question)
    for name in request.exemplars:
        exemplar = lens.exemplars.get(name)
        if exemplar is not None and normalize(exemplar.question) == asked:
            return Generation(TIER, exemplar.sql, exemplar=name)
    try:
        found = retrieve(lens, request.question, values)
        _check_terms(lens, found.tokens)
        adapted = from_exemplars(lens, request.question, request.exemplars, values)
        if adapted is not None:
            return Generation(TIER, adapted[1], exemplar=adapted[0])
        shaped = other_shapes(lens, request.question, found, values, request.metrics, parse)
        if shaped is not None:
            return Generation(TIER, shaped)
        question, running = split_cumulative(request.question, found)
        plan = parse(lens, question, values, allowed_metrics=request.metrics)
        if running:
            return Generation(TIER, render_cumulative(lens, plan))
        if plan.compared and plan.measure.function == "count_distinct":
            return Generation(TIER, render_period_counts(lens, plan))
        return Generation(TIER, render(lens, plan))
    except Declined as exc:
        return Generation(TIER, None, exc.reason)
    except SqlglotError as exc:
        return Generation(TIER, None, f"could not build SQL: {exc}")
