"""Output clauses and rankings by several measures in the ``fast`` tier (pure).

Two spellings name the result's columns beyond what the main question asks:

* an output clause after the question: a sentence ``Return (the) A, B and C``
  (``Give me …``, ``List …``, ``Show …``) or a trailing ``…, showing A and B``; or
  one sentence ``Return the name and average rating for each business …`` whose
  items are measures and names or ids (:mod:`reconciler.reading.phrases.labels`). Each
  listed item is a column: a breakdown key of the main question (``the status``
  after "top 3 transaction statuses", a dimension phrase, a grain word), or a
  measure read alone (a metric, an aggregation word and a fact, ``number of <noun>``)
  that is computed on the same grouping. ``first and last name`` lists two items. A
  trailing ``for each <key>`` restates a breakdown. The main question may open with
  the clause's verb too ("Return the top 5 states by total revenue, showing …");
* a ranking by several measures, ``top 5 drugs by number of treatments and average
  drug amount``: the rows are ordered by the first measure, then the second, then
  the keys, and both are shown.

After the clause, a sentence ``Order|Sort the results by <key> [direction]``
(:mod:`reconciler.reading.phrases.ordering`) orders the listed result (a key the list
added counts), and closing notes on a metric's definition
(:mod:`reconciler.reading.phrases.notes`) must restate it. A listed column of the people or
rows the result is grouped by (their model's key hidden: "top 3 sales reps … Return
their first name, last name") joins the grouping and stands for the shown breakdown.

The result holds the keys the clause does not list first (a row needs its key),
then the listed columns in the clause's order: the comparator matches columns by
position when their names differ, so nothing else is added. The words of each item
are accounted for like a question's (an item that reads as nothing declines, unless
one word of it only restates its measure: "total sales count", "total revenue amount",
:mod:`reconciler.reading.phrases.restating`).

Declines: a measure the question names but the clause leaves out (shown or not?),
a dimension listed that the question does not break down by (it would change the
grouping), a measure of another model than the one the rows are counted on (a
second many-side would fan out), an item listed twice, and a clause on a share,
a change between periods or measures planned on several models.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.assembly.grain import join_doubt
from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import GRAIN_WORDS, STOPWORDS, tokenize
from reconciler.lens import Lens
from reconciler.reading.grammar.having import compared_count
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan
from reconciler.reading.phrases.labels import Label, label_item, label_words
from reconciler.reading.phrases.months import render
from reconciler.reading.phrases.notes import check_notes, split_notes
from reconciler.reading.phrases.ordering import order_plan, split_ordering
from reconciler.reading.phrases.restating import restated_measure
from reconciler.reading.resolve.paths import one_path

Parser = Callable[[Lens, str, DimensionValues, tuple[str, ...] | None], Plan]
""":func:`reconciler.generators.fast.parse`, passed in (this module sits below it)."""

_VERB = r"(?:return|give(?:\s+me)?|list|show(?:\s+me)?)"
_SENTENCE = re.compile(rf"(?<=[?.!])\s+{_VERB}\s+(?P<items>[^?!]+?)[?.!]*\s*$", re.IGNORECASE)
_SHOWING = re.compile(r",\s*showing\s+(?P<items>[^?!]+?)[?.!]*\s*$", re.IGNORECASE)
_OPENER = re.compile(rf"^\s*{_VERB}\s+(?=the\s+top\b|the\s+bottom\b|top\b|bottom\b)", re.I)
_FIRST_LAST = re.compile(r"\bfirst\s+and\s+last\s+names?\b", re.IGNORECASE)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
_FOR_EACH = re.compile(r"^(?P<item>.+?)\s+(?:for|per|by)\s+(?:each|every)\s+(?P<key>.+)$", re.I)
_LEADING = re.compile(
    r"^(?:(?:the|their|its|his|her)\s+(?:(?:corresponding|respective)\s+)?"
    r"|(?:corresponding|respective)\s+)",
    re.IGNORECASE,
)
_BASED_ON = re.compile(r"^(?P<item>.+?)\s*\(\s*based\s+on\s+(?P<fact>[^)]+)\)$", re.IGNORECASE)
_DISTINCT = re.compile(r"^(?:number|count)\s+of\s+(?:distinct|unique)\s+(?P<noun>.+)$", re.I)
_START = re.compile(
    r",?\s*(?:starting|beginning)\s+(?:from|with)\s+the\s+(?P<end>top|highest|bottom|lowest)\s*$",
    re.IGNORECASE,
)
_COMBINATIONS = re.compile(r"\b(?P<rank>(?:top|bottom)\s+\w+)\s+combinations\s+of\s+", re.I)
_MOST_COMMON = re.compile(
    r"^(?P<head>.*?\b(?:top|bottom)\s+\w+\s+)most\s+(?:common|frequent|frequently\s+used)\s+"
    r"(?P<dims>.+?)(?:\s+for\s+(?P<noun>[^,]+?))?\s*,?\s+and\s+their\s+(?:respective\s+)?"
    r"counts?\s*[?.!]*$",
    re.IGNORECASE,
)
_LEAD = re.compile(
    rf"^\s*{_VERB}\s+(?P<items>.+?)\s+(?P<rest>(?:for|per)\s+(?:each|every)\s+[^?!.]+?)[?.!]*\s*$",
    re.IGNORECASE,
)
_BY_TWO = re.compile(r"^(?P<head>.*\bby\s+(?P<a>.+?))\s+and\s+(?P<b>[^,]+?)\s*$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Outputs:
    """A question split into its main part and the columns it lists.

    Attributes:
        main: the question without the clause (and without an opening "Return").
        items: the listed columns' phrases, in order (empty: no clause).
        keys: phrases a trailing ``for each …`` names (must be breakdowns).
        start: a trailing "starting from the top" (``True``) or "… the bottom"
            (``False``), which must restate the ranking's direction.
    """

    main: str
    items: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    start: bool | None = None


def split_outputs(question: str) -> Outputs | None:
    """The question's output clause (module docstring), or ``None`` when it has none."""
    text = question.strip()
    match = _SENTENCE.search(text) or _SHOWING.search(text)
    if match is None:
        return _leading(text)
    main = _COMBINATIONS.sub(r"\g<rank> ", _OPENER.sub("", text[: match.start()])).strip()
    listed = _FIRST_LAST.sub("first name, last name", match["items"].strip())
    start = _START.search(listed)
    if start is not None:
        listed = listed[: start.start()]
    items: list[str] = []
    keys: list[str] = []
    for part in (p for p in _SPLIT.split(listed) if p.strip()):
        each = _FOR_EACH.match(part.strip())
        if each is not None:
            keys.append(each["key"])
            part = each["item"]
        items.append(_LEADING.sub("", part.strip()))
    first = None if start is None else start["end"].lower() in ("top", "highest")
    return Outputs(main, tuple(items), tuple(keys), first)


