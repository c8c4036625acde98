"""Measures of the ``fast`` tier: the metrics, fact aggregates or entity count asked for (pure).

See :func:`select_measures` for the rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import Target, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, counted_model, metric_models
from reconciler.assembly.text import GRAIN_WORDS, tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, Measure
from reconciler.reading.lex import AGGREGATE_WORDS
from reconciler.reading.phrases.words import Reading, phrase_of

# The same words applied to a model fact → the aggregate function (compiler.FACT_FUNCTIONS).
FACT_AGGREGATES: Mapping[str, str] = {
    word: func
    for func, ws in {"sum": "total sum", "avg": "average avg mean", "min": "minimum min"}.items()
    for word in ws.split()
} | {"maximum": "max", "max": "max"}
NOT_ADDITIVE = ("text", "varchar", "char", "bool", "date", "time")


def aggregate_before(found: Retrieval, m: Mention, reading: Reading) -> tuple[int, str] | None:
    """``(position, word)`` of an aggregation word right before ``m`` ("average of the …")."""
    k = m.start - 1
    if found.tokens[max(k - 1, 0) : k + 1] == ("of", "the"):
        k -= 2
    elif k >= 0 and found.tokens[k] == "of":
        k -= 1
    return (k, reading.aggregates[k]) if k in reading.aggregates else None


def fact_measure(lens: Lens, facts: tuple[Target, ...], word: str, phrase: str) -> Measure:
    """``word`` (average, total …) applied to the one fact ``phrase`` names."""
    places = sorted({(t.model, t.name) for t in facts})
    if len(places) > 1:
        listed = ", ".join(f"{m}.{n}" for m, n in places)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"fact {phrase!r} is ambiguous: it could mean {listed}"
        )
    if word not in FACT_AGGREGATES:
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"{word!r} is not a way to aggregate fact {phrase!r}"
        )
    model, name = places[0]
    func = FACT_AGGREGATES[word]
    col = next(c for c in lens.models[model].facts if c.name == name)
    if func in ("sum", "avg") and col.data_type.lower().startswith(NOT_ADDITIVE):
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"fact {model}.{name} is {col.data_type}, which {word!r} cannot aggregate",
        )
    if func != "sum" and per_period_rows(lens.models[model], phrase):
        # A row of a (period x keys) table is not one "deal": AVG/MIN/MAX over its rows
        # is neither the per-entity nor the per-period figure the question may mean.
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"{word} {phrase!r} would aggregate rows of model {model!r} that are per-period "
            f"cells (by {', '.join(lens.models[model].primary_key) or 'its grain'}), not one "
            f"row per {phrase!r}",
        )
    return Measure.of_fact(lens, model, name, func)


def per_period_rows(model: Model, phrase: str) -> bool:
    """Whether a fact's rows are per-period cells (its phrase names a grain, or the
    model's primary key is a time dimension plus other keys)."""
    times = {c.name for c in model.time_dimensions}
    keyed = len(model.primary_key) > 1 and bool(times & set(model.primary_key))
    return keyed or any(t in GRAIN_WORDS for t in tokenize(phrase))


