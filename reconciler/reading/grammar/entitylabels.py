"""The name and id of the rows a count ranks or breaks down (pure).

"What is the name and id of the department with the most degrees?", "For each
continent, list its id, name, and how many countries it has?": a bare ``name`` /
``title`` or ``id`` (``its name``, ``their ids``, ``the names``) in the output list of a
question whose ranked or broken-down rows are one model M, named by its model noun,
is M's label column (:func:`~reconciler.reading.phrases.labels.row_label`) and M's
one-column primary key. Three spellings:

* ``<opener> <items> of the|each|every <M> …``: the rest of the question from its
  determiner is read alone as a count ranked or broken down by M ("the department with
  the most degrees");
* ``<opener> <items> of each|every <M> and how many <B> [there are] [in each one]``;
* ``for each|every <M>, <opener> <items>``, one item ``how many <B> [it has|they have]``
  or ``the number of <B>``;

the last two read as ``how many <B> for each <M>``. An opener is ``what is|are``,
``list``, ``show``, ``give``, ``find``, ``return``.

The question's plan must count (a ``COUNT`` measure, nothing else asked) and group by
M's rows: its breakdowns all of M, and M's key among them or hidden beside them. The
listed columns join the grouping (one value per key: the rows stay the same), the other
breakdowns are grouped by but not shown, and the count is kept, last unless listed.
A ranking keeps its ties as every ranking does.

Declines (:class:`~reconciler.reading.ir.DeclineKind.AMBIGUOUS_READING`): M has no
single label column (two name columns), or a key of several columns; an item listed
twice. A key with no dimension over it declines as missing in the lens. Any other
question is not of this shape (``None``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import KEY_WORDS, LABEL_WORDS
from reconciler.reading.phrases.labels import word_column

_OPENER = r"(?:what\s+(?:is|are|was|were)|list|show(?:\s+me)?|give(?:\s+me)?|find|return)"
_OF = re.compile(
    rf"^\s*{_OPENER}\s+(?P<items>.+?)\s+of\s+(?P<rest>(?:the|each|every)\s+.+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_FOR_EACH = re.compile(
    rf"^\s*for\s+(?:each|every)\s+(?P<noun>[^,]+?)\s*,\s*{_OPENER}\s+(?P<items>.+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_EACH_AND = re.compile(r"^(?:each|every)\s+(?P<noun>.+?)\s+and\s+(?P<count>.+)$", re.IGNORECASE)
_COUNT = re.compile(
    r"^(?:how\s+many|(?:the\s+)?number\s+of)\s+(?P<b>.+?)"
    r"(?:\s+(?:it|they)\s+(?:has|have|had)|\s+(?:there\s+are|are\s+there)"
    r"(?:\s+in\s+(?:it|them|each(?:\s+one)?))?)?$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
_LEADING = frozenset({"the", "its", "their", "both"})
_COUNTED = "count"  # an item that is the count

Parser = Callable[[Lens, str, DimensionValues, tuple[str, ...] | None], Plan]
""":func:`reconciler.generators.fast.parse`, passed in (this module sits below it)."""


def entity_labels(
    lens: Lens,
    question: str,
    values: DimensionValues,
    allowed: tuple[str, ...] | None,
    parse: Parser,
) -> str | None:
    """The SQL of the shape (module docstring), or ``None`` when the question is not of it.

    Raises:
        Declined: see the module docstring.
    """
    read = _read(lens, question)
    if read is None:
        return None
    noun, items, main = read
    try:
        plan = parse(lens, main, values, allowed)
    except Declined:
        return None  # the rest is no count: other shapes read the question
    model = model_nouns(lens)[noun]
    if not _grouped_by_rows(lens, plan, model):
        return None
    return _rendered(lens, plan, model, noun, items, values)


def _read(lens: Lens, question: str) -> tuple[tuple[str, ...], list[str], str] | None:
    """``(M's noun tokens, items, question to parse)``: each item ``name`` / ``id`` or
    :data:`_COUNTED`; ``None`` when the question is none of the spellings."""
    nouns = model_nouns(lens)
    each = _FOR_EACH.match(question)
    if each is not None:
        noun = tokenize(each["noun"])
        items = _items(each["items"])
        counts = [i for i in items or () if isinstance(i, tuple)]
        if noun not in nouns or items is None or len(counts) != 1:
            return None
        main = f"how many {counts[0][1]} for each {each['noun']}"
        return noun, [_COUNTED if isinstance(i, tuple) else i for i in items], main
    match = _OF.match(question)
    if match is None:
        return None
    items = _items(match["items"])
    if items is None or any(isinstance(i, tuple) for i in items):
        return None
    rest = match["rest"]
    pair = _EACH_AND.match(rest)
    if pair is not None:
        count = _COUNT.match(pair["count"])
        noun = tokenize(pair["noun"])
        if count is None or noun not in nouns:
            return None
        main = f"how many {count['b']} for each {pair['noun']}"
        return noun, [*(str(i) for i in items), _COUNTED], main
    toks = tokenize(rest)[1:]
    longest = max((len(k) for k in nouns), default=0)
    width = next((n for n in range(min(longest, len(toks)), 0, -1) if toks[:n] in nouns), 0)
    if not width:
        return None
    return toks[:width], [str(i) for i in items], rest


def _items(text: str) -> list[str | tuple[str, str]] | None:
    """The listed items: ``name`` / ``id`` words, or ``("count", <B>)`` of a count item;
    ``None`` when an item is neither."""
    out: list[str | tuple[str, str]] = []
    for part in (p.strip() for p in _SPLIT.split(text) if p.strip()):
        count = _COUNT.match(part)
        if count is not None:
            out.append((_COUNTED, count["b"]))
            continue
        toks = [t for t in tokenize(part) if t not in _LEADING]
        if len(toks) != 1 or toks[0] not in LABEL_WORDS | KEY_WORDS:
            return None
        out.append(toks[0])
    words = [i for i in out if isinstance(i, str)]
    return out if words else None


def _grouped_by_rows(lens: Lens, plan: Plan, model: str) -> bool:
    """Whether ``plan`` counts and nothing else, grouped by the rows of ``model``."""
    if (
        plan.extra
        or plan.joined
        or plan.share
        or plan.change
        or plan.compared
        or plan.grain
        or not plan.breakdowns
        or any(m != model for m, _ in (*plan.breakdowns, *plan.hidden_keys))
    ):
        return False
    try:
        tree = sqlglot.parse_one(plan.measure.expression, read=lens.config.dialect)
    except sqlglot.errors.SqlglotError:
        return False
    key = lens.models[model].primary_key
    grouped = {_stored(lens, model, d) for _, d in (*plan.breakdowns, *plan.hidden_keys)}
    return isinstance(tree, exp.Count) and len(key) == 1 and key[0].lower() in grouped


def _stored(lens: Lens, model: str, dimension: str) -> str:
    """The stored column (lower case) of ``model.dimension``, or its name when none."""
    col = next((c for c in lens.models[model].dimensions if c.name == dimension), None)
    return (col.sql if col is not None else dimension).lower()


def _lens_named(lens: Lens, model: str, word: str, values: DimensionValues) -> str | None:
    """The one dimension of ``model`` the lens itself names by ``word`` (a synonym
    ``name`` on ``country_name``), else ``None``."""
    found = retrieve(lens, word, values)
    places = {
        t.name
        for m in found.mentions
        if m.kind == "dimension" and (m.start, m.end) == (0, len(found.tokens))
        for t in m.targets
        if t.model == model
    }
    return places.pop() if len(places) == 1 else None


def _rendered(
    lens: Lens,
    plan: Plan,
    model: str,
    noun: tuple[str, ...],
    items: list[str],
    values: DimensionValues,
) -> str:
    """The plan's SQL grouped by the listed columns too, showing them and the count."""
    found = lens.models[model]
    phrase = " ".join(noun)
    columns: list[str] = []
    places = list(plan.breakdowns)
    for word in items:
        if word == _COUNTED:
            name = plan.measure.name
        else:
            name = (
                _lens_named(lens, model, word, values) or word_column(found, word, noun, phrase)[0]
            )
            if not any(d.name == name for d in found.dimensions):
                raise Declined(
                    DeclineKind.MISSING_IN_LENS,
                    f"{word!r} of {phrase!r}: model {model!r} has no dimension over {name!r}",
                )
            if (model, name) not in places:
                places.append((model, name))
        if name in columns:
            raise Declined(DeclineKind.AMBIGUOUS_READING, f"{word!r} is listed twice")
        columns.append(name)
    if plan.measure.name not in columns:
        columns.append(plan.measure.name)
    hidden = tuple(p for p in plan.hidden_keys if p not in places)
    shown = dataclasses.replace(plan, breakdowns=tuple(places), hidden_keys=hidden)
    dialect = lens.config.dialect
    query = sqlglot.parse_one(render(lens, shown), read=dialect)
    assert isinstance(query, exp.Select)
    selects = {s.alias_or_name: s for s in query.selects}
    if not set(columns) <= set(selects):
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"the result would hold {', '.join(selects)}, not {', '.join(columns)}",
        )
    query.set("expressions", [selects[c] for c in columns])
    return query.sql(dialect=dialect, pretty=True)