def _leading(text: str) -> Outputs | None:
    """One sentence ``Return A and B for each <key> …``: the question is the measures
    listed (the items that are no name or id) ``for each <key> …``."""
    match = _LEAD.match(text)
    if match is None:
        return None
    items = tuple(_LEADING.sub("", p.strip()) for p in _SPLIT.split(match["items"]) if p.strip())
    measures = [i for i in items if label_words(i) is None]
    if not measures or len(measures) == len(items):
        return None
    return Outputs(f"{' and '.join(measures)} {match['rest']}", items)


def answer_outputs(
    lens: Lens,
    question: str,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> str | None:
    """The SQL of a question with an output clause or a ranking by several measures
    (or a count of entities compared, :mod:`reconciler.reading.grammar.having`), or
    ``None`` when it has none of these (the rest of the grammar reads it).

    Args:
        lens: the lens.
        question: the question as asked.
        values: dimension values and join-key facts (as for ``parse``).
        allowed: the metrics assembly selected (``None``: any).
        parse: :func:`reconciler.generators.fast.parse`.

    Raises:
        Declined: see the module docstring.
    """
    if compared := compared_count(lens, question, values):
        return compared
    common = _most_common(lens, question, values, parse)
    if common is not None:
        return _rendered(lens, common, [*(d for _, d in common.breakdowns), common.measure.name], 1)
    asked, notes = split_notes(question)
    rest, ordering = split_ordering(asked)
    outputs = split_outputs(rest) if ordering is not None else None
    if outputs is None:  # an ordering sentence is read here only after an output list
        ordering, outputs = None, split_outputs(asked)
    if notes and outputs is None:
        return None  # a note is only read after an output list: the rest declines it
    main = outputs.main if outputs is not None else question
    ranked = _ranked_by_two(lens, main.rstrip(" ?.!"), values, allowed, parse)
    if outputs is None and ranked is None:
        return None
    if ranked is not None:
        plan, order_by = ranked
    else:
        try:
            plan, order_by = parse(lens, main, values, allowed), 1
        except Declined:
            return None  # the main question is no aggregate: the listings may read it
    if plan.share or plan.change or plan.joined:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a list of output columns is not read with a share, a change or measures on "
            "several models",
        )
    columns: list[str] = []
    if (
        outputs is not None
        and outputs.start is not None
        and (plan.rank or (None,))[0] != outputs.start
    ):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "'starting from the top/bottom' does not restate the question's ranking",
        )
    hidden: set[str] = set()
    if outputs is not None:
        plan, columns, hidden = _listed(lens, plan, outputs, values, allowed, parse)
    else:
        columns = [m.name for m in (plan.measure, *plan.extra)]
    check_notes(lens, notes, (plan.measure, *plan.extra), values)
    if ordering is not None:
        if plan.order is not None:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "the question is ordered twice (an ordering phrase and a sentence)",
            )
        plan = order_plan(lens, plan, ordering, values)
    _check_joins(lens, plan, values)
    keys = [*([plan.grain] if plan.grain else []), *(d for _, d in plan.breakdowns)]
    columns = [*(k for k in keys if k not in columns and k not in hidden), *columns]
    return _rendered(lens, plan, columns, order_by, hidden)


