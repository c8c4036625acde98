"""The lens lexicon: every phrase a lens declares and what it refers to (pure).

Metrics contribute their name, label and synonyms; dimensions, time dimensions
and facts their name and synonyms (also prefixed by their model's name); a
dimension its known values; a boolean ``is_<word>`` dimension its ``<word>``.
:mod:`reconciler.assembly.retrieval` matches these phrases in a question. The
lexicon and the other per-lens lookups here are computed once per lens version
(:mod:`reconciler.assembly.memo`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assembly import memo as lensmemo
from reconciler.assembly.text import (
    DATE_VERBS,
    DOMAIN_STOPWORDS,
    STOPWORDS,
    stems,
    tokenize,
    verb_root,
)
from reconciler.lens import Column, Lens, Model

# {(model name, dimension name): distinct values seen in the warehouse}, read by the
# suite before generation so the fast tier can turn "in Europe" into region = 'Europe'.
DimensionValues = Mapping[tuple[str, str], tuple[str, ...]]

Kind = Literal["metric", "dimension", "time_dimension", "value", "fact", "flag"]
# At equal phrase length, the kind that wins an overlap (lower first).
PRIORITY: Mapping[str, int] = {
    "metric": 0,
    "dimension": 1,
    "time_dimension": 1,
    "value": 2,
    "fact": 3,
    "flag": 4,
}

# A dimension is a *person* dimension (what "Who …?" asks for) when its name or a
# synonym ends with one of these nouns ("sales rep", "account executive", "owner").
PERSON_NOUNS = stems(
    """rep representative salesperson salesman saleswoman seller employee person agent
    owner executive"""
)
_PERSON_ENDINGS = frozenset((noun,) for noun in PERSON_NOUNS)
_BOOLEAN_TYPE = re.compile(r"^bool", re.IGNORECASE)
_FLAG_NAME = re.compile(r"^is_?([a-z][a-z0-9_]*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Target:
    """What a phrase can refer to.

    Attributes:
        kind: ``metric``, ``dimension``, ``time_dimension``, ``value``, ``fact`` (a
            model fact, aggregated only when the question says how) or ``flag`` (a
            boolean dimension ``is_<word>`` named by its ``<word>``: "won").
        model: the model holding the column (the metric's model for a metric).
        name: metric or column name.
        value: for ``value``, the exact stored value (original casing).
    """

    kind: Kind
    model: str
    name: str
    value: str | None = None


def lexicon(
    lens: Lens, values: DimensionValues | None = None
) -> dict[tuple[str, ...], tuple[Target, ...]]:
    """Every phrase the lens declares, as ``{normalized tokens: targets}``.

    Metrics contribute name, label and synonyms; dimensions, time dimensions and
    facts their name and synonyms, alone and prefixed by their model's name
    (``product category``); dimension values come from ``sample_values`` and from
    ``values`` (``{(model, dimension): distinct values}``); a BOOLEAN dimension
    named ``is_<word>`` or ``is<word>`` contributes ``<word>`` as a flag. Values
    made only of stopwords or digits, and phrases made only of grammar stopwords
    ("how", "by"), are left out: they would match ordinary words and years. A name
    or synonym that is a domain stopword (a ``make`` dimension) is kept.
    """
    found: dict[tuple[str, ...], dict[Target, None]] = {}

    def add(text: str, target: Target) -> None:
        key = tokenize(text)
        # Grammar words ("how", "by") would match every question; a value spelled only
        # with stopwords or digits ("All", "2024") ordinary words and years. A column or
        # metric named by a domain stopword ("make" of a car) keeps its name.
        if not key or all(t in STOPWORDS - DOMAIN_STOPWORDS for t in key):
            return
        if target.kind == "value" and all(t in STOPWORDS or t.isdigit() for t in key):
            return
        found.setdefault(key, {})[target] = None

    for metric in lens.metrics.values():
        target = Target("metric", metric.model, metric.name)
        for text in (metric.name, metric.label or "", *metric.synonyms):
            add(text, target)
    for model in lens.models.values():
        groups: tuple[tuple[Kind, tuple[Column, ...]], ...] = (
            ("dimension", model.dimensions),
            ("time_dimension", model.time_dimensions),
            ("fact", model.facts),
        )
        for kind, columns in groups:
            for col in columns:
                target = Target(kind, model.name, col.name)
                for text in (col.name, *col.synonyms):
                    add(text, target)
                    add(f"{model.name} {text}", target)
        for col in model.time_dimensions:
            for verb in _date_verbs(col):
                add(verb, Target("time_dimension", model.name, col.name))
        for col in model.dimensions:
            stored = tuple((values or {}).get((model.name, col.name), ()))
            seen = {tokenize(v) for v in stored}
            # A sample value the warehouse also holds takes the warehouse's casing.
            hints = tuple(v for v in col.sample_values if tokenize(v) not in seen)
            for value in stored + hints:
                add(value, Target("value", model.name, col.name, value))
            flag = _FLAG_NAME.match(col.name)
            if flag and _BOOLEAN_TYPE.match(col.data_type):
                add(flag.group(1), Target("flag", model.name, col.name))
    return {key: tuple(targets) for key, targets in found.items()}


def stopword_values(
    lens: Lens, values: DimensionValues, model: str, dimension: str
) -> tuple[str, ...]:
    """The values of ``model.dimension`` (stored, then ``sample_values``) spelled only
    with stopwords and no digit (``A``, ``I``): the ones :func:`lexicon` leaves out.
    Retrieval reads one only right after its dimension's phrase
    (:mod:`reconciler.assembly.retrieval`)."""
    col = next((c for c in lens.models[model].dimensions if c.name == dimension), None)
    hints = col.sample_values if col is not None else ()
    out: dict[str, None] = {}
    for value in (*values.get((model, dimension), ()), *hints):
        key = tokenize(value) if len(value) < 40 else ()
        if key and all(t in STOPWORDS and not t.isdigit() for t in key):
            out.setdefault(value, None)
    return tuple(out)


def _date_verbs(col: Column) -> tuple[str, ...]:
    """The :data:`DATE_VERBS` that name time dimension ``col``: a verb sharing its root
    with a word of its name or a synonym ("booked" for ``booked_date`` / "booking date")."""
    roots = {verb_root(t) for text in (col.name, *col.synonyms) for t in tokenize(text)}
    return tuple(sorted(v for v in DATE_VERBS if verb_root(v) in roots))


def person_dimensions(lens: Lens) -> tuple[Target, ...]:
    """Dimensions naming a person: a name or synonym ends with a :data:`PERSON_NOUNS` word."""
    return lensmemo.memoized(lens, "person_dimensions", lambda: _person_dimensions(lens))


def _person_dimensions(lens: Lens) -> tuple[Target, ...]:
    return tuple(
        Target("dimension", model.name, col.name)
        for model in lens.models.values()
        for col in model.dimensions
        if any(tokenize(text)[-1:] in _PERSON_ENDINGS for text in (col.name, *col.synonyms))
    )


def indexed_lexicon(
    lens: Lens, values: DimensionValues | None
) -> tuple[Mapping[tuple[str, ...], tuple[Target, ...]], int]:
    """:func:`lexicon` and its longest phrase (in tokens), once per lens version and values.

    The values are part of the key by content (a sorted tuple), never by identity.
    """
    stored = tuple(sorted((key, tuple(v)) for key, v in values.items())) if values else ()

    def build() -> tuple[Mapping[tuple[str, ...], tuple[Target, ...]], int]:
        lex = lexicon(lens, values)
        return MappingProxyType(lex), max((len(k) for k in lex), default=0)

    return lensmemo.memoized(lens, ("lexicon", stored), build)


def model_named(lens: Lens, qualifier: str) -> str | None:
    """The model a SQL qualifier names: a model name, else the one model on that table."""
    wanted = qualifier.lower()
    if wanted in lens.models:
        return wanted
    by_table = [m.name for m in lens.models.values() if m.table.lower().split(".")[-1] == wanted]
    return by_table[0] if len(by_table) == 1 else None


def model_nouns(lens: Lens) -> dict[tuple[str, ...], str]:
    """``{normalized noun: model}`` — how a question names a model: its name, its table's
    name, and the noun its plain count metric counts ("branches" of ``number of
    branches``, :func:`_count_nouns`) when no other model's count claims it."""
    return dict(lensmemo.memoized(lens, "model_nouns", lambda: tuple(_model_nouns(lens).items())))


def _model_nouns(lens: Lens) -> dict[tuple[str, ...], str]:
    nouns: dict[tuple[str, ...], str] = {}
    for model in lens.models.values():
        for text in (model.name, model.table.split(".")[-1]):
            nouns.setdefault(tokenize(text), model.name)
    claimed: dict[tuple[str, ...], set[str]] = {}
    for noun, model_name in _count_nouns(lens):
        claimed.setdefault(noun, set()).add(model_name)
    for noun, models in claimed.items():
        # A noun two models' counts claim is nobody's; a model or table name keeps its model.
        if len(models) == 1 and noun not in nouns:
            nouns[noun] = next(iter(models))
    return nouns


def _count_nouns(lens: Lens) -> list[tuple[tuple[str, ...], str]]:
    """``(noun, model)`` for each "number of <noun>", "count of <noun>" or "<noun> count"
    that a plain count metric says (its label or a synonym): a metric without filters
    whose expression is ``COUNT(*)`` or ``COUNT(DISTINCT <primary key>)`` of its model.
    The lens's own word for the rows it counts ("makers" of ``car_makers``)."""
    out: list[tuple[tuple[str, ...], str]] = []
    for metric in lens.metrics.values():
        model = lens.models.get(metric.model)
        if model is None or metric.filters or not _counts_rows(lens, metric.expression, model):
            continue
        for text in (metric.label or "", *metric.synonyms):
            key = tokenize(text)
            if key[:2] in (("number", "of"), ("count", "of")):
                noun = key[2:]
            elif key[-1:] == ("count",):
                noun = key[:-1]
            else:
                continue
            if noun and not all(t in STOPWORDS - DOMAIN_STOPWORDS for t in noun):
                out.append((noun, model.name))
    return out


def _counts_rows(lens: Lens, expression: str, model: Model) -> bool:
    """Whether ``expression`` is ``COUNT(*)`` or ``COUNT(DISTINCT <primary key>)``."""
    try:
        tree = sqlglot.parse_one(expression, read=lens.config.dialect)
    except SqlglotError:
        return False
    if not isinstance(tree, exp.Count):
        return False
    arg = tree.this
    if isinstance(arg, exp.Star):
        return True
    if not isinstance(arg, exp.Distinct) or len(arg.expressions) != 1:
        return False
    col = arg.expressions[0]
    keys = [k.lower() for k in model.primary_key]
    return isinstance(col, exp.Column) and len(keys) == 1 and col.name.lower() == keys[0]
