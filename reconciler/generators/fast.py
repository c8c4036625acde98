"""The ``fast`` tier: a deterministic semantic compiler from questions to SQL (pure).

It understands one small grammar and declines everything else, because a wrong
answer is worse than no answer. A question is read as

* one or more measures (:mod:`reconciler.reading.grammar.measures`): a metric (name,
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
  :mod:`reconciler.reading.grammar.counts`);
* optional breakdown dimensions (at most two), on the measure's model or on a model
  reached through declared joins (``orders → customers → regions``), else through one
  hop against a join's direction (a bridge model: ``papers ← paper_datasets →
  datasets``), which only some measures survive (:mod:`reconciler.reading.resolve.paths`);
  a person dimension also groups by its model's key (:mod:`reconciler.reading.phrases.persons`);
  the result's key columns follow the question (:mod:`reconciler.reading.phrases.columns`);
* an optional time grain (``monthly``, ``by quarter`` …) on the nearest time dimension,
  shown oldest first unless the lens says ``series_order: newest_first``; with
  ``cumulative``, a running total over it (:mod:`reconciler.reading.grammar.cumulative`);
* an optional period (:mod:`reconciler.reading.phrases.periods`): a year (``2024``), a
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
* optional comparisons on facts (:mod:`reconciler.reading.phrases.bounds`): ``with
  amount more than 100``, ``quantity between 2 and 5``; days of the week on the time
  dimension (``on weekends``, ``on Mondays``: :mod:`reconciler.reading.phrases.weekdays`);
* optional boolean flags: a boolean dimension ``is_<word>`` whose ``<word>``
  stands right before a noun naming its model (``won opportunities`` →
  ``iswon = TRUE``); the word anywhere else (``closed revenue``) declines;
* an optional closing ordering phrase (:mod:`reconciler.reading.phrases.ordering`):
  ``ordered by …``, ``sorted by … descending``, ``from highest to lowest``;
* or, alone, a ranking of rows by a raw column of the noun's model: ``top 3
  products by price``, or a listing of a model's columns: ``the names and prices
  of the products in Toys, ordered alphabetically`` (:mod:`reconciler.reading.grammar.listing`),
  kept by related rows (``customers who have not made any transactions``:
  :mod:`reconciler.reading.grammar.existence`) or by comparisons on their own facts, or a
  ratio of two facts of each row (:mod:`reconciler.reading.grammar.rawfacts`);
* output lists, two-measure rankings, count ratios, counts compared: ``outputs``, ``having``;
* pronouns and orderings that restate a ranked count (``backrefs``); a whole year on a
  model dated by a year number alone (``years``);
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

Every word must be accounted for: a lens phrase, a grammar word, a stopword or the name
of a model the query uses. Anything left over (``since``, ``not``, ``weather``) declines,
as does a lens ``exclusions`` or ``clarify`` term, an ambiguous phrase, a fact without
an aggregation word, or a dimension no safe join path reaches. This module reads the
question into a :class:`~reconciler.reading.compile.Plan`; :mod:`reconciler.reading.compile`
compiles it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sqlglot.errors import SqlglotError

from reconciler.assembly.grain import join_doubt
from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.request import GenerationRequest
from reconciler.assembly.retrieval import Mention, Retrieval, counted_model, retrieve, time_models
from reconciler.assembly.text import normalize
from reconciler.generators.generation import DimensionValues, Generation
from reconciler.lens import Lens
from reconciler.reading.grammar.adapt import from_exemplars
from reconciler.reading.grammar.backrefs import (
    every_row_ordered,
    pronoun_hint,
    restated_key,
    without_backrefs,
)
from reconciler.reading.grammar.counts import check_entity_count, new_is_restated
from reconciler.reading.grammar.doubts import check_doubts, entity_breakdowns
from reconciler.reading.grammar.measures import check_extras, select_measures
from reconciler.reading.grammar.periodcounts import check_compared_count
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan
from reconciler.reading.parse import one_reading
from reconciler.reading.phrases.bounds import Bound, split_bounds
from reconciler.reading.phrases.columns import bucket_at
from reconciler.reading.phrases.distinct import (
    check_distinct,
    check_values_question,
    distinct_columns,
)
from reconciler.reading.phrases.haveflags import have_flags
from reconciler.reading.phrases.months import render
from reconciler.reading.phrases.negation import Negations, check_reach, gap, negations
from reconciler.reading.phrases.nouns import (
    check_counted_inside,
    check_noun_breakdowns,
    own_rows,
    with_row_keys,
)
from reconciler.reading.phrases.ordering import order_plan, split_ordering
from reconciler.reading.phrases.periods import check_unit_phrases, earlier, first_day, spell_to_date
from reconciler.reading.phrases.persons import who_ranks, with_person_keys
from reconciler.reading.phrases.rankings import check_which_have, ranking
from reconciler.reading.phrases.rowvalues import either
from reconciler.reading.phrases.valueless import check_valueless
from reconciler.reading.phrases.verbs import dated_verbs
from reconciler.reading.phrases.weekdays import split_weekdays, with_weekdays
from reconciler.reading.phrases.when import when
from reconciler.reading.phrases.words import Reading, phrase_of, plural, read_grammar, uninvited
from reconciler.reading.phrases.years import year_filter
from reconciler.reading.resolve.attributes import (
    check_named_column,
    check_own_attribute,
    check_unreached_value,
)
from reconciler.reading.resolve.paths import (
    check_dated_through,
    one_path,
    plan_edges,
    resolve_target,
)
from reconciler.reading.resolve.zeros import check_empty_groups

__all__ = ["TIER", "Declined", "Measure", "Plan", "compile_request", "parse", "render"]

TIER = "fast"
MAX_DIMENSIONS = 2


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
                DeclineKind.AMBIGUOUS_READING,
                f"{phrase_of(found, f)!r} is a yes/no column; say which rows it describes "
                f"(e.g. '{phrase_of(found, f)} {f.targets[0].model}')",
            )
        chosen = resolve_target(lens, base, targets, "flag", phrase_of(found, f))
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
    negated = negations(found)
    for at in sorted(negated.words):  # read with the value they negate
        if found.words[at] in reading.unknown:
            reading.unknown.remove(found.words[at])
    distinct = distinct_columns(found)
    for at in distinct:  # checked against the plan's breakdowns below
        if found.words[at] in reading.unknown:
            reading.unknown.remove(found.words[at])
    reading.ordered = None if ordering is None else ordering.descending
    ordering = ordering and restated_key(lens, question, ordering, values)
    new_is_restated(lens, found, reading)
    measures = select_measures(lens, found, reading, allowed_metrics)
    check_values_question(found)
    check_doubts(lens, found, reading, measures)
    check_unit_phrases(found)
    if reading.unknown:
        listed = ", ".join(repr(w) for w in reading.unknown)
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"unrecognised words: {listed}{pronoun_hint(reading.unknown)}"
        )
    bases = dict.fromkeys(m.model for m in measures)
    plans = [
        _bounded(
            lens,
            _plan(
                lens,
                found,
                reading,
                measures,
                tuple(m for m in measures if m.model == b),
                negated,
            ),
            bounds,
        )
        for b in bases
    ]
    plan = plans[0]
    for other in plans[1:]:
        if _shape(other) != _shape(plan):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"the question reads differently from models {plan.base!r} and "
                f"{other.base!r}: {_shape(plan)} / {_shape(other)}",
            )
    involved: set[str] = set()
    for part in plans:
        check_reach(lens, part)
        involved.update(part.models())
        for here, join in plan_edges(lens, part):
            involved.add(join.to)
            if (doubt := join_doubt(values, here, join)) is not None:
                raise Declined(DeclineKind.NO_JOIN_PATH, doubt)
    stray = ", ".join(sorted(reading.model_nouns - involved))
    if stray:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"the question names model(s) {stray} that the query would not use",
        )
    plan = dataclasses.replace(plan, joined=tuple(plans[1:])) if len(plans) > 1 else plan
    check_empty_groups(plan, lens)
    check_distinct(found, distinct, plan)
    plan = with_weekdays(lens, with_row_keys(lens, with_person_keys(lens, plan)), days)
    if ordering is None:
        return plan
    return every_row_ordered(plan, reading, order_plan(lens, plan, ordering, values))


def _shape(plan: Plan) -> tuple[object, ...]:
    """What every model's part of a several-model question must agree on."""
    return (
        plan.breakdowns,
        plan.filters,
        plan.excluded,
        plan.flags,
        plan.grain,
        plan.period,
        plan.compared,
        plan.bounds,
    )