def _listed(
    lens: Lens,
    plan: Plan,
    outputs: Outputs,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> tuple[Plan, list[str], set[str]]:
    """``(plan, listed columns, key columns a listed name stands for)`` of an output
    list: each item a key, a name or id (:mod:`reconciler.reading.phrases.labels`) or a
    measure on the same grouping."""
    for phrase in outputs.keys:
        if _item(lens, plan, phrase, values, allowed, parse)[1] is not None:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"'for each {phrase}' names a measure, not a key of the result",
            )
    columns: list[str] = []
    hidden: set[str] = set()
    asked = plan
    for phrase in outputs.items:
        label = _key_or_label(lens, plan, phrase, values, asked)
        if label is not None:
            plan, name = label.plan, label.column
            hidden.update([label.replaces] if label.replaces else [])
        else:
            name, measure = _item(lens, plan, phrase, values, allowed, parse)
            if measure is not None:
                plan = dataclasses.replace(plan, extra=(*plan.extra, measure))
        if name in columns:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase!r} lists a column already listed ({name})",
            )
        columns.append(name)
    unlisted = [m.name for m in (plan.measure, *plan.extra) if m.name not in columns]
    if unlisted:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"the question asks for {', '.join(unlisted)} but the output list leaves it "
            f"out: list it to show it",
        )
    return plan, columns, hidden - set(columns)


def _key_or_label(
    lens: Lens, plan: Plan, phrase: str, values: DimensionValues, asked: Plan
) -> Label | None:
    """A listed breakdown key (the plan unchanged), else a listed name or id of a
    grouped model (:func:`reconciler.reading.phrases.labels.label_item`), else a column of
    the rows ``asked`` (the question's own plan) is grouped by, else ``None``."""
    try:
        key = _key(lens, plan, phrase, values)
    except Declined:
        label = label_item(lens, plan, phrase) or _row_column(lens, plan, phrase, values, asked)
        if label is None:
            raise
        return label
    return Label(plan, key, None) if key is not None else label_item(lens, plan, phrase)


