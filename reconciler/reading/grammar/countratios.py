"""Ratios of two counts of entities in the ``fast`` tier (pure).

``ratio of A to B`` (or ``A divided by B``), where neither side names a metric or a
fact but each is a count of a model's entities the way ``how many …`` reads it
(:func:`reconciler.reading.grammar.measures.entity_count`):

* one model under two conditions: ``ratio of open businesses to closed businesses
  in the city of San Francisco``, ``ratio of businesses in the state of California
  to businesses in the state of New York``. Each side is ``COUNT(DISTINCT key)``
  with its own conditions inside the aggregate (``CASE WHEN … THEN key END``);
* two models, nothing else: ``ratio of publications to authors`` (each counted on
  its own, no join between them).

The value is ``CAST(a AS DOUBLE) / NULLIF(b, 0)`` (decimal, no integer division;
NULL when B counts nothing), through
:func:`reconciler.reading.grammar.ratios.render_two_measures`.

Which conditions belong to which side: a flag before a side's noun ("open",
"closed") is that side's own. When both sides name value filters, each side's are
its own. When only B does, its trailing ones ("… in the city of San Francisco") are
read as qualifying both sides, but only when both sides carry flags that tell them
apart (``open businesses to closed businesses …``); otherwise (``businesses to
businesses in Paris``, ``active customers to customers in CA``), or when only A names
one, the question has two readings and declines. A trailing ``in the database``
means every row, and then says that B carries no condition: A's conditions are its own
("ratio of papers published in 2020 to the total number of papers in the database").
A side may open with ``(the) (total) number of`` / ``count of`` when the lens metric
those words name (if any) counts the same rows as the entity count (no filters, a
``COUNT`` of the model's one-column key or ``COUNT(*)``).

``ratio of the number of A in each D to the total number of A in the database`` (A
broken down by one dimension of A's own model, nothing else; B every row of the same
model) is the share of A by D: each group's count over the total
(:mod:`reconciler.reading.compile`'s share of total).

Declines: a side with anything more than flags and value filters (a breakdown,
period, ranking …), the same count twice, a condition of a side on another model
than the one counted, and two models with any condition.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import STOPWORDS, tokenize
from reconciler.lens import Lens
from reconciler.reading.ir import RATIO, Declined, DeclineKind, Measure, Plan, TwoMeasures

Parser = Callable[[Lens, str, DimensionValues, tuple[str, ...] | None], Plan]
""":func:`reconciler.generators.fast.parse`, passed in (this module sits below it)."""

_EVERY_ROW = re.compile(r"\s+in\s+the\s+(?:whole\s+)?database\s*$", re.IGNORECASE)
_COUNT_OF = re.compile(r"^(?:the\s+)?(?:total\s+)?(?:number|count)\s+of\s+", re.IGNORECASE)
_NUMERIC = re.compile(r"^(int|bigint|smallint|number|numeric|decimal|float|double|real)", re.I)
_SLUG = re.compile(r"[^a-z0-9]+")


def count_ratio(
    lens: Lens,
    two: TwoMeasures,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> Plan | None:
    """The two-measure plan of a ratio of two entity counts (module docstring), or
    ``None`` when a side names a metric or fact (the measure grammar reads it).

    Raises:
        Declined: a count ratio outside the rules of the module docstring.
    """
    if two.kind != RATIO or two.per or two.percent:
        return None
    prefix, *sides = two.sides
    if any(t not in STOPWORDS for t in tokenize(prefix)):
        return None
    every = bool(_EVERY_ROW.search(sides[1].strip()))
    texts = [_counted_words(lens, _EVERY_ROW.sub("", s.strip()), values) for s in sides]
    for text in texts:
        found = retrieve(lens, text, values)
        if any(m.kind in ("metric", "fact") for m in found.mentions):
            return None
    b = _side(lens, f"how many {texts[1]}", values, allowed, parse)
    if every and not (b.filters or b.flags):
        share = _share_of(lens, texts[0], b, values, allowed, parse)
        if share is not None:
            return share
    a = _side(lens, f"how many {texts[0]}", values, allowed, parse)
    if every and a.base == b.base and not (b.filters or b.flags):
        if not (a.filters or a.flags):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT, "both sides of the ratio count the same rows"
            )
        return Plan(
            _named(a.measure, texts[0], _conditions(lens, a, ())),
            extra=(_named(b.measure, texts[1], ()),),
        )
    if a.base != b.base:
        if a.filters or a.flags or b.filters or b.flags:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a ratio of counts of two models is read without conditions on either side",
            )
        return Plan(
            _named(a.measure, texts[0], ()), joined=(Plan(_named(b.measure, texts[1], ())),)
        )
    shared: tuple[tuple[str, str, str], ...] = ()
    if bool(a.filters) != bool(b.filters):
        one = a if a.filters else b
        parallel = a.flags and b.flags and set(a.flags) != set(b.flags)
        if one is a or not parallel:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"does {', '.join(v for _, _, v in one.filters)!r} qualify both sides of the "
                f"ratio or only one? Name it on both sides, or on neither",
            )
        shared = b.filters
    own_a = _conditions(lens, a, shared)
    own_b = _conditions(lens, b, shared)
    if own_a == own_b:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT, "both sides of the ratio count the same rows"
        )
    return Plan(
        _named(a.measure, texts[0], own_a),
        filters=shared,
        extra=(_named(b.measure, texts[1], own_b),),
    )


def _counted_words(lens: Lens, text: str, values: DimensionValues) -> str:
    """``text`` without an opening ``(the) (total) number of`` when the metric those
    words name, if any, counts what the entity count does (module docstring)."""
    match = _COUNT_OF.match(text)
    if match is None:
        return text
    found = retrieve(lens, text, values)
    named = [t.name for m in found.mentions if m.kind == "metric" for t in m.targets]
    return text[match.end() :] if all(_plain_count(lens, n) for n in named) else text


def _plain_count(lens: Lens, name: str) -> bool:
    """Whether metric ``name`` counts its model's rows: no filters, ``COUNT(*)`` or a
    ``COUNT`` (distinct or not) of the model's one-column primary key."""
    metric = lens.metrics[name]
    key = lens.models[metric.model].primary_key
    if metric.filters or len(key) != 1:
        return False
    spelled = re.sub(r"\s+", "", metric.expression.lower())
    return spelled in ("count(*)", f"count({key[0].lower()})", f"count(distinct{key[0].lower()})")