def _bounded(lens: Lens, plan: Plan, bounds: tuple[Bound, ...]) -> Plan:
    """``plan`` with the comparison filters on facts (:mod:`reconciler.reading.phrases.bounds`),
    each fact resolved from the plan's base along a safe join path."""
    out: list[tuple[str, str, str, str]] = []
    for bound in bounds:
        chosen = resolve_target(lens, plan.base, bound.facts, "fact", bound.phrase)
        out.extend((chosen.model, chosen.name, op, n) for op, n in bound.conditions)
    return dataclasses.replace(plan, bounds=tuple(out)) if out else plan


def _plan(
    lens: Lens,
    found: Retrieval,
    reading: Reading,
    measures: tuple[Measure, ...],
    group: tuple[Measure, ...],
    negated: Negations,
) -> Plan:
    """The plan of ``group`` (the measures on one model) within a question asking
    for ``measures``; see :func:`parse`."""
    measure = group[0]
    base = measure.model
    dims = [m for m in found.mentions if m.kind in ("dimension", "time_dimension")]
    had, dims = have_flags(lens, found, dims)
    valued, qualifiers = _value_filters(lens, found, base, dims, negated)
    excluded = [f for f, negative in valued if negative]
    filters = [f for f, negative in valued if not negative]
    flags = [*_flags(lens, found, base, model_nouns(lens)), *had]
    counted = counted_model(lens, found)
    check_counted_inside(lens, found, base)
    if counted is not None and measure.function != "count_distinct":
        words = " ".join(found.words[counted[0] : counted[2]])
        names = ", ".join(m.name for m in measures)
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{words!r} counts {counted[3]}, but the question also names {names}",
        )
    grain, period, compared, change = when(reading, len(measures))
    year = year_filter(lens, found, reading, base, (grain, period, bool(compared), bool(change)))
    if year is not None:
        filters, period = [*filters, year[0]], None
        qualifiers |= year[1]
    qualifiers |= own_rows(lens, found, base, dims, bool(reading.directions))
    asked = [
        d for d in dims if not (d in qualifiers or (counted and (d.start, d.end) == counted[1:3]))
    ]
    asked = dated_verbs(lens, found, asked, base, grain is not None or period is not None)
    split = _breakdowns(lens, found, base, asked)
    breakdowns, plural_breakdown = split.places, split.plural
    breakdowns += [p for p in entity_breakdowns(lens, found, reading) if p not in breakdowns]
    if reading.who:
        breakdowns = [who_ranks(lens, base, breakdowns, reading)]
        plural_breakdown = plural_breakdown or reading.who_plural
    if len(breakdowns) > MAX_DIMENSIONS:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"more than {MAX_DIMENSIONS} breakdown dimensions"
        )
    rank = ranking(reading, found, grain, bool(breakdowns), plural_breakdown)
    ranked = rank or (reading.directions and (next(iter(reading.directions)), 0)) or None
    check_noun_breakdowns(lens, found, split.mentions, ranked)
    check_valueless(found, split.mentions)
    check_which_have(found, split.mentions, ranked)
    if measure.function == "count_distinct":
        check_entity_count(lens, found, measure, split.mentions,
                           (grain, period, bool(compared)), split.time, ranked)  # fmt: skip
        if compared:
            check_compared_count(measure.model, reading, bool(breakdowns), rank)
    if grain and reading.who:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'who' with a {grain} breakdown: one person overall, or one per {grain}?",
        )
    if split.time_by and grain is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"'by {split.time_by}' breaks down by a date, but names no grain: say "
            f"'by month of {split.time_by}', 'daily' … (or drop 'by' to filter on it)",
        )
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
        excluded=tuple(excluded),
    )