def select_measures(
    lens: Lens, found: Retrieval, reading: Reading, allowed_metrics: tuple[str, ...] | None
) -> tuple[Measure, ...]:
    """The measures the question names, in question order, else decline.

    * One measure: a metric, or an aggregation word right before a fact (see
      :mod:`reconciler.generators.fast`); every other aggregation word must fit it.
    * Several measures ("net revenue and orders by region", "average deal size and
      average probability"): adjacent or joined by ``and`` only ("revenue per order"
      is a ratio, not two columns), those on one model reading the same models
      (several models are aggregated apart and joined, see
      :func:`reconciler.generators.fast.parse`), and each aggregation word right
      before the measure it fits.
      A measure listed without its own word takes the previous one's ("average deal
      size and cycle length" averages both); where that word does not fit a metric
      that is no fact, the question declines.
    * None: a count of entities (:func:`entity_count`).

    Raises:
        Declined: no measure, an ambiguous phrase, an aggregation word that does
            not fit, measures on several models or not joined by ``and``, or a
            metric assembly did not select.
    """
    measures: dict[tuple[str, str, str], Measure] = {}
    named: list[tuple[Mention, Measure]] = []
    spans: list[tuple[int, int]] = []
    spent: set[int] = set()  # aggregation words consumed by a fact
    claimed: set[int] = set()  # aggregation words right before a metric they fit
    previous: tuple[int, str] | None = None  # the aggregation word of the last measure
    last_end = -1
    for m in found.mentions:
        if m.kind not in ("metric", "fact"):
            continue
        _check_counted_noun(lens, found, m)
        before = aggregate_before(found, m, reading)
        inherited = before is None and previous is not None and _listed(found, last_end, m.start)
        # "minimum age and maximum age": a phrase that says its own word inherits none
        inherited = inherited and found.words[m.start] not in AGGREGATE_WORDS
        if inherited:
            before = previous  # "average deal size and cycle length": both averaged
        measure, used = _measure_of(lens, found, m, before, inherited)
        if used is not None:
            (spent if measure.metric is None else claimed).add(used)
        measures[(measure.name, measure.model, measure.expression)] = measure
        named.append((m, measure))
        spans.append((before[0] if before and not inherited else m.start, m.end))
        previous, last_end = before, m.end
    if not measures:
        return (entity_count(lens, found, reading),)
    for measure in measures.values():
        if allowed_metrics is not None and measure.metric not in (None, *allowed_metrics):
            raise Declined(
                DeclineKind.EXCLUDED, f"metric {measure.metric!r} was not selected by assembly"
            )
    if len(named) > 1:
        _check_readings(lens, found, named, spans)
    if len(measures) > 1:
        return _several(lens, found, reading, tuple(measures.values()), spans, spent | claimed)
    measure = next(iter(measures.values()))
    _check_words(lens, measure, reading, spent)
    return (measure,)


_COUNTING = (("how", "many"), ("number", "of"), ("count", "of"))
_RANKING = ("most", "fewest", "least")  # "which medication has the most prescriptions"


def _check_counted_noun(lens: Lens, found: Retrieval, m: Mention) -> None:
    """Decline ``how many <noun>`` (or ``the most <noun>``) where the noun is a model's
    and also a metric that does not count ("how many payments" beside a metric
    ``payments`` = SUM(amount)): the words count the model's rows, the lens phrase names
    a sum; two readings.

    Raises:
        Declined: naming both readings and how to say either.
    """
    if m.kind != "metric":
        return
    counted = found.tokens[max(m.start - 2, 0) : m.start] in _COUNTING
    if not counted and (m.start == 0 or found.tokens[m.start - 1] not in _RANKING):
        return
    names = {t.name for t in m.targets}
    model = model_nouns(lens).get(found.tokens[m.start : m.end])
    if model is None:
        if counted:
            _check_counting_metric(lens, found, m, names)
        return
    for name in sorted(names):
        tree = sqlglot.parse_one(lens.metrics[name].expression, read=lens.config.dialect)
        if tree.find(exp.Count) is None:
            phrase = phrase_of(found, m)
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{' '.join(found.words[m.start - (2 if counted else 1) : m.end])!r} reads "
                f"two ways: the number of {model} rows, or metric {name!r} ({tree.sql()}), "
                f"which {phrase!r} also "
                f"names; ask for {name!r} by name, or drop {phrase!r} from its synonyms",
            )


def _fact_models(lens: Lens, found: Retrieval, m: Mention) -> list[str]:
    """The models the fact phrase ``m`` may be of: every model it names, or the one
    of them a noun of the question names ("countries … population")."""
    models = sorted({t.model for t in m.targets})
    nouns = model_nouns(lens)
    toks = found.tokens
    named = {
        nouns.get(toks[i:j])
        for i in range(len(toks))
        for j in range(i + 1, min(i + 4, len(toks) + 1))
    }
    return [x for x in models if x in named] if len(named & set(models)) == 1 else models


def _check_counting_metric(lens: Lens, found: Retrieval, m: Mention, names: set[str]) -> None:
    """Decline ``how many <noun>`` where the noun names a metric that does not count and
    the lens also says ``number of <noun>`` (or ``<noun> count``) for a counting metric
    ("how many sales" beside ``sales`` = SUM(amount) and ``sale_count``, "number of
    sales"): the words ask the count; the metric the noun names is a sum.

    Raises:
        Declined: naming both metrics.
    """
    noun = found.tokens[m.start : m.end]
    spellings = {("number", "of", *noun), (*noun, "count")}
    counting = sorted(
        name
        for name, metric in lens.metrics.items()
        if name not in names
        and any(tokenize(p) in spellings for p in (metric.label or "", *metric.synonyms))
        and sqlglot.parse_one(metric.expression, read=lens.config.dialect).find(exp.Count)
    )
    summed = sorted(
        name
        for name in names
        if sqlglot.parse_one(lens.metrics[name].expression, read=lens.config.dialect).find(
            exp.Count
        )
        is None
    )
    if counting and summed:
        words = " ".join(found.words[m.start - 2 : m.end])
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{words!r} counts, but {phrase_of(found, m)!r} names metric {summed[0]!r}, "
            f"which does not count; {counting[0]!r} is the lens's number of them: ask for "
            f"{counting[0]!r} or {summed[0]!r} by name",
        )


