"""Ordering phrases of the ``fast`` tier: "ordered by", "sorted by", "in descending order" (pure).

A question may end with how to order its result: ``… ordered by net revenue``, ``…
sorted by region``, ``…, order the results by month``, each optionally with a direction
(``ascending``, ``descending``, ``asc``, ``desc``, ``in descending order``), or just ``…
in descending order``; ``sorted in descending order by cost`` and ``ordered by ascending
age`` put the direction first; ``sorted by their earnings`` names the rows' own column
(the possessive is dropped); ``by age from the oldest to the youngest`` (``from old to
young``, ``from high to low`` …) is ``from highest to lowest``. ``from highest to
lowest`` (``from lowest to highest``) and ``by the highest <measure> first`` order by a
value: their key must be a measure (or, with one metric, the closing words of one of its
phrases: "from highest to lowest participants"), and with no key the question must have
exactly one measure.
:func:`split_ordering` takes the phrase off the question before the rest is read
(its words, "order" among them, would otherwise be read as lens phrases);
:func:`order_plan` resolves the key against the plan:

* the key must name one column of the result: a breakdown dimension, the time
  bucket (its grain word or time dimension) or one of the measures (or a metric
  computing the same aggregate on the same model with the same filters: "how many
  publications …, ordered by the number of publications"; "the number of <noun>"
  after a count of the noun's entities, "how many meals …") — anything else declines;
* with no direction, a dimension or the time bucket sorts ascending; a measure
  declines (highest first, or lowest?);
* a dimension called a month (its name or a synonym says so) whose stored values
  are mostly month names ("January", "Feb": at least three, and more than half) is
  ordered in calendar order, any other value
  after the months (:mod:`reconciler.reading.phrases.months` renders it); one whose values
  are mostly weekday names ("Monday": which day starts the week?) declines: its
  text sorts alphabetically, not in calendar order;
* a direction without a key orders a time series by its bucket and a breakdown
  by its (first) measure; "from highest to lowest" without a key orders by the one
  measure (several measures decline: which one?);
* an ordering phrase with a ranking, a change, a share, ties or measures on
  several models is not read (they fix their own order).

The ordered key comes first in the ORDER BY; the other keys break ties.
An ordering phrase anywhere but at the end keeps its words and declines.
"""

from __future__ import annotations

import dataclasses
import re

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import GRAIN_WORDS, MONTHS, canonical_sql, ordering_phrase, tokenize
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan

ALPHABETICAL = re.compile(
    r"[\s,;]*(?:(?:ordered|sorted|listed|arranged)\s+)?"
    r"(?:alphabetically|in\s+alphabetical\s+order)[\s.?!]*$",
    re.IGNORECASE,
)
"""A closing "ordered alphabetically" / "in alphabetical order" (a listing's own order)."""
_ALPHABETICAL_WAY = re.compile(
    r"[\s,;]*(?:(?:ordered|sorted|listed|arranged)\s+)?in\s+"
    r"(?P<way>reverse|reversed|descending|ascending)\s+"
    r"(?:alphabetical|lexicographical|lexicographic)\s+order"
    r"(?:\s+(?:of|by)\s+(?P<key>[\w\s]+?))?[\s.?!]*$",
    re.IGNORECASE,
)


def split_alphabetical(question: str) -> tuple[str, bool | None, str | None]:
    """``(question without a closing alphabetical order, descending, key)``: ``False``
    for :data:`ALPHABETICAL` or "in ascending alphabetical order", ``True`` for "in
    reverse (reversed, descending) alphabetical order" ("lexicographical" says the same),
    ``None`` (the question unchanged) for neither; the key named after it ("… order of
    name"), if any."""
    match = ALPHABETICAL.search(question)
    if match is not None:
        return question[: match.start()], False, None
    match = _ALPHABETICAL_WAY.search(question)
    if match is None:
        return question, None, None
    descending = match.group("way").lower() != "ascending"
    return question[: match.start()], descending, match.group("key")


def split_orders(question: str) -> tuple[str, Ordering | None, bool | None]:
    """``(question without its closing orders, ordering phrase, alphabetical)``: an
    alphabetical order (:func:`split_alphabetical`), then an ordering phrase
    (:func:`split_ordering`), settled together by :func:`alphabetical_key`."""
    rest, alphabetical, key = split_alphabetical(question)
    rest, ordering = split_ordering(rest)
    ordering, alphabetical = alphabetical_key(alphabetical, key, ordering)
    return rest, ordering, alphabetical


def alphabetical_key(
    alphabetical: bool | None, key: str | None, ordering: Ordering | None
) -> tuple[Ordering | None, bool | None]:
    """``(ordering, alphabetical)`` of a listing: an alphabetical order that names its
    key ("in ascending alphabetical order of name"), or closes an ordering phrase with a
    key and no direction ("ordered by their names in alphabetical order"), is that
    ordering in that direction; anything else unchanged (two orders decline)."""
    if alphabetical is None:
        return ordering, alphabetical
    if ordering is None and key is not None:
        return Ordering(key, alphabetical), None
    if key is None and ordering is not None and ordering.key and ordering.descending is None:
        return Ordering(ordering.key, alphabetical), None
    return ordering, alphabetical