def _value_filters(
    lens: Lens, found: Retrieval, base: str, dims: list[Mention], negated: Negations
) -> tuple[list[tuple[tuple[str, str, str], bool]], set[Mention]]:
    """``((model, dimension, value), negated)`` value filters, and the dimension
    mentions that only qualify a value.

    A dimension phrase right next to a value of that dimension ("the West region",
    "segment Enterprise", "the city of Paris"), or one that is also the name of the value's
    model ("Enterprise customers"), qualifies the value instead of asking for a breakdown;
    so does one before a negated value ("whose segment is not Enterprise"). Two values of
    one column are any of them when joined by "or", else decline, as does a value of two
    models one out of reach (attributes.py).
    """
    nouns = model_nouns(lens)
    previous: dict[tuple[str, str], Mention] = {}  # the last value read of each column
    qualifiers: set[Mention] = set()
    filters: list[tuple[tuple[str, str, str], bool]] = []
    for v in (m for m in found.mentions if m.kind == "value"):
        targets = v.targets
        for d in dims:
            # "the West region", "segment Enterprise", "the city of San Francisco"
            of = d.end < v.start and gap(found, negated, d.end, v.start) in (("of",), ())
            if d.end == v.start or d.start == v.end or of:
                named = {(t.model, t.name) for t in d.targets}
                noun = nouns.get(found.tokens[d.start : d.end])
                narrowed = tuple(t for t in targets if (t.model, t.name) in named) or tuple(
                    t for t in targets if t.model == noun
                )
                own = [t for t in targets if t.model == base]
                if own and len(narrowed) == 1 and narrowed[0].model != base:
                    check_own_attribute(lens, base, narrowed[0], phrase_of(found, d))
                if narrowed:
                    targets = narrowed
                    qualifiers.add(d)
                elif d.start == v.end and noun is None:  # "the Lakeside district"
                    check_named_column(found, v, d)
        check_unreached_value(lens, base, targets, phrase := phrase_of(found, v), dims)
        chosen = resolve_target(lens, base, targets, "value", phrase)
        assert chosen.value is not None
        new = ((chosen.model, chosen.name, chosen.value), v.start in negated.values)
        if any(f[:2] == new[0][:2] and (f, n) != new for f, n in filters) and (
            new[1] or not either(found, previous[new[0][:2]], v, negated)
        ):  # "from state 'NY' or 'CA'": any of them (IN); any other pair: all, or any?
            several = f"several values of {chosen.model}.{chosen.name} are named"
            raise Declined(DeclineKind.AMBIGUOUS_READING, several)
        previous[new[0][:2]] = v
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
        time_by: the time dimension's phrase when a breakdown word introduces it
            ("by close date"): a breakdown by a date, which needs a grain.
    """

    places: list[tuple[str, str]]
    mentions: list[Mention]
    time: tuple[str, str] | None
    plural: bool
    time_by: str = ""


def _breakdowns(lens: Lens, found: Retrieval, base: str, dims: list[Mention]) -> _Breakdowns:
    """Resolve the breakdown dimension mentions ``dims`` from model ``base``."""
    out = _Breakdowns([], [], None, False)
    nouns = model_nouns(lens)
    for d in dims:
        chosen = resolve_target(lens, base, d.targets, "dimension", phrase_of(found, d))
        check_own_attribute(lens, base, chosen, phrase_of(found, d))
        place = (chosen.model, chosen.name)
        named = nouns.get(found.tokens[d.start : d.end])
        if named is not None and named != chosen.model:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{phrase_of(found, d)!r} names model {named!r} and also "
                f"{chosen.model}.{chosen.name} (a name the lens gives it): say which, e.g. "
                f"'by {chosen.name.replace('_', ' ')}', or a column of {named}",
            )
        if chosen.kind == "time_dimension":
            if out.time not in (None, place):
                raise Declined(
                    DeclineKind.UNSUPPORTED_CONSTRUCT, "the question names several time dimensions"
                )
            out.time = place
            out.time_by = "" if uninvited(found, [d]) else phrase_of(found, d)
            continue
        out.mentions.append(d)
        if place not in out.places:
            out.places.append(place)
        out.plural = out.plural or plural(found, d.end - 1)
    return out


def _time_column(
    lens: Lens, base: str, named: tuple[str, str] | None, bucketed: bool
) -> tuple[str, str] | None:
    """The time dimension a grain or period (``bucketed``) applies to: the one the
    question ``named``, else the single one reachable from ``base``."""
    if named is not None:
        if not bucketed:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"time dimension {named[1]!r} named without a grain or period",
            )
        return named
    if not bucketed:
        return None
    candidates = time_models(lens, base)
    if len(candidates) != 1:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"no single time dimension is reachable from model {base!r}",
        )
    col = lens.models[candidates[0]].time_dimension()
    assert col is not None
    check_dated_through(lens, base, one_path(lens, base, candidates[0]), col.name)
    return candidates[0], col.name


def _check_terms(lens: Lens, tokens: tuple[str, ...]) -> None:
    """Decline a question holding one of the lens's excluded or clarify terms."""
    text = f" {' '.join(tokens)} "
    for term in lens.config.exclusions:
        if f" {normalize(term)} " in text:
            raise Declined(DeclineKind.EXCLUDED, f"the lens excludes questions about {term!r}")
    for clarify in lens.config.clarify:
        if f" {normalize(clarify.term)} " in text:
            raise Declined(
                DeclineKind.EXCLUDED, f"{clarify.term!r} needs clarification: {clarify.ask}"
            )


