"""The ``fast`` tier: a deterministic semantic compiler from questions to SQL (pure).

It understands one small grammar and declines everything else, because a wrong
answer is worse than no answer. A question is read as

* exactly one measure: a metric (name, label or synonym), or an aggregation word
  right before a model fact (``average deal size`` → ``AVG(amount)``; ``average``,
  ``mean``, ``total``, ``sum``, ``minimum``, ``maximum``, optionally with ``of
  the`` between). A phrase naming both a metric and a fact is the metric unless
  the word does not fit the metric's aggregate (``average`` on a ``SUM``): then it
  is the fact, provided the metric carries no filters of its own;
* optional breakdown dimensions (at most two), on the measure's model or on a model
  reached through declared joins (``orders → customers → regions``);
* an optional time grain (``monthly``, ``by quarter`` …) on the nearest time dimension;
* an optional period: a year (``2024``), a quarter (``Q3 2024``, ``third quarter of
  2024``) or a month (``March 2024``), as a half-open range — or the whole span
  (``over the entire available time period``, ``of all time``), which adds no filter;
* optional equality filters on dimension values the warehouse holds (``values``) or
  the lens lists in ``sample_values`` (``for Electronics``, ``in the West region``);
* optional boolean flags: a boolean dimension ``is_<word>`` whose ``<word>``
  stands right before a noun naming its model (``won opportunities`` →
  ``iswon = TRUE``); the word anywhere else (``closed revenue``) declines;
* an optional ranking: ``top 5 …``, ``which 3 … lowest …``, ``bottom 2 …``, and
  ``Who has the highest …?``: an opening "who" ranks the one *person* dimension
  (a name or synonym ending in ``rep``, ``owner``, ``employee`` …; see
  :func:`~reconciler.assembly.person_dimensions`); ``in the team`` / ``on our
  team`` then means all of those people.

Every word must be accounted for: a lens phrase, a grammar word, a stopword or the
name of a model the query uses. Anything left over — ``since``, ``not``, ``weather``
— declines, and so does a question holding one of the lens's ``exclusions`` or
``clarify`` terms, an ambiguous phrase, a fact without an aggregation word, or a
dimension no safe join path reaches. The SQL is built by
:mod:`reconciler.generators.render`.
"""

from __future__ import annotations

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
    asks_who,
    join_paths,
    model_nouns,
    normalize,
    person_dimensions,
    retrieve,
    time_models,
    tokenize,
)
from reconciler.generators import DimensionValues, Generation
from reconciler.generators.render import Declined, Measure, Plan, one_path, render
from reconciler.lens import Lens, Model

__all__ = ["TIER", "Declined", "Measure", "Plan", "compile_request", "parse", "render"]

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
    "minimum": (exp.Min,),
    "min": (exp.Min,),
    "maximum": (exp.Max,),
    "max": (exp.Max,),
}
# The same words applied to a model fact → the aggregate function (render.FACT_FUNCTIONS).
_FACT_AGGREGATES: Mapping[str, str] = {
    word: func
    for func, ws in {"sum": "total sum", "avg": "average avg mean", "min": "minimum min"}.items()
    for word in ws.split()
} | {"maximum": "max", "max": "max"}
_NOT_ADDITIVE = ("text", "varchar", "char", "bool", "date", "time")
# "(over|throughout) (the) entire|whole|full|complete (available) <span>"; "all (available) time".
_WHOLE = frozenset({"entire", "whole", "full", "complete"})
_SPANS = frozenset(["time period", "time range", "date range", "time frame", "period", "history"])


@dataclass
class _Reading:
    """What the grammar words outside lens phrases said (mutable while scanning)."""

    period: tuple[date, date, str] | None = None
    all_time: bool = False
    grains: dict[str, int] = field(default_factory=dict)
    directions: set[bool] = field(default_factory=set)
    numbers: list[int] = field(default_factory=list)
    model_nouns: set[str] = field(default_factory=set)
    aggregates: dict[int, str] = field(default_factory=dict)
    who: bool = False
    who_plural: bool = False
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