# "… sorted by their earnings": the rows' own column.
_POSSESSIVES = frozenset({"their", "its"})
# (higher, lower) adjective pairs of a closing "by <key> from old to young".
_OPPOSITES = frozenset(
    {
        ("high", "low"),
        ("old", "young"),
        ("older", "younger"),
        ("oldest", "youngest"),
        ("tall", "short"),
        ("tallest", "shortest"),
        ("heavy", "light"),
        ("heaviest", "lightest"),
        ("big", "small"),
        ("biggest", "smallest"),
        ("large", "small"),
        ("largest", "smallest"),
        ("most", "least"),
        ("latest", "earliest"),
        ("newest", "oldest"),
    }
)
_ADJECTIVE_PAIR = re.compile(
    r"\bby\s+[\w\s]+?[\s,]+(?P<pair>from\s+(?:the\s+)?(?P<first>[a-z]+)\s+to\s+"
    r"(?:the\s+)?(?P<second>[a-z]+))[\s.?!]*$",
    re.IGNORECASE,
)
_DIRECTIONS = {"ascending": False, "asc": False, "descending": True, "desc": True}
# Directions that rank by a value: "from highest to lowest", "the highest … first".
_BY_VALUE = {"highest": True, "lowest": False}
_WEEKDAYS = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
)


@dataclasses.dataclass(frozen=True)
class Ordering:
    """An ordering phrase: the key's words (``None``: none named), the direction
    (``True`` descending, ``False`` ascending, ``None`` not said), and whether the
    phrase orders by a value ("from highest to lowest": the key must be a measure)."""

    key: str | None
    descending: bool | None
    by_value: bool = False


def split_ordering(question: str) -> tuple[str, Ordering | None]:
    """``(question without its closing ordering phrase, the phrase)``, or
    ``(question, None)`` when it closes with none
    (:func:`reconciler.assembly.text.ordering_phrase` finds it)."""
    found = ordering_phrase(_plain_direction(question))
    if found is None:
        return question, None
    rest, key, direction = found
    key, direction = _key_words(key, direction)
    word = direction.lower() if direction else None
    if word in _BY_VALUE:
        return rest, Ordering(key, _BY_VALUE[word], by_value=True)
    return rest, Ordering(key, _DIRECTIONS[word] if word else None)


def _plain_direction(question: str) -> str:
    """``question`` with a closing "by <key> from old to young" (any pair of
    :data:`_OPPOSITES`, in either order) spelled "from highest to lowest" (or "from
    lowest to highest"): the adjectives give the direction, the key is named."""
    match = _ADJECTIVE_PAIR.search(question)
    if match is None:
        return question
    first, second = match.group("first").lower(), match.group("second").lower()
    if (first, second) in _OPPOSITES:
        spelled = "from highest to lowest"
    elif (second, first) in _OPPOSITES:
        spelled = "from lowest to highest"
    else:
        return question
    return question[: match.start("pair")] + spelled + question[match.end("pair") :]


def _key_words(key: str | None, direction: str | None) -> tuple[str | None, str | None]:
    """The key without a possessive naming the rows themselves ("by their age") and
    with a direction standing before it ("by ascending age") moved out of it."""
    if key is None:
        return key, direction
    words = key.split()
    if words[:1] and words[0].lower() in _POSSESSIVES:
        words = words[1:]
    if direction is None and words[:1] and words[0].lower() in _DIRECTIONS:
        direction, words = words[0], words[1:]
    return (" ".join(words) or None), direction


def order_plan(lens: Lens, plan: Plan, ordering: Ordering, values: DimensionValues) -> Plan:
    """``plan`` ordered as ``ordering`` says (rules in the module docstring).

    Raises:
        Declined: the key names no single column of the result, a measure is
            ordered without a direction, or the plan fixes its own order.
    """
    fixed = {
        "a ranking": plan.rank is not None,
        "a change between periods": plan.change is not None,
        "a share": plan.share is not None,
        "measures on several models": bool(plan.joined),
    }
    clash = next((what for what, there in fixed.items() if there), None)
    if clash is not None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"an ordering phrase with {clash} is not read (it has its own order)",
        )
    if not plan.breakdowns and plan.grain is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "an ordering phrase on a single value: there is nothing to order",
        )
    if ordering.key is None:
        alias = plan.measure.name if ordering.by_value else plan.grain or plan.measure.name
        if ordering.by_value and plan.extra:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                "ordered from highest to lowest: by which of the measures?",
            )
        return dataclasses.replace(plan, order=(alias, bool(ordering.descending)))
    try:
        alias, is_measure = _key_column(lens, plan, ordering.key, values)
    except Declined:
        if not (ordering.by_value and _head_of_measure(lens, plan, ordering.key)):
            raise
        alias, is_measure = plan.measure.name, True
    if ordering.by_value and not is_measure:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"ordered from highest to lowest {ordering.key!r}: that is not a measure of the result",
        )
    if is_measure and ordering.descending is None:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"ordered by {ordering.key!r}: highest first or lowest first? "
            "Say 'descending' or 'ascending'",
        )
    named = next(((m, d) for m, d in plan.breakdowns if d == alias and not is_measure), None)
    months = _calendar_names(lens, values, *named, ordering.key) if named else ()
    return dataclasses.replace(plan, order=(alias, bool(ordering.descending)), months=months)