def compile_request(lens: Lens, request: GenerationRequest, values: DimensionValues) -> Generation:
    """Answer ``request`` with the fast tier.

    An exemplar folded into the request whose normalized question equals the
    question is returned verbatim, one whose question differs only in slots is
    adapted (:mod:`reconciler.reading.grammar.adapt`: one that reads like it but cannot be
    adapted without doubt declines); otherwise every reader reads it — the shapes of
    :mod:`reconciler.reading.parse` and the one-measure grammar (a running total by
    :mod:`reconciler.reading.grammar.cumulative`) — and only one reading is served
    (:func:`~reconciler.reading.parse.one_reading`: two that differ decline, naming both).

    Returns:
        ``Generation(tier="fast", sql=...)``, or ``sql=None`` with the reason it declined.
    """
    asked = normalize(request.question)
    for name in request.exemplars:
        exemplar = lens.exemplars.get(name)
        if exemplar is not None and normalize(exemplar.question) == asked:
            return Generation(TIER, exemplar.sql, exemplar=name, reading=f"exemplar {name}")
    try:
        found = retrieve(lens, request.question, values)
        _check_terms(lens, found.tokens)
        adapted = from_exemplars(lens, request.question, request.exemplars, values)
        if adapted is not None:
            name = adapted[0]
            return Generation(TIER, adapted[1], exemplar=name, reading=f"exemplar {name} adapted")
        question = without_backrefs(lens, request.question, values)
        if question != request.question:
            found = retrieve(lens, question, values)
        served = one_reading(lens, question, found, values, request.metrics, parse)
        return Generation(
            TIER, served.sql, served.declined, decline_kind=served.kind, reading=served.reading
        )
    except Declined as exc:
        return Generation(TIER, None, exc.reason, decline_kind=exc.kind)
    except SqlglotError as exc:
        return Generation(
            TIER, None, f"could not build SQL: {exc}", decline_kind=DeclineKind.BUILD_FAILED
        )