def _all_time_at(toks: tuple[str, ...], i: int, free: set[int]) -> int | None:
    """The end of a whole-span phrase starting at ``i`` ("over the entire period"), if any."""

    def tok(k: int) -> str:
        return toks[k] if k < len(toks) and k in free else ""

    k = i + 1 if tok(i) in ("over", "throughout") else i
    k = k + 1 if tok(k) == "the" else k
    if tok(k) == "all":
        k = k + 2 if tok(k + 1) == "available" else k + 1
        return k + 1 if tok(k) == "time" else None
    if tok(k) not in _WHOLE:
        return None
    k = k + 2 if tok(k + 1) == "available" else k + 1
    return next((k + n for n in (2, 1) if " ".join(map(tok, range(k, k + n))) in _SPANS), None)


def _read_grammar(lens: Lens, found: Retrieval) -> _Reading:
    """Classify every token outside a lens phrase, or record it as unknown."""
    toks = found.tokens
    free = set(range(len(toks))) - found.covered()
    nouns = model_nouns(lens)
    longest_noun = max((len(k) for k in nouns), default=0)
    r = _Reading()
    i = 0
    if asks_who(found):
        r.who = True
        r.who_plural = found.words[1:2] in (("are",), ("were",))
        i = 1
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
        whole = _all_time_at(toks, i, free)
        if whole is not None:
            r.all_time = True
            i = whole
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
            r.aggregates[i] = t
        elif t == "team" and r.who and i > 0 and found.words[i - 1] in ("the", "our"):
            pass  # "who … in the team": the people the person dimension ranges over
        elif t not in STOPWORDS:
            r.unknown.append(found.words[i])
        i += 1
    return r


def _resolve(lens: Lens, base: str, targets: tuple[Target, ...], what: str, phrase: str) -> Target:
    """The one target reachable from ``base`` (through a safe join path), else decline."""
    reachable = [t for t in targets if join_paths(lens, base, t.model)]
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


def _plural(found: Retrieval, index: int) -> bool:
    return found.words[index] != found.tokens[index]


def _phrase(found: Retrieval, m: Mention) -> str:
    return " ".join(found.words[m.start : m.end])


def _aggregate_before(found: Retrieval, m: Mention, reading: _Reading) -> tuple[int, str] | None:
    """``(position, word)`` of an aggregation word right before ``m`` ("average of the …")."""
    k = m.start - 1
    if found.tokens[max(k - 1, 0) : k + 1] == ("of", "the"):
        k -= 2
    elif k >= 0 and found.tokens[k] == "of":
        k -= 1
    return (k, reading.aggregates[k]) if k in reading.aggregates else None


def _fact_measure(lens: Lens, facts: tuple[Target, ...], word: str, phrase: str) -> Measure:
    """``word`` (average, total …) applied to the one fact ``phrase`` names."""
    places = sorted({(t.model, t.name) for t in facts})
    if len(places) > 1:
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(f"fact {phrase!r} is ambiguous: it could mean {listed}")
    if word not in _FACT_AGGREGATES:
        raise Declined(f"{word!r} is not a way to aggregate fact {phrase!r}")
    model, name = places[0]
    func = _FACT_AGGREGATES[word]
    col = next(c for c in lens.models[model].facts if c.name == name)
    if func in ("sum", "avg") and col.data_type.lower().startswith(_NOT_ADDITIVE):
        raise Declined(f"fact {model}.{name} is {col.data_type}, which {word!r} cannot aggregate")
    if func != "sum" and _per_period_rows(lens.models[model], phrase):
        # A row of a (period x keys) table is not one "deal": AVG/MIN/MAX over its rows
        # is neither the per-entity nor the per-period figure the question may mean.
        raise Declined(
            f"{word} {phrase!r} would aggregate rows of model {model!r} that are per-period "
            f"cells (by {', '.join(lens.models[model].primary_key) or 'its grain'}), not one "
            f"row per {phrase!r}"
        )
    return Measure.of_fact(lens, model, name, func)