def _row_column(
    lens: Lens, plan: Plan, phrase: str, values: DimensionValues, asked: Plan
) -> Label | None:
    """A listed dimension of the one model whose rows the result is grouped by (its
    key hidden: "top 3 sales reps … Return their first name, last name"): one value per
    row, so it joins the grouping and is shown, standing for the model's one shown
    breakdown (left out of the columns unless listed too); else ``None``."""
    found = retrieve(lens, phrase, values)
    loose = [t for i, t in enumerate(found.tokens) if i not in found.covered()]
    dims = [m for m in found.mentions if m.kind == "dimension"]
    if loose or len(found.mentions) != 1 or len(dims) != 1:
        return None
    keyed = {m for m, _ in asked.hidden_keys}
    places = [(t.model, t.name) for t in dims[0].targets if t.model in keyed]
    shown = [d for m, d in asked.breakdowns if places and m == places[0][0]]
    if len(places) != 1 or len(shown) != 1:
        return None
    grouped = dataclasses.replace(plan, breakdowns=(*plan.breakdowns, places[0]))
    return Label(grouped, places[0][1], shown[0])


def _most_common(lens: Lens, question: str, values: DimensionValues, parse: Parser) -> Plan | None:
    """``top n most common <dimension> [for <model noun>] and their (respective) counts``:
    the dimension's values ranked by the rows of the one model that holds it (which
    ``for <noun>`` may name), counted on its declared key (``COUNT(DISTINCT key)``, or
    ``COUNT(*)`` of a composite key's rows), no metric asset;
    ``None`` for any other question."""
    match = _MOST_COMMON.match(question.strip())
    if match is None:
        return None
    found = retrieve(lens, match["dims"], values)
    loose = [t for i, t in enumerate(found.tokens) if i not in found.covered()]
    dims = [m for m in found.mentions if m.kind == "dimension"]
    models = {t.model for m in dims for t in m.targets}
    head = [t for t in tokenize(match["head"]) if t not in STOPWORDS]
    if loose or len(dims) != 1 or len(found.mentions) != 1 or len(models) != 1 or len(head) != 2:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'most common {match['dims']}': say which one column's values to count the rows of",
        )
    model = next(iter(models))
    if match["noun"] and model_nouns(lens).get(tokenize(match["noun"])) != model:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"{match['dims']!r} is a column of model {model!r}, not of {match['noun']!r}",
        )
    key = lens.models[model].primary_key
    if not key:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"counting {model}: model {model!r} declares no primary_key",
        )
    plan = parse(lens, f"{match['head']}{match['dims']} by number of {model}", values, None)
    if plan.base != model or plan.extra or plan.joined:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"'most common {match['dims']}' does not read as a count of {model}",
        )
    # One row per key: a one-column key is counted, a row of a composite key is one.
    one = exp.Distinct(expressions=[exp.column(key[0])]) if len(key) == 1 else exp.Star()
    sql = exp.Count(this=one)
    counted = Measure(
        f"{model}_count",
        model,
        sql.sql(dialect=lens.config.dialect),
        (),
        (model,),
        None,
        "count_distinct",
    )
    return dataclasses.replace(plan, measure=counted)


def _ranked_by_two(
    lens: Lens, main: str, values: DimensionValues, allowed: tuple[str, ...] | None, parse: Parser
) -> tuple[Plan, int] | None:
    """``(plan, 2)`` for "top n <keys> by A and B" (A and B measures): the plan ranks
    by A and carries B; ``None`` when the question is not of that shape."""
    match = _BY_TWO.match(main)
    if match is None:
        return None
    try:
        plan = parse(lens, match["head"], values, allowed)
        first, second = (_measure_alone(lens, match[s], values, allowed, parse) for s in "ab")
    except Declined:
        return None
    if plan.rank is None or plan.extra or plan.joined or first is None or second is None:
        return None
    if _identity(first) != _identity(plan.measure) or _identity(second) == _identity(first):
        return None
    if second.model != plan.base or second.models != plan.measure.models:
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"a ranking by {first.name} and {second.name}: {second.name} is not measured on "
            f"the rows of model {plan.base!r} with the same joins",
        )
    if plan.ties:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "'with ties' on a ranking by several measures is not read",
        )
    return dataclasses.replace(plan, extra=(second,)), 2