def _measure_of(
    lens: Lens,
    found: Retrieval,
    m: Mention,
    before: tuple[int, str] | None,
    inherited: bool,
) -> tuple[Measure, int | None]:
    """The measure a metric or fact mention names, given the aggregation word ``before``
    it (its own, or the previous measure's when ``inherited``).

    Returns:
        ``(measure, position of the aggregation word it used)``: the word fits a
        metric (claimed) or aggregates a fact (spent); ``None`` when it used none.
    """
    if m.kind != "metric":
        models = _fact_models(lens, found, m)
        if before is None and len(models) > 1:  # "populations" of cities, or of countries?
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{phrase_of(found, m)!r} is a fact of several models ({', '.join(models)}): "
                "name the one meant, and how to aggregate it (average, total, minimum, maximum)",
            )
        if before is None:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase_of(found, m)!r} is a fact of model {models[0]!r}: say how to "
                f"aggregate it (average, total, minimum, maximum)",
            )
        return fact_measure(lens, m.targets, before[1], phrase_of(found, m)), before[0]
    if len(m.targets) > 1:
        names = ", ".join(sorted(t.name for t in m.targets))
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase_of(found, m)!r} could mean several metrics ({names})",
        )
    metric = m.targets[0].name
    _check_namesake(lens, found, m, metric)
    fitting = before is not None and fits(lens, metric, before[1])
    if before is None or fitting or (not m.facts and not inherited):
        return Measure.of_metric(lens, metric), before[0] if before and fitting else None
    if not m.facts:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"does {before[1]!r} apply to {phrase_of(found, m)!r} too? It does not fit "
            f"metric {metric!r}",
        )
    if lens.metrics[metric].filters:
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"{before[1]!r} does not fit metric {metric!r}, and its filters would be "
            f"lost by aggregating fact {phrase_of(found, m)!r} instead",
        )
    return fact_measure(lens, m.facts, before[1], phrase_of(found, m)), before[0]


def _check_namesake(lens: Lens, found: Retrieval, m: Mention, metric: str) -> None:
    """Decline a metric whose words also name a fact of another model the question
    names: "total honey kg of hives" beside metric ``total_honey_kg`` (a sum over
    harvests) and fact ``hives.honey_kg``. The metric sums the harvests' column; the
    words ask for the hives' own one, its namesake. Served, the hives' rows would be
    read as the harvests' total.

    Raises:
        Declined: naming the metric's model and the namesake fact.
    """
    own = set(metric_models(lens, metric))
    toks = found.tokens[m.start : m.end]
    phrases = {toks, toks[1:] if toks[:1] and toks[0] in FACT_AGGREGATES else toks}
    namesakes = {(t.model, t.name) for t in m.facts if t.model not in own}
    for model in lens.models.values():
        if model.name in own:
            continue
        for col in model.facts:
            spelled = (col.name.replace("_", " "), *col.synonyms)
            if any(tokenize(p) in phrases for p in spelled):
                namesakes.add((model.name, col.name))
    if not namesakes:
        return
    nouns = model_nouns(lens)
    named = {
        nouns.get(found.tokens[i:j])
        for i in range(len(found.tokens))
        for j in range(i + 1, min(i + 4, len(found.tokens) + 1))
    }
    clash = sorted((mod, col) for mod, col in namesakes if mod in named)
    if clash:
        listed = ", ".join(f"{mod}.{col}" for mod, col in clash)
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase_of(found, m)!r} names metric {metric!r} (over "
            f"{', '.join(sorted(own))}) and fact {listed} of a model the question names, "
            "a namesake: two readings (the lens should phrase them apart)",
        )


