"""Value filters on listed rows: "the cartoons directed by Ben Jones or Brandon Vietti" (pure).

A value a listing (:mod:`reconciler.reading.grammar.listing`) names filters its rows
by the one column of the listed model that stores it. A value stored in the rows'
label and in other name columns names the row by its label ("Anguilla", a country's
name and its local name). Two values of one column joined by "or" keep the rows with
either (``IN``, :func:`any_of`); any other pair ("… and …", or one negated) declines:
all of them, or any?
"""

from __future__ import annotations

from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.labels import row_label
from reconciler.reading.phrases.negation import Negations


def value_filters(
    found: Retrieval, model: Model, values: list[Mention], negated: Negations
) -> tuple[list[tuple[Column, str]], list[tuple[Column, str]]]:
    """``(equality filters, negated ones)``: ``(column, stored value)`` of each value
    mention in ``values``, on ``model``'s own columns.

    Raises:
        Declined: a value of no one column of ``model``, or several values of one
            column not joined by "or".
    """
    filters: list[tuple[Column, str]] = []
    excluded: list[tuple[Column, str]] = []
    previous: dict[str, Mention] = {}  # the last value read of each column
    for v in values:
        places = _by_label(model, {(t.name, t.value) for t in v.targets if t.model == model.name})
        phrase = " ".join(found.words[v.start : v.end])
        if len(places) != 1:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{phrase!r} is not one value of a column of model {model.name!r}",
            )
        ((name, value),) = places
        col = next(c for c in model.dimensions if c.name == name)
        assert value is not None
        said_not = v.start in negated.values
        if any(c.name == name for c, _ in (*filters, *excluded)) and (
            said_not or not either(found, previous[name], v, negated)
        ):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"several values of {model.name}.{name} are named: all of them, or any?",
            )
        previous[name] = v
        (excluded if said_not else filters).append((col, value))
    return filters, excluded


def _by_label(model: Model, places: set[tuple[str, str | None]]) -> set[tuple[str, str | None]]:
    """``places`` narrowed to the rows' label when a value is stored in it and in other
    name columns of the model ("Anguilla", a country's name and its local name): a value
    that names a row names it by its label. Beside a column of another kind (a city's
    name and a district "Qandahar") it stays two readings."""
    if len(places) < 2:
        return places
    try:
        label = row_label(model, tokenize(model.name), model.name).name
    except Declined:
        return places
    others = {name for name, _ in places} - {label}
    if len(others) == len(places) or not all(tokenize(n)[-1:] in _NAMES for n in others):
        return places
    return {p for p in places if p[0] == label}


_NAMES = (("name",), ("title",))


def any_of(filters: list[tuple[Column, str]]) -> dict[Column, list[str]]:
    """``{column: its values}`` in question order (several: any of them, ``IN``)."""
    out: dict[Column, list[str]] = {}
    for col, value in filters:
        out.setdefault(col, []).append(value)
    return out


def either(found: Retrieval, first: Mention, second: Mention, negated: Negations) -> bool:
    """Whether two values of one column are joined by "or" ("directed by Ben Jones or
    Brandon Vietti", "either 32 or 33"): the rows with any of them."""
    return first.start not in negated.values and found.tokens[first.end : second.start] == ("or",)