def _measure_alone(
    lens: Lens, phrase: str, values: DimensionValues, allowed: tuple[str, ...] | None, parse: Parser
) -> Measure | None:
    """The one measure ``phrase`` names with nothing else (no key, filter, period …)."""
    plan = parse(lens, phrase, values, allowed)
    bare = Plan(plan.measure)
    return plan.measure if plan == bare else None


def _identity(measure: Measure) -> tuple[str, str, tuple[str, ...]]:
    return measure.model, measure.expression, measure.filters


def _item(
    lens: Lens,
    plan: Plan,
    phrase: str,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> tuple[str, Measure | None]:
    """``(column name, new measure or None)`` of one listed item of ``plan``'s result."""
    key = _key(lens, plan, phrase, values)
    if key is not None:
        return key, None
    if tokenize(phrase) in _THE_COUNT and _counts(lens, plan):
        return plan.measure.name, None  # "… List the continent and the count": the count asked
    based = _BASED_ON.match(phrase)
    read = based["item"] if based else phrase
    try:
        measure = _measure_alone(lens, read, values, allowed, parse)
    except Declined as exc:
        measure = _distinct_count(lens, plan, phrase)
        if measure is not None:
            return measure.name, measure
        measure = restated_measure(
            lens, read, lambda rest: _measure_alone(lens, rest, values, allowed, parse)
        )
        if measure is None:
            raise Declined(
                exc.kind,
                f"the output list names {phrase!r}, which reads as no column: {exc.reason}",
            ) from exc
    if measure is None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"the output list names {phrase!r}, which is more than one column",
        )
    if based is not None:
        _check_based_on(lens, measure, based["fact"], values)
    for known in (plan.measure, *plan.extra):
        if _identity(known) == _identity(measure):
            return known.name, None
    if measure.model != plan.base or measure.models != plan.measure.models:
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"{phrase!r} is measured on model {measure.model!r}, not on the rows of "
            f"{plan.base!r} the question groups: joining both would fan one of them out",
        )
    if any(m.name == measure.name for m in (plan.measure, *plan.extra)):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{phrase!r} and another measure share the column name {measure.name}",
        )
    return measure.name, measure


_THE_COUNT = frozenset({("count",), ("number",), ("total",), ("total", "count")})


def _counts(lens: Lens, plan: Plan) -> bool:
    """Whether ``plan`` asks one measure and it is a count (``COUNT(…)`` and nothing else)."""
    if plan.extra:
        return False
    try:
        tree = sqlglot.parse_one(plan.measure.expression, read=lens.config.dialect)
    except sqlglot.errors.SqlglotError:
        return False
    return isinstance(tree, exp.Count)


def _check_based_on(lens: Lens, measure: Measure, phrase: str, values: DimensionValues) -> None:
    """A note "(based on <fact>)" only restates what ``measure`` aggregates: the one
    fact it names is a column of the measure's model its expression reads."""
    found = retrieve(lens, phrase, values)
    facts = [m for m in found.mentions if m.kind == "fact"]
    loose = [t for i, t in enumerate(found.tokens) if i not in found.covered()]
    places = {(t.model, t.name) for m in facts for t in m.targets}
    if loose or len(facts) != 1 or len(places) != 1:
        raise Declined(DeclineKind.UNKNOWN_TERM, f"'based on {phrase}' names no one fact")
    model, name = next(iter(places))
    column = next(c for c in lens.models[model].facts if c.name == name)
    tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
    read = {c.name.lower() for c in tree.find_all(exp.Column)}
    if model != measure.model or not {name.lower(), column.sql.lower()} & read:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"{measure.name} is not computed from {phrase!r} ({measure.expression})",
        )