def _check_words(lens: Lens, measure: Measure, reading: Reading, spent: set[int]) -> None:
    """Every aggregation word of a one-measure question fits that measure, else decline."""
    if measure.metric is None:
        for k, word in sorted(reading.aggregates.items()):
            if k not in spent and FACT_AGGREGATES.get(word) != measure.function:
                raise Declined(
                    DeclineKind.UNKNOWN_TERM,
                    f"{word!r} does not fit {measure.name!r} ({measure.expression})",
                )
        return
    for word in sorted(set(reading.aggregates.values())):
        if not fits(lens, measure.metric, word):
            tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{word!r} does not fit metric {measure.metric!r} ({tree.sql()})",
            )


def _listed(found: Retrieval, end: int, start: int) -> bool:
    """Whether tokens ``[end, start)`` only list: "and" (then "of" may follow: "the
    average of X and of Y"), or nothing (a comma), "the" aside. A bare "of" is no list:
    "amount of orders" is one thing, not two."""
    between = tuple(t for t in found.tokens[end:start] if t != "the")
    return between in ((), ("and",), ("and", "of"))


def _counts(lens: Lens, measure: Measure) -> bool:
    """Whether ``measure`` is a metric counting rows (``COUNT(…)``, not DISTINCT)."""
    if measure.metric is None:
        return False
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    return isinstance(tree, exp.Count) and not isinstance(tree.this, exp.Distinct)


def _check_readings(
    lens: Lens,
    found: Retrieval,
    named: list[tuple[Mention, Measure]],
    spans: list[tuple[int, int]],
) -> None:
    """Decline a question whose measure phrases have two readings.

    Two measures (each with its aggregation word, ``spans``) right next to each
    other, or with only "of" between ("order amount", "amount of orders", "total
    amount average price"), and not listed with "and":

    * one is a metric phrase that is also a model's noun ("orders": metric
      ``order_count`` and model ``orders``): a column of its own, or the rows the
      other measure is taken over?
    * one is a fact or a count metric: two columns, or one measure of the other's
      rows?

    Raises:
        Declined: naming both readings.
    """
    nouns = model_nouns(lens)
    for ((a, ma), (_, end)), ((b, mb), (start, _)) in itertools.pairwise(
        zip(named, spans, strict=True)
    ):
        between = tuple(t for t in found.tokens[end:start] if t != "the")
        if between not in ((), ("of",)):
            continue  # "and" lists them plainly
        for m, measure in ((a, ma), (b, mb)):
            model = nouns.get(found.tokens[m.start : m.end])
            if measure.metric is not None and model is not None:
                raise Declined(
                    DeclineKind.AMBIGUOUS_READING,
                    f"{phrase_of(found, m)!r} reads two ways: metric {measure.metric!r} "
                    f"or the rows of model {model!r} that "
                    f"{(mb if m is a else ma).name} is taken over",
                )
        if ma.metric is None or mb.metric is None or _counts(lens, ma) or _counts(lens, mb):
            words = " ".join(found.words[a.start : b.end])
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{words!r} reads two ways: {ma.name} and {mb.name} as two columns, or one "
                f"measure of the other's rows; join them with 'and' for two columns",
            )


def _several(
    lens: Lens,
    found: Retrieval,
    reading: Reading,
    measures: tuple[Measure, ...],
    spans: list[tuple[int, int]],
    used: set[int],
) -> tuple[Measure, ...]:
    """Several measures side by side, if the question lists them plainly (see above)."""
    names = ", ".join(m.name for m in measures)
    for model in sorted({m.model for m in measures}):
        # An inner join one measure needs would drop rows from the others' figures.
        group = [m for m in measures if m.model == model]
        if len({m.models for m in group}) > 1:
            listed = "; ".join(f"{m.name}: {', '.join(m.models)}" for m in group)
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT, f"the metrics read different models ({listed})"
            )
    for (_, end), (start, _) in itertools.pairwise(spans):
        if not _listed(found, end, start):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"the question names several metrics ({names}) joined by "
                f"{' '.join(found.words[end:start])!r}, not a plain list",
            )
    loose = sorted(set(reading.aggregates) - used)
    if loose:
        word = reading.aggregates[loose[0]]
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{word!r} does not say which of the metrics ({names}) it applies to",
        )
    return measures


def _read_as(found: Retrieval) -> str:
    """What the question's column phrases were read as (a lens author's clue when a model
    noun was taken for a column's synonym): ``" (read: 'bikes' as rentals.bike_type)"``,
    at most three, or ``""``."""
    read = [
        f"{' '.join(found.words[m.start : m.end])!r} as {m.targets[0].model}.{m.targets[0].name}"
        for m in found.mentions
        if m.targets and m.kind in ("dimension", "time_dimension", "fact")
    ][:3]
    return f" (read: {'; '.join(read)})" if read else ""