def _share_of(
    lens: Lens,
    text: str,
    total: Plan,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> Plan | None:
    """The share plan of ``text`` ("businesses in each state") over ``total`` (every row
    of the same model), or ``None`` when ``text`` is no count with one breakdown alone."""
    try:
        plan = parse(lens, f"how many {text}", values, allowed)
    except Declined:
        return None
    bare = Plan(plan.measure, breakdowns=plan.breakdowns)
    if plan != bare or len(plan.breakdowns) != 1 or plan.base != total.base:
        return None
    if plan.breakdowns[0][0] != plan.base:
        # a related model's groups may hold one row several times: their counts would
        # not add up to the total
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"a share of {plan.base} by {'.'.join(plan.breakdowns[0])}: a {plan.base} row may "
            "fall in several groups, so the groups do not add up to the total",
        )
    return dataclasses.replace(plan, share="share")


def _side(
    lens: Lens,
    question: str,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> Plan:
    """The count plan of one side: a count of entities with flags and value filters only."""
    plan = parse(lens, question, values, allowed)
    bare = Plan(plan.measure, filters=plan.filters, flags=plan.flags)
    if plan.measure.function != "count_distinct" or plan != bare:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"{question[len('how many ') :]!r}: a side of a ratio of counts is a count of "
            f"entities with conditions only (no breakdown, period, ranking …)",
        )
    return plan


def _conditions(
    lens: Lens, side: Plan, shared: tuple[tuple[str, str, str], ...]
) -> tuple[str, ...]:
    """The side's own conditions as SQL on its model's columns (flags ``= TRUE``,
    values ``= literal``), the ``shared`` filters left out."""
    model = lens.models[side.base]
    dialect = lens.config.dialect
    out: list[str] = []
    for where, dim in side.flags:
        _own(side.base, where, dim)
        out.append(exp.column(dim).eq(exp.true()).sql(dialect=dialect))
    columns = [(where, dim) for where, dim, _ in side.filters]
    if len(set(columns)) < len(columns):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "several values of one column on one side of a ratio: ask for each apart",
        )
    for where, dim, value in side.filters:
        if (where, dim, value) in shared:
            continue
        _own(side.base, where, dim)
        col = next(c for c in model.dimensions if c.name == dim)
        numeric = _NUMERIC.match(col.data_type) and re.match(r"^-?\d+(\.\d+)?$", value)
        literal = exp.Literal.number(value) if numeric else exp.Literal.string(value)
        out.append(exp.column(dim).eq(literal).sql(dialect=dialect))
    return tuple(sorted(out))


def _own(base: str, where: str, dim: str) -> None:
    if where != base:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a side of the ratio is conditioned on {where}.{dim}, not on model {base!r} it counts",
        )


def _named(measure: Measure, text: str, filters: tuple[str, ...]) -> Measure:
    """``measure`` named after its side's words, with the side's own ``filters``."""
    name = _SLUG.sub("_", " ".join(tokenize(text))).strip("_")[:40] or measure.name
    name = name if name[0].isalpha() else f"n_{name}"
    return Measure(
        name, measure.model, measure.expression, filters, measure.models, None, "count_distinct"
    )