def _per_period_rows(model: Model, phrase: str) -> bool:
    """Whether a fact's rows are per-period cells (its phrase names a grain, or the
    model's primary key is a time dimension plus other keys)."""
    times = {c.name for c in model.time_dimensions}
    keyed = len(model.primary_key) > 1 and bool(times & set(model.primary_key))
    return keyed or any(t in GRAIN_WORDS for t in tokenize(phrase))


def _measure(
    lens: Lens, found: Retrieval, reading: _Reading, allowed_metrics: tuple[str, ...] | None
) -> Measure:
    """The one measure the question names (see the module docstring), else decline."""
    measures: dict[tuple[str, str, str], Measure] = {}
    spent: set[int] = set()  # aggregation words consumed by a fact
    for m in found.mentions:
        if m.kind not in ("metric", "fact"):
            continue
        before = _aggregate_before(found, m, reading)
        if m.kind == "metric":
            if len(m.targets) > 1:
                names = ", ".join(sorted(t.name for t in m.targets))
                raise Declined(f"{_phrase(found, m)!r} could mean several metrics ({names})")
            metric = m.targets[0].name
            if before is None or _fits(lens, metric, before[1]) or not m.facts:
                measure = Measure.of_metric(lens, metric)
            elif lens.metrics[metric].filters:
                raise Declined(
                    f"{before[1]!r} does not fit metric {metric!r}, and its filters would be "
                    f"lost by aggregating fact {_phrase(found, m)!r} instead"
                )
            else:
                measure = _fact_measure(lens, m.facts, before[1], _phrase(found, m))
                spent.add(before[0])
        elif before is None:
            raise Declined(
                f"{_phrase(found, m)!r} is a fact of model {m.targets[0].model!r}: say how to "
                f"aggregate it (average, total, minimum, maximum)"
            )
        else:
            measure = _fact_measure(lens, m.targets, before[1], _phrase(found, m))
            spent.add(before[0])
        measures[(measure.name, measure.model, measure.expression)] = measure
    if not measures:
        raise Declined("the question names no metric of the lens")
    if len(measures) > 1:
        names = ", ".join(sorted({k[0] for k in measures}))
        raise Declined(f"the question names several metrics ({names})")
    measure = next(iter(measures.values()))
    if measure.metric is None:
        for k, word in sorted(reading.aggregates.items()):
            if k not in spent and _FACT_AGGREGATES.get(word) != measure.function:
                raise Declined(f"{word!r} does not fit {measure.name!r} ({measure.expression})")
        return measure
    if allowed_metrics is not None and measure.metric not in allowed_metrics:
        raise Declined(f"metric {measure.metric!r} was not selected by assembly")
    for word in sorted(set(reading.aggregates.values())):
        if not _fits(lens, measure.metric, word):
            tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
            raise Declined(f"{word!r} does not fit metric {measure.metric!r} ({tree.sql()})")
    return measure