def entity_count(lens: Lens, found: Retrieval, reading: Reading) -> Measure:
    """``how many <noun>`` / ``number of <noun>`` / ``count of <noun>``, where the noun
    names a model (boolean flags may stand between: "how many active customers"):
    ``COUNT(DISTINCT <primary key>)`` of that model, aliased ``<model>_count``; a
    model whose key has several columns holds one entity per row: ``COUNT(*)``.

    Raises:
        Declined: no such phrase; the model has no ``primary_key``; a
            COUNT metric with filters lives on the model (the lens counts those
            entities its own way); an aggregation word other than the opener (and
            "total" right before it: "the total count of teachers").
    """
    counted = counted_model(lens, found)
    if counted is None:
        raise Declined(
            DeclineKind.UNKNOWN_TERM, "the question names no metric of the lens" + _read_as(found)
        )
    start, _, _, model = counted
    key = lens.models[model].primary_key
    if not key:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"counting {model}: model {model!r} declares no primary_key to count",
        )
    for metric in lens.metrics.values():
        tree = sqlglot.parse_one(metric.expression, read=lens.config.dialect)
        if metric.model == model and metric.filters and tree.find(exp.Count):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"metric {metric.name!r} counts {model} rows with filters: does the question "
                f"mean it, or every {model} row?",
            )
    for pos, word in sorted(reading.aggregates.items()):
        if pos != start and not (word == "total" and pos == start - 1):  # "the total count of"
            raise Declined(DeclineKind.UNKNOWN_TERM, f"{word!r} does not fit a count of {model}")
    dialect = lens.config.dialect
    # A row of a composite key is one entity: its rows are counted, and a join that
    # repeats them is the compiler's (fanout_doubt: kept once per row, or declined).
    one = exp.Distinct(expressions=[exp.column(key[0])]) if len(key) == 1 else exp.Star()
    sql = exp.Count(this=one).sql(dialect=dialect)
    return Measure(f"{model}_count", model, sql, (), (model,), None, "count_distinct")


def fits(lens: Lens, metric: str, word: str) -> bool:
    """Whether aggregation ``word`` only restates what ``metric`` already computes."""
    tree = sqlglot.parse_one(lens.metrics[metric].expression, read=lens.config.dialect)
    kinds: set[type[exp.Expr]] = {
        type(node) for node in tree.walk() if isinstance(node, exp.AggFunc)
    }
    if isinstance(tree, exp.Div):
        kinds.add(exp.Div)
    if not kinds or not any(issubclass(k, AGGREGATE_WORDS[word]) for k in kinds):
        return False
    return word not in ("total", "sum") or not kinds - {exp.Sum, exp.Count}


def check_extras(
    lens: Lens,
    measures: tuple[Measure, ...],
    reading: Reading,
    rank: tuple[bool, int] | None,
    keys: int,
) -> None:
    """Decline the combinations of several measures, shares and ties that have no one reading.

    Args:
        lens: the lens (its dialect parses the measure).
        measures: what :func:`select_measures` returned.
        reading: the grammar words (``share``, ``ties``).
        rank: the question's ``(descending, n)`` ranking, if any.
        keys: number of result keys (breakdowns plus the time bucket).

    Raises:
        Declined: a ranking or a share of several measures; ``with ties`` without a
            ranking; a share of a measure that does not add up (a ratio, average,
            minimum …), or a share without exactly one key to divide it over.
    """
    names = ", ".join(m.name for m in measures)
    if len(measures) > 1 and rank is not None:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"a ranking by several metrics ({names}): which one orders it?",
        )
    if len(measures) > 1 and reading.share:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, f"a {reading.share} of several metrics ({names})"
        )
    if reading.ties and rank is None:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "'with ties' needs a ranking (top 3 …)")
    if not reading.share:
        return
    measure = measures[0]
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    sums = isinstance(tree, exp.Sum) or (
        isinstance(tree, exp.Count) and not isinstance(tree.this, exp.Distinct)
    )
    if not sums and measure.function != "count_distinct":
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"a {reading.share} of {measure.name} ({tree.sql()}): only a sum or a count "
            f"adds up to a total to take a {reading.share} of",
        )
    if keys != 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a {reading.share} needs exactly one breakdown or time grain to divide the "
            f"total over (this question has {keys})",
        )
