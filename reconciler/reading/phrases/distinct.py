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
customer, namesakes included (:func:`values_asked`). So does a listing that names no
rows at all, only dimensions of one model ("List the certification levels", "What
are the hometowns?"): with no noun of the rows, the values are what is asked; one
naming its rows ("the hometowns of all teachers") keeps a row each.

A distinct list leaves out the row whose every shown column is NULL: a missing
segment is no segment (:func:`distinct_values`; SQL from other tiers that lists one
is labelled by the NULL-group gate instead).

So does a listing whose question word determines the attribute itself, followed by a
verb: "What districts are the huts in?", "Which countries have ranges?" ask for the
districts and the countries, each once, not for a row per hut or range
(:func:`values_first`). A plural that is a model's own noun names rows after "have"
("Which airlines have flights …"), and after "are" the rows of that model the listed
rows reach ("What regions are the customers in?": each region once); a label or key
column of the listed rows themselves ("What names do the singers have?") keeps a row
each.

A question "what|which … are there" with a measure in it ("What grades of honey are
there?") asks which values exist, not for the measure broken down by them: the
one-measure grammar declines it (:func:`check_values_question`). So does a question
that asks for a column's values of the rows a count metric is named by, with no word
that aggregates: "What are the statuses of the orders in March 2024?", "What statuses
do orders have?" ask for each order's status, not for orders counted per status.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import (
    AGGREGATE_WORDS,
    ASCENDING,
    DESCENDING,
    DISTINCT_WORDS,
    LISTING_OPENERS,
    SHARE_WORDS,
)
from reconciler.reading.phrases.words import plural


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


_BE = frozenset({"are", "is", "were", "was"})
_VALUES_VERBS = frozenset({"are", "is", "were", "was", "do", "does", "did", "have", "has", "had"})


def values_first(lens: Lens, found: Retrieval) -> tuple[Mention, int, str | None] | None:
    """``(the dimension phrase, the index after its verb, the model it is the noun of)``
    of a question whose question word determines a plural dimension that a verb follows
    ("What districts are the huts in?"), else ``None`` (module docstring). A phrase that
    is a model's noun counts only before "are"/"is" ("What regions are the customers
    in?": the regions the customers are in); before "have"/"do" it names rows
    ("Which airlines have flights …" asks for airlines, a listing kept by related rows)."""
    toks = found.tokens
    if toks[:1] not in (("what",), ("which",)):
        return None
    at = 2 if toks[1:2] and toks[1] in DISTINCT_WORDS else 1
    mention = next((m for m in found.mentions if m.start == at), None)
    if mention is None or mention.kind != "dimension" or mention.end >= len(toks):
        return None
    if toks[mention.end] not in _VALUES_VERBS:
        return None
    if not plural(found, mention.end - 1):
        return None  # singular: "which district is the hut in" asks for one row's value
    entity = model_nouns(lens).get(toks[mention.start : mention.end])
    if entity is not None and toks[mention.end] not in _BE:
        return None
    return mention, mention.end + 1, entity


_ARE_THERE = re.compile(r"\b(?:are|were)\s+there\s*[?.!]*\s*$", re.IGNORECASE)


def values_asked(
    model: Model, columns: list[tuple[str, str]], question: str, bare: bool = False
) -> bool:
    """Whether a listing of ``columns`` of ``model`` asks for distinct values (module
    docstring): it ends "are there", or (``bare``: plural, naming no rows, no row by its
    label or key and no ranking) shows only dimensions of ``model``; and it shows
    neither a key nor a label column."""
    dimensions = {(c.name, c.sql) for c in model.dimensions}
    only_dimensions = all(c in dimensions for c in columns)
    if not columns or not (_ARE_THERE.search(question) or (bare and only_dimensions)):
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


_THERE = (("are", "there"), ("were", "there"))


def check_values_question(found: Retrieval) -> None:
    """Decline a measure read in a question "what|which … are there" (module docstring).

    Raises:
        Declined: ``UNSUPPORTED_CONSTRUCT``, the listing it asks for named.
    """
    if found.tokens[:1] in (("what",), ("which",)) and found.tokens[-2:] in _THERE:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"'{found.words[0]} … {' '.join(found.words[-2:])}' asks which values exist, "
            "not for a measure: ask for the values alone ('what <values> are there') or "
            "for the measure 'by' them",
        )
    if (asked := _values_of_counted(found)) is not None:
        column, rows = asked
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'{column}' of '{rows}' asks for each row's value, not for a count per value: "
            f"ask 'how many {rows} per …' for counts, or 'show the … of each …' for the rows",
        )


# Words that make "the statuses of the orders" a measure: "the number of orders …".
_MEASURING = frozenset(
    {"how", "many", "much", *AGGREGATE_WORDS, *DESCENDING, *ASCENDING, *SHARE_WORDS}
)
_LEADING = frozenset({"are", "is", "were", "was", "me", "us", "all", "the", "every"})
_AFTER_OF = frozenset({"the", "all", "each", "every", "our"})


def _values_of_counted(found: Retrieval) -> tuple[str, str] | None:
    """``(column phrase, rows phrase)`` of a question asking for a plural column's
    values of the rows a metric is named by (its own words: "orders"), with no
    aggregating word ("What are the statuses of the orders …", "What statuses do
    orders have?"), else ``None``."""
    toks = found.tokens
    if toks[:1] not in {(w,) for w in LISTING_OPENERS} or _MEASURING & set(toks):
        return None
    starts = {m.start: m for m in found.mentions}
    at = 1
    while at < len(toks) and toks[at] in _LEADING:
        at += 1
    column = starts.get(at)
    if column is None or column.kind != "dimension" or not plural(found, column.end - 1):
        return None
    k = column.end
    if toks[k : k + 1] not in (("of",), ("do",), ("did",), ("does",)):
        return None
    k += 1
    while k < len(toks) and toks[k] in _AFTER_OF:
        k += 1  # "of all the orders", "do the bookings of Fatima Sato have"
    rows = starts.get(k)
    if rows is None or rows.kind != "metric":
        return None
    return " ".join(found.words[column.start : column.end]), " ".join(
        found.words[rows.start : rows.end]
    )