def _key_column(lens: Lens, plan: Plan, key: str, values: DimensionValues) -> tuple[str, bool]:
    """``(output column alias, whether it is a measure)`` that ``key`` names."""
    tokens = tuple(t for t in tokenize(key) if t != "the")
    if plan.grain is not None and len(tokens) == 1 and GRAIN_WORDS.get(tokens[0]) == plan.grain:
        return plan.grain, False
    if _restated_count(lens, plan, tokens):
        return plan.measure.name, True
    found = retrieve(lens, key, values)
    covered = found.covered()
    loose = [w for i, w in enumerate(found.words) if i not in covered and found.tokens[i] != "the"]
    if loose or len(found.mentions) != 1:
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"ordered by {key!r}: that is not one column of the result"
        )
    mention = found.mentions[0]
    measures = {m.metric: m.name for m in (plan.measure, *plan.extra) if m.metric}
    for target in mention.targets:
        if target.kind == "metric" and target.name in measures:
            return measures[target.name], True
        if target.kind == "metric" and (same := _same_measure(lens, plan, target.name)):
            return same, True
        if target.kind == "dimension" and (target.model, target.name) in plan.breakdowns:
            return target.name, False
        if (
            target.kind == "time_dimension"
            and plan.grain
            and plan.time
            == (
                target.model,
                target.name,
            )
        ):
            return plan.grain, False
    raise Declined(
        DeclineKind.UNKNOWN_TERM, f"ordered by {key!r}: that is not a column of the result"
    )


def _calendar_names(
    lens: Lens, values: DimensionValues, model: str, dim: str, key: str
) -> tuple[tuple[str, int], ...]:
    """``(stored value, month number)`` of the month names of a dimension called a
    month (its name or a synonym says ``month``) whose stored values are mostly month
    names (at least three, and more than half): it is ordered in calendar order; ``()``
    for one with few such names.

    Raises:
        Declined: the stored values are mostly weekday names (which day starts the
            week?), or mostly month and weekday names together: their text sorts
            April, August, December …, not in calendar order.
    """
    stored = [v for v in values.get((model, dim), ()) if isinstance(v, str)]
    months = [(v, MONTHS[v.strip().lower()]) for v in stored if v.strip().lower() in MONTHS]
    column = next(d for d in lens.models[model].dimensions if d.name == dim)
    called = any("month" in tokenize(text) for text in (column.name, *column.synonyms))
    if called and len(months) >= 3 and 2 * len(months) > len(stored):
        return tuple(months)
    names = [v for v in stored if v.lower() in MONTHS or v.lower() in _WEEKDAYS]
    if len(names) >= 3 and 2 * len(names) > len(stored):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"ordered by {key!r}: {model}.{dim} holds names ({names[0].title()!r} …) "
            "that sort alphabetically, not in calendar order; order by a date column instead",
        )
    return ()


def _restated_count(lens: Lens, plan: Plan, tokens: tuple[str, ...]) -> bool:
    """Whether ``tokens`` ("number of meals", "count of meals") restate the plan's one
    measure, a count of the entities of the noun's model ("how many meals …")."""
    measure = plan.measure
    if plan.extra or measure.function != "count_distinct" or measure.metric is not None:
        return False
    if tokens[:2] not in (("number", "of"), ("count", "of")):
        return False
    return model_nouns(lens).get(tokens[2:]) == measure.model


def _same_measure(lens: Lens, plan: Plan, metric: str) -> str | None:
    """The alias of the plan's measure that computes what lens metric ``metric`` does
    (same model, aggregate SQL and filters), else ``None``."""
    other = Measure.of_metric(lens, metric)
    dialect = lens.config.dialect

    def same(m: Measure) -> bool:
        return (m.model, m.filters) == (other.model, other.filters) and canonical_sql(
            m.expression, dialect
        ) == canonical_sql(other.expression, dialect)

    return next((m.name for m in (plan.measure, *plan.extra) if same(m)), None)


def _head_of_measure(lens: Lens, plan: Plan, key: str) -> bool:
    """Whether ``key`` is the closing words of a phrase of the plan's one metric (its
    name, label or a synonym): "from highest to lowest participants" for a metric
    called "active participants"."""
    words = tuple(t for t in tokenize(key) if t != "the")
    if plan.extra or plan.measure.metric is None or not words:
        return False
    metric = lens.metrics[plan.measure.metric]
    phrases = (metric.name, metric.label or "", *metric.synonyms)
    return any(tokenize(p)[-len(words) :] == words for p in phrases)