def _fits(lens: Lens, metric: str, word: str) -> bool:
    """Whether aggregation ``word`` only restates what ``metric`` already computes."""
    tree = sqlglot.parse_one(lens.metrics[metric].expression, read=lens.config.dialect)
    kinds: set[type[exp.Expr]] = {
        type(node) for node in tree.walk() if isinstance(node, exp.AggFunc)
    }
    if isinstance(tree, exp.Div):
        kinds.add(exp.Div)
    if not kinds or not any(issubclass(k, _AGGREGATE_WORDS[word]) for k in kinds):
        return False
    return word not in ("total", "sum") or not kinds - {exp.Sum, exp.Count}


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
                f"{_phrase(found, f)!r} is a yes/no column; say which rows it describes "
                f"(e.g. '{_phrase(found, f)} {f.targets[0].model}')"
            )
        chosen = _resolve(lens, base, targets, "flag", _phrase(found, f))
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
        values: ``{(model, dimension): distinct values}`` read from the warehouse.
        allowed_metrics: when given, the metrics assembly selected; a different
            reading declines rather than silently using an unrecorded asset.

    Raises:
        Declined: the question is outside the grammar, names no or several
            measures, names something ambiguous or unknown, or needs a join the
            lens does not declare.
    """
    found = retrieve(lens, question, values)
    _check_terms(lens, found.tokens)
    reading = _read_grammar(lens, found)
    measure = _measure(lens, found, reading, allowed_metrics)
    base = measure.model
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
        chosen = _resolve(lens, base, targets, "value", _phrase(found, v))
        assert chosen.value is not None
        new = (chosen.model, chosen.name, chosen.value)
        if any(f[:2] == new[:2] and f != new for f in filters):
            raise Declined(f"several values of {chosen.model}.{chosen.name} are named")
        if new not in filters:
            filters.append(new)
    flags = _flags(lens, found, base, nouns)

    breakdowns: list[tuple[str, str]] = []
    explicit_time: tuple[str, str] | None = None
    plural_breakdown = False
    for d in dims:
        if d in qualifiers:
            continue
        chosen = _resolve(lens, base, d.targets, "dimension", _phrase(found, d))
        place = (chosen.model, chosen.name)
        if chosen.kind == "time_dimension":
            if explicit_time not in (None, place):
                raise Declined("the question names several time dimensions")
            explicit_time = place
            continue
        if place not in breakdowns:
            breakdowns.append(place)
        plural_breakdown = plural_breakdown or _plural(found, d.end - 1)
    if reading.who:
        breakdowns = [_who(lens, base, breakdowns, reading)]
        plural_breakdown = plural_breakdown or reading.who_plural
    if len(breakdowns) > MAX_DIMENSIONS:
        raise Declined(f"more than {MAX_DIMENSIONS} breakdown dimensions")

    if len(reading.grains) > 1:
        raise Declined(f"several time grains ({', '.join(sorted(reading.grains))})")
    grain = next(iter(reading.grains), None)
    period = reading.period
    if period and reading.all_time:
        raise Declined("the question names both a period and the whole time span")
    if grain and period and _GRAIN_ORDER.index(grain) >= _GRAIN_ORDER.index(period[2]):
        raise Declined(f"a {grain} breakdown within one {period[2]} is not a question I can read")
    if grain and reading.who:
        raise Declined(f"'who' with a {grain} breakdown: one person overall, or one per {grain}?")
    time: tuple[str, str] | None = None
    if explicit_time is not None:
        if grain is None and period is None:
            raise Declined(f"time dimension {explicit_time[1]!r} named without a grain or period")
        time = explicit_time
    elif grain is not None or period is not None:
        candidates = time_models(lens, base)
        if len(candidates) != 1:
            raise Declined(f"no single time dimension is reachable from model {base!r}")
        one_path(lens, base, candidates[0])
        col = lens.models[candidates[0]].time_dimension()
        assert col is not None
        time = (candidates[0], col.name)

    rank = _rank(reading, found, grain, bool(breakdowns), plural_breakdown)
    span = (period[0], period[1]) if period else None
    plan = Plan(measure, tuple(breakdowns), tuple(filters), tuple(flags), time, grain, span, rank)
    involved = set(plan.models())
    for target in plan.models():
        involved.update(j.to for _, j in one_path(lens, base, target))
    stray = ", ".join(sorted(reading.model_nouns - involved))
    if stray:
        raise Declined(f"the question names model(s) {stray} that the query would not use")
    return plan


def _who(
    lens: Lens, base: str, breakdowns: list[tuple[str, str]], reading: _Reading
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
