"""A grouped model's name and id in an output list: "Return the name and average rating" (pure).

An item of an output list (:mod:`reconciler.reading.grammar.outputs`) that says ``name``,
``id``, ``names of the <noun>``, ``<noun> name`` or ``<noun> id`` names a column of a
model the result is grouped by: its *name column* or its *key column*
(:func:`reconciler.reading.phrases.naming.is_name` /
:func:`~reconciler.reading.phrases.naming.is_key`).
The model is the noun's, or with no noun the one model whose key or name column is
a breakdown of the result.

* the column is already a breakdown: the item restates that key;
* the name column of a model the result is grouped by its key: the name is added to
  the grouping (one name per key, so the rows stay the same) and shown, and the key
  is left out of the columns unless the list names it too (the name stands for the
  row, the way the question asked for it);
* anything else (an id when the result is grouped by name, a model the result is not
  grouped by, a model with no or several name columns) declines: showing it would
  change the grouping.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import KEY_WORDS
from reconciler.reading.phrases.naming import is_key, is_name

_WORDS = {"name": "name", "id": "id"}


@dataclass(frozen=True)
class Label:
    """A listed name or id: the plan that shows it, its column alias, and the key
    alias it stands for (left out of the result unless listed), if any."""

    plan: Plan
    column: str
    replaces: str | None


def label_words(phrase: str) -> tuple[str, tuple[str, ...]] | None:
    """``("name" | "id", the noun's tokens)`` of a name or id item, else ``None``."""
    toks = tuple(t for t in tokenize(phrase) if t != "the")
    if len(toks) == 1 and toks[0] in _WORDS:
        return _WORDS[toks[0]], ()
    if len(toks) > 2 and toks[0] in _WORDS and toks[1] == "of":
        return _WORDS[toks[0]], toks[2:]
    if len(toks) > 1 and toks[-1] in _WORDS:
        return _WORDS[toks[-1]], toks[:-1]
    return None


def label_item(lens: Lens, plan: Plan, phrase: str) -> Label | None:
    """The :class:`Label` of output item ``phrase`` (module docstring), or ``None``
    when the phrase is not a name or id item.

    Raises:
        Declined: the item names a model or column the grouping does not allow.
    """
    words = label_words(phrase)
    if words is None:
        return None
    kind, noun = words
    models = _models(lens, plan, noun)
    if noun and not models:
        return None  # "country name": no model noun, the phrase may be a lens column
    if len(models) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING, f"{phrase!r}: the {kind} of which of the grouped models?"
        )
    model = models[0]
    check = is_name if kind == "name" else is_key
    columns = [d.name for d in lens.models[model].dimensions if check(lens, model, d.name)]
    if len(columns) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r}: model {model!r} has {len(columns)} {kind} columns, not one",
        )
    place = (model, columns[0])
    if place in plan.breakdowns:
        return Label(plan, columns[0], None)
    key = next((d for m, d in plan.breakdowns if m == model and is_key(lens, m, d)), None)
    if kind != "name" or key is None:
        raise Declined(
            DeclineKind.UNSAFE_RESULT,
            f"the output list names {phrase!r} ({model}.{columns[0]}), which the question "
            "does not break down by: showing it would change the grouping",
        )
    shown = dataclasses.replace(plan, breakdowns=(*plan.breakdowns, place))
    return Label(shown, columns[0], key)


def _models(lens: Lens, plan: Plan, noun: tuple[str, ...]) -> list[str]:
    """The model a name or id item is about: its noun's (none when the noun names no
    model), or with no noun the grouped ones."""
    if noun:
        model = model_nouns(lens).get(noun)
        return [] if model is None else [model]
    grouped = dict.fromkeys(
        m for m, d in plan.breakdowns if is_key(lens, m, d) or is_name(lens, m, d)
    )
    return list(grouped)


def row_label(model: Model, noun: tuple[str, ...], phrase: str) -> Column:
    """The one dimension of ``model`` that names its rows: a dimension named like the
    noun (``product``), ``<noun> name`` / ``<noun> title``, ``name`` or ``title``, or
    with the noun as a synonym.

    Raises:
        Declined: no such dimension, or several.
    """
    names = {noun, (*noun, "name"), ("name",), (*noun, "title"), ("title",)}
    labels = [
        c
        for c in model.dimensions
        if tokenize(c.name) in names or any(tokenize(s) == noun for s in c.synonyms)
    ]
    if len(labels) != 1:
        listed = ", ".join(c.name for c in labels) or "none"
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"which column names a {phrase!r} row of model {model.name!r}? "
            f"(dimensions named like it: {listed})",
        )
    return labels[0]


def word_column(model: Model, word: str, noun: tuple[str, ...], phrase: str) -> tuple[str, str]:
    """``(alias, SQL)`` of the column a bare ``id`` (the model's one-column key, named
    by the dimension over it when there is one) or ``name`` / ``title`` (its label,
    :func:`row_label`) asks for.

    Raises:
        Declined: a key of several columns; no label, or a ``<noun> name`` label beside
            another ``…_name`` dimension (``maker_name`` and ``full_name``: which name?).
    """
    if word in KEY_WORDS:
        if len(model.primary_key) != 1:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING, f"which column is the id of model {model.name!r}?"
            )
        key = model.primary_key[0]
        named = next((c.name for c in model.dimensions if c.sql == key), key)
        return named, key
    label = row_label(model, noun, phrase)
    others = [
        c.name
        for c in model.dimensions
        if c.name != label.name and tokenize(c.name)[-1:] == ("name",)
    ]
    if others and tokenize(label.name) not in (("name",), ("title",)):
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{word!r} of {phrase!r}: model {model.name!r} has the name columns "
            f"{', '.join([label.name, *others])}; name the one to show",
        )
    return label.name, label.sql