def _distinct_count(lens: Lens, plan: Plan, phrase: str) -> Measure | None:
    """``number of distinct|unique <noun>``: ``COUNT(DISTINCT …)`` of the noun's model
    key on ``plan``'s rows: the base's own key, or the base's single-column foreign
    key of a declared many-to-one join to that model's key (no join needed, so no
    row is dropped)."""
    match = _DISTINCT.match(phrase)
    noun = model_nouns(lens).get(tokenize(match["noun"])) if match else None
    if noun is None:
        return None
    base = lens.models[plan.base]
    if noun == plan.base:
        keys = base.primary_key
    else:
        key = lens.models[noun].primary_key
        joins = [
            j
            for j in base.joins
            if j.to == noun and j.relationship != "one_to_many" and tuple(j.on.values()) == key
        ]
        keys = tuple(joins[0].on) if len(joins) == 1 else ()
    if len(keys) != 1:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"{phrase!r}: model {plan.base!r} has no single column naming one {noun} to count",
        )
    sql = exp.Count(this=exp.Distinct(expressions=[exp.column(keys[0])]))
    dialect = lens.config.dialect
    name = f"distinct_{noun}"
    return Measure(
        name, plan.base, sql.sql(dialect=dialect), (), (plan.base,), None, "count_distinct"
    )


def _key(lens: Lens, plan: Plan, phrase: str, values: DimensionValues) -> str | None:
    """The breakdown key (or time bucket) ``phrase`` names, if it names one alone."""
    words = [t for t in tokenize(phrase) if t not in STOPWORDS]
    if plan.grain and len(words) == 1 and GRAIN_WORDS.get(words[0]) == plan.grain:
        return plan.grain
    found = retrieve(lens, phrase, values)
    covered = found.covered()
    loose = [t for i, t in enumerate(found.tokens) if i not in covered and t not in STOPWORDS]
    dims = [m for m in found.mentions if m.kind in ("dimension", "time_dimension")]
    if loose or len(found.mentions) != 1 or len(dims) != 1:
        return None
    places = {(t.model, t.name) for t in dims[0].targets}
    chosen = [d for m, d in plan.breakdowns if (m, d) in places]
    if plan.grain and plan.time in places:
        chosen.append(plan.grain)
    if len(chosen) == 1:
        return chosen[0]
    if chosen:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} could be several columns of the result ({', '.join(chosen)})",
        )
    listed = ", ".join(sorted(f"{m}.{d}" for m, d in places))
    raise Declined(
        DeclineKind.UNSAFE_RESULT,
        f"the output list names {phrase!r} ({listed}), which the question does not break "
        f"down by: showing it would change the grouping",
    )


def _check_joins(lens: Lens, plan: Plan, values: DimensionValues) -> None:
    """Every join of ``plan`` passes the join-grain gate (DESIGN §1)."""
    for target in plan.models():
        for here, join in one_path(lens, plan.base, target):
            doubt = join_doubt(values, here, join)
            if doubt is not None:
                raise Declined(DeclineKind.NO_JOIN_PATH, doubt)


def _rendered(
    lens: Lens, plan: Plan, columns: list[str], order_by: int, hidden: set[str] | None = None
) -> str:
    """``plan``'s SQL with its select list in ``columns`` order (the ``hidden`` key
    columns left out of it, still grouped by); ``order_by`` 2 adds the second measure
    after the first in the ranking's ORDER BY."""
    dialect = lens.config.dialect
    query = sqlglot.parse_one(render(lens, plan), read=dialect)
    assert isinstance(query, exp.Select)
    selects = {s.alias_or_name: s for s in query.selects if s.alias_or_name not in (hidden or ())}
    if sorted(selects) != sorted(columns):
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"the result would hold {', '.join(selects)}, not {', '.join(columns)}",
        )
    query.set("expressions", [selects[c] for c in columns])
    if order_by == 2:
        order = query.args["order"]
        assert plan.rank is not None
        second = selects[plan.extra[0].name].this.copy()
        order.expressions.insert(1, exp.Ordered(this=second, desc=plan.rank[0]))
    return query.sql(dialect=dialect, pretty=True)
