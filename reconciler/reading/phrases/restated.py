"""A listing's closing sentence that restates its columns: "Show both courses and scores." (pure).

A listing question (:func:`reconciler.reading.grammar.listing.listed_rows`) may close with
a sentence ``Show [me] [both] A and B`` (``Give``, ``List``, ``Return``, ``Display``)
naming the columns to show. Each item is one of:

* a noun naming the listed model ("courses"): its label column
  (:func:`reconciler.reading.phrases.labels.row_label`);
* the closing words of a column phrase the question already asked for ("scores" after
  "the easiness scores"), when they close exactly one of them;
* a phrase naming one column of the listed model ("the department").

The result holds the columns the sentence leaves out first, then its items in its
order. An item that is none of these declines (it reads as no column), and so does
one that closes several asked phrases (which one?).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind

Column = tuple[str, str]
"""``(alias, SQL)`` of a listed column."""

_CLOSING = re.compile(
    r"(?<=[?.!])\s*(?:show|give|list|return|display)(?:\s+me)?\s+(?:both\s+)?"
    r"(?P<items>[^?!.]+?)[?.!]*\s*$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
_LEADING = frozenset({"the", "their", "its", "all"})


def split_restated(question: str) -> tuple[str, tuple[str, ...]]:
    """``(question without its closing "Show …" sentence, the sentence's items)``, or
    ``(question, ())`` when it closes with none."""
    match = _CLOSING.search(question)
    if match is None:
        return question, ()
    items = tuple(i for i in _SPLIT.split(match["items"].strip()) if i)
    return question[: match.start()], items


def restate(
    lens: Lens,
    model: Model,
    listed: tuple[list[Column], Mapping[tuple[str, ...], Column]],
    items: tuple[str, ...],
    label: Callable[[], Column],
    values: DimensionValues,
) -> list[Column]:
    """The listing's columns once the closing sentence's ``items`` are shown.

    Args:
        lens: the lens.
        model: the model listed.
        listed: the listing's columns, and ``{tokens of an asked phrase: its column}``.
        items: what :func:`split_restated` found.
        label: the listed model's label column (declines when it has none).
        values: dimension values (for retrieval).

    Raises:
        Declined: an item that names no column, or closes several asked phrases.
    """
    columns, phrases = listed
    nouns = {k for k, v in model_nouns(lens).items() if v == model.name}
    chosen: list[Column] = []
    for item in items:
        toks = tokenize(item)
        while toks and toks[0] in _LEADING:
            toks = toks[1:]
        tails = {c for p, c in phrases.items() if toks and p[-len(toks) :] == toks}
        if toks in nouns:
            column = label()
        elif len(tails) > 1:
            listed_names = ", ".join(sorted(a for a, _ in tails))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{item!r} could be any of the columns {listed_names}: which one?",
            )
        elif tails:
            column = tails.pop()
        else:
            column = _named(lens, model, item, values)
        if column not in chosen:
            chosen.append(column)
    return [c for c in columns if c not in chosen] + chosen


def _named(lens: Lens, model: Model, item: str, values: DimensionValues) -> Column:
    """The one column of ``model`` the whole ``item`` names."""
    found = retrieve(lens, item, values)
    loose = [t for i, t in enumerate(found.tokens) if i not in found.covered()]
    names = {t.name for m in found.mentions for t in m.targets if t.model == model.name}
    named = [c for c in model.columns() if c.name in names]
    if len(found.mentions) != 1 or len(named) != 1 or any(t not in _LEADING for t in loose):
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"the closing list names {item!r}, which reads as no column of {model.name}",
        )
    return named[0].name, named[0].sql
