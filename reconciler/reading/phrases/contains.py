"""Text a column contains: "the contestants whose names contain the substring 'Al'" (pure).

A text column's phrase, then ``contain(s)``, ``containing``, ``include(s)``,
``including``, ``has`` or ``have``, an optional ``the substring`` / ``the
word`` / ``the string`` / ``the text`` / ``the letters``, and quoted text is a
filter on that column: its rows whose value contains the text, letter case aside
(``ILIKE '%Al%'``, as "contains" is said, not typed), the text as typed between the
quotes (punctuation and spaces kept). The words are taken off the
question before a listing reads it (:func:`split_contains`), like the comparisons of
:mod:`~reconciler.reading.phrases.bounds`; the column must be one dimension of the
listed rows' model. Without quotes the text's end is unknown ("whose name has the word
computer in it"), so the words stay and the question declines as before; a text
holding ``%`` or ``_`` is refused rather than read as a pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, Target
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import words
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind

_VERBS = frozenset(
    {"contain", "contains", "containing", "include", "includes", "including", "has", "have"}
)
_NOUNS = frozenset({"substring", "word", "string", "text", "letters", "letter", "phrase"})


@dataclass(frozen=True)
class Contained:
    """One "contains" filter: the columns its phrase may mean, and the text."""

    targets: tuple[Target, ...]
    text: str
    phrase: str


def split_contains(
    lens: Lens, question: str, values: DimensionValues
) -> tuple[str, tuple[Contained, ...]]:
    """``(question without its "contains" phrases, the filters)``; the question comes
    back as its words joined by spaces when any were taken off, else unchanged (also
    when the lens's vocabulary moved its words: the quotes no longer line up)."""
    found = retrieve(lens, question, values)
    if found.words != words(question):
        return question, ()
    ends = {m.end: m for m in found.mentions if m.kind == "dimension"}
    drop: set[int] = set()
    out: list[Contained] = []
    for i, word in enumerate(found.words):
        column = ends.get(i)
        if column is None or word not in _VERBS or i in drop:
            continue
        k = i + 1
        k += found.words[k : k + 1] == ("the",)
        k += bool(found.words[k : k + 1]) and found.words[k] in _NOUNS
        typed = _typed_at(question, found.words, k)
        if typed is None:
            continue  # no quoted text there: its end is unknown
        text, quoted = typed
        drop.update(range(column.start, quoted))
        phrase = " ".join(found.words[column.start : quoted])
        out.append(Contained(column.targets, text, phrase))
    if not out:
        return question, ()
    return " ".join(w for i, w in enumerate(found.words) if i not in drop), tuple(out)


_QUOTED = re.compile(r"[\"“‘']([^\"“”‘’']+)[\"”’']")


def _typed_at(question: str, said: tuple[str, ...], at: int) -> tuple[str, int] | None:
    """``(the quoted text as typed, the index past its words)`` of quoted text in
    ``question`` whose words start at ``at`` — its case, spaces and punctuation kept
    ("Sky-Radio" is not "Sky Radio") — else ``None``."""
    for match in _QUOTED.finditer(question):
        inside = words(match.group(1))
        if inside and said[at : at + len(inside)] == inside:
            return match.group(1).strip(), at + len(inside)
    return None


def contains_conditions(
    model: Model, contained: tuple[Contained, ...], dialect: str
) -> list[exp.Expr]:
    """``<column> ILIKE '%<text>%'`` for each filter, on ``model``'s own dimension.

    Raises:
        Declined: the phrase names no one dimension of ``model``, or the text holds
            a pattern character.
    """
    out: list[exp.Expr] = []
    for c in contained:
        names = {t.name for t in c.targets if t.model == model.name}
        if len(names) != 1:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{c.phrase!r}: not one text column of model {model.name!r}",
            )
        if "%" in c.text or "_" in c.text:
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{c.text!r} holds a pattern character (% or _): say the text plainly",
            )
        column = next(col for col in model.dimensions if col.name in names)
        out.append(
            exp.ILike(
                this=sqlglot.parse_one(column.sql, read=dialect),
                expression=exp.Literal.string(f"%{c.text}%"),
            )
        )
    return out
