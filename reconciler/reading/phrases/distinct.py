""" "Different", "distinct", "unique" before a breakdown column (pure).

In a question that groups by a column, "the different hometowns of teachers and the
number of teachers from each hometown" asks for each value once, which grouping
already gives: the word adds nothing. It is read so only right before a dimension
phrase (past ``the``/``all``), and only when the plan breaks down by that dimension;
anywhere else ("how many different …", "for different number of …") it is left to
the readers that know it, and the one-measure grammar keeps it as an unknown word.

A listing that ends "… are there?" ("What customer segments are there?", "which
vehicle types were there") asks for the values themselves, each once, when it shows
only attributes: no key column and no label of the rows (a column named like the
model, or ending in ``name`` or ``title``) — "What customers are there?" still lists every
customer, namesakes included (:func:`values_asked`).

A distinct list leaves out the row whose every shown column is NULL: a missing
segment is no segment (:func:`distinct_values`; SQL from other tiers that lists one
is labelled by the NULL-group gate instead).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Model
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import DISTINCT_WORDS


def distinct_columns(found: Retrieval) -> dict[int, Mention]:
    """``{index of a distinct word: the dimension phrase it stands before}``."""
    starts = {m.start: m for m in found.mentions if m.kind == "dimension"}
    covered = found.covered()
    out: dict[int, Mention] = {}
    for i, t in enumerate(found.tokens):
        if t not in DISTINCT_WORDS or i in covered:
            continue
        k = i + 1
        while k < len(found.tokens) and found.tokens[k] in ("the", "all"):
            k += 1
        if k in starts:
            out[i] = starts[k]
    return out


def check_distinct(found: Retrieval, marked: dict[int, Mention], plan: Plan) -> None:
    """Decline when a distinct word stands before a column ``plan`` does not group by.

    Raises:
        Declined: the first such word, by its phrase.
    """
    for at, mention in marked.items():
        if not any((t.model, t.name) in plan.breakdowns for t in mention.targets):
            phrase = " ".join(found.words[at : mention.end])
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{phrase!r}: each value once, but the answer does not group by it",
            )


_ARE_THERE = re.compile(r"\b(?:are|were)\s+there\s*[?.!]*\s*$", re.IGNORECASE)


def values_asked(model: Model, columns: list[tuple[str, str]], question: str) -> bool:
    """Whether a listing of ``columns`` of ``model`` asks for distinct values (module
    docstring): it ends "are there" and shows neither a key nor a label column."""
    if not columns or not _ARE_THERE.search(question):
        return False
    keys = {k.lower() for k in model.primary_key}
    noun = tokenize(model.name)
    for alias, sql in columns:
        if sql.strip('"').lower() in keys or alias.lower() in keys:
            return False
        for words in (tokenize(alias), tokenize(sql)):
            if words == noun or words[-1:] in (("name",), ("title",)):
                return False
    return True


def distinct_values(query: exp.Select, columns: list[tuple[str, str]], dialect: str) -> exp.Select:
    """``query`` as ``SELECT DISTINCT``, without the row whose every column is NULL."""
    missing = [
        exp.Is(this=sqlglot.parse_one(sql, read=dialect), expression=exp.Null())
        for _, sql in columns
    ]
    return query.distinct().where(exp.Not(this=exp.paren(exp.and_(*missing))))
