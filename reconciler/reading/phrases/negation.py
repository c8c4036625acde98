"""Negated value filters: "not from Oslo", "whose city is not Oslo", "other than Gold" (pure).

A negation marker right before a value mention negates that one value:

    not [from | in | at | of | for] [the] <value>
    other than [the] <value>
    excluding [the] <value>
    except [for] [the] <value>

("whose city is not Oslo", "who are not from Oslo", "loans other than lost ones").
A reader writes the negated value as ``<column> <> <value>``. SQL's comparison is
three-valued: a row whose column is NULL is not known to differ from the value, so
``<>`` leaves it out, and the SQL says so in a comment on the condition
(:func:`~reconciler.reading.ir.null_note`), which the answer shows with its SQL.

A marker before no value — "do not have", "not higher than 4", "except for stadiums
having …" — is not placed: the reader declines on it (:func:`check_placed`), never
drops it (the one-measure grammar keeps it as an unknown word). Neither is a negated
value followed by ``or``/``and``/``nor`` and another value ("not from Oslo or Bergen":
neither, or not both?) read: it declines.

A negated value of a related model is read through a many-to-one path ("visits of
members whose club's country is not Norway": the member's one club). Through a hop
that gives each row many related rows ("clubs whose members' city is not Oslo") it
could mean that some related row differs or that none has the value: it declines
(:func:`check_reach`).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import Reversal
from reconciler.assembly.retrieval import Retrieval
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Plan, null_note
from reconciler.reading.resolve.paths import one_path

# The markers, as token sequences, and what may stand between a marker and its value.
_MARKERS = (("not",), ("other", "than"), ("excluding",), ("except",))
_PREPOSITIONS = frozenset({"from", "in", "at", "of", "for"})
_JOINERS = frozenset({"or", "and", "nor"})
# What may stand between a column and its negated value: "whose city is not from …".
_GAP = frozenset({"is", "are", "was", "were", "the"} | _PREPOSITIONS)


@dataclass(frozen=True)
class Negations:
    """The negation markers of one question.

    Attributes:
        values: start indices of the value mentions a marker negates.
        words: token indices of the markers that negate a value.
        unplaced: token indices of the markers that negate none.
    """

    values: frozenset[int] = frozenset()
    words: frozenset[int] = frozenset()
    unplaced: tuple[int, ...] = ()


def negations(found: Retrieval) -> Negations:
    """The negated values of ``found`` and the markers that negate them (module docstring).

    Raises:
        Declined: a negated value followed by ``or``/``and``/``nor`` and another value.
    """
    toks = found.tokens
    covered = found.covered()
    starts = {m.start: m for m in found.mentions if m.kind == "value"}
    values: set[int] = set()
    words: set[int] = set()
    unplaced: list[int] = []
    i = 0
    while i < len(toks):
        marker = next(
            (
                m
                for m in _MARKERS
                if toks[i : i + len(m)] == m and not any(k in covered for k in range(i, i + len(m)))
            ),
            None,
        )
        if marker is None:
            i += 1
            continue
        k = i + len(marker)
        if k < len(toks) and toks[k] in _PREPOSITIONS:
            k += 1
        if k < len(toks) and toks[k] == "the":
            k += 1
        value = starts.get(k)
        if value is None:
            unplaced.append(i)
        else:
            values.add(k)
            words.update(range(i, i + len(marker)))
            after = value.end
            if after < len(toks) and toks[after] in _JOINERS and any(s > after for s in starts):
                phrase = " ".join(found.words[i : after + 1])
                raise Declined(
                    DeclineKind.AMBIGUOUS_READING,
                    f"{phrase!r} … another value: neither of them, or not both? Ask for "
                    "one negated value at a time",
                )
        i += len(marker)
    return Negations(frozenset(values), frozenset(words), tuple(unplaced))


def check_placed(found: Retrieval, negated: Negations) -> None:
    """Decline when a negation marker negates no value (module docstring).

    Raises:
        Declined: the first unplaced marker, by its words.
    """
    if negated.unplaced:
        at = negated.unplaced[0]
        around = " ".join(found.words[max(at - 1, 0) : at + 3])
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"what does the negation in {around!r} negate? Only 'not <value>', "
            "'other than <value>' or 'excluding <value>' of one column is read",
        )


def gap(found: Retrieval, negated: Negations, end: int, value: int) -> tuple[str, ...]:
    """The tokens between a column phrase ending at ``end`` and the value starting at
    ``value``, less a negation's marker, copula and preposition ("city is not from"):
    empty when the column names the negated value's column ("whose city is not Oslo")."""
    gap = found.tokens[end:value]
    if value not in negated.values:
        return gap
    return tuple(
        t for k, t in enumerate(gap, start=end) if k not in negated.words and t not in _GAP
    )


def differs(sql: str, name: str, value: str, dialect: str) -> exp.Expr:
    """``<sql> <> '<value>'`` (``sql`` the column ``name``'s), its literal carrying
    :func:`~reconciler.reading.ir.null_note`."""
    column = sqlglot.parse_one(sql, read=dialect)
    literal = exp.Literal.string(value)
    literal.add_comments([null_note(name, value)])
    return exp.NEQ(this=column, expression=literal)


def check_reach(lens: Lens, plan: Plan) -> None:
    """Decline a negated value ``plan`` reaches through a hop that fans its base's rows
    out: some related row differs, or none has the value? (module docstring).

    Raises:
        Declined: the first such value.
    """
    for model, dim, value in plan.excluded:
        for _, join in one_path(lens, plan.base, model):
            if isinstance(join, Reversal) or join.relationship == "one_to_many":
                raise Declined(
                    DeclineKind.AMBIGUOUS_READING,
                    f"each {plan.base} row has many {join.to} rows: {model}.{dim} not "
                    f"{value!r} in some of them, or in none? Ask for one of the two",
                )
