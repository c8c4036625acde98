"""Output-list items whose one extra word only restates their measure (pure).

An item of an output list (:mod:`reconciler.reading.grammar.outputs`) may carry a word
that its measure already says:

* ``total <count>``: the total of a count is the count itself ("total sales count",
  "total user count"), when the rest reads alone as a measure computing a ``COUNT``;
* ``<sum> amount``: "total revenue amount", when the rest reads alone as a measure
  computing a ``SUM``.

The word comes off only when the whole item reads as no column: it never changes
what a readable item means. Any other aggregate keeps the item declined ("average
price amount": an average is no amount; "total average rating": a total of an
average is no reading).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.lens import Lens
from reconciler.reading.ir import Declined, Measure

Reader = Callable[[str], Measure | None]
"""Reads a phrase as one measure alone (``None``: more than a measure), or declines."""

_RESTATING: tuple[tuple[re.Pattern[str], type[exp.Expr]], ...] = (
    (re.compile(r"^total\s+(?P<rest>.+)$", re.IGNORECASE), exp.Count),
    (re.compile(r"^(?P<rest>.+?)\s+amount$", re.IGNORECASE), exp.Sum),
)


def restated_measure(lens: Lens, phrase: str, read: Reader) -> Measure | None:
    """The measure ``phrase`` names once its restating word is off (module
    docstring), or ``None`` when it has no such word or the rest reads as no measure
    of the kind that word restates.

    Args:
        lens: the lens (its dialect parses the measure's expression).
        phrase: one output-list item that reads as no column as it stands.
        read: reads the rest as one measure alone.
    """
    for pattern, kind in _RESTATING:
        match = pattern.match(phrase.strip())
        if match is None:
            continue
        try:
            measure = read(match["rest"])
        except Declined:
            continue
        if measure is None:
            continue
        tree = sqlglot.parse_one(measure.expression, read=lens.config.dialect)
        if isinstance(tree, kind):
            return measure
    return None
