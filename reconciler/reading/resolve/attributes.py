"""Two tables that hold one attribute: the measure's own column, or a joined one (pure).

A breakdown phrase the lens gives a joined model's column ("region" for
``departments.region``) while the measure's own model holds an attribute of that name
(``doctors.doctor_region``, ``expr: region``) has two readings that disagree wherever
the two tables do: each row's own value, or its join partner's. The fast tier then
declines and names both, rather than read the joined one silently.

So does a value that names rows of two models when one of them is out of the measure's
safe reach (:func:`check_unreached_value`): "crew members at Kelp Bay", a port's and a
vessel's name, would otherwise be read as the port, the one a join reaches.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.assembly.lexicon import Target
from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.resolve.paths import reachable


def _physical(column: Column) -> str:
    """The table column a lens column reads, lower-cased (its ``expr`` or its name)."""
    return column.sql.strip().strip('"').lower()


def own_attribute(lens: Lens, base: str, chosen: Target, phrase: str) -> Column | None:
    """The column of model ``base`` that holds the same attribute as the joined column
    ``chosen`` that ``phrase`` named, else ``None``.

    The same attribute: both read a table column of one name (``doctors.region`` read as
    ``doctor_region`` beside ``departments.region``), and the phrase's words are all in
    the own column's name or synonyms ("region" in "doctor region"). A column of one
    generic name alone (``name`` on accounts and on opportunities) is two attributes; a
    join key the two models share is one attribute, not two.
    """
    if chosen.model == base:
        return None
    model, other = lens.models[base], lens.models[chosen.model]
    col = next((c for c in other.columns() if c.name == chosen.name), None)
    if col is None:
        return None
    keys = {k.lower() for j in model.joins for k in j.on} | {
        v.lower() for j in model.joins for v in j.on.values()
    }
    words = set(tokenize(phrase))
    if _physical(col) in keys or not words:
        return None
    for own in model.dimensions:
        named = set(tokenize(own.name.replace("_", " "))) | {
            w for s in own.synonyms for w in tokenize(s)
        }
        if _physical(own) == _physical(col) and words <= named:
            return own
    return None


def check_own_attribute(lens: Lens, base: str, chosen: Target, phrase: str) -> None:
    """Decline a breakdown read from a joined model when the measure's own model holds
    that attribute too (:func:`own_attribute`): "doctors by region" with
    ``departments.region`` (the lens's "region") and ``doctors.doctor_region``
    (``expr: region``, the doctor's own). Both tables then answer, differently where
    the two disagree.

    Raises:
        Declined: naming both columns.
    """
    own = own_attribute(lens, base, chosen, phrase)
    if own is not None:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} reads {chosen.model}.{chosen.name} through a join, but {base} "
            f"holds its own {own.name!r}: two readings; name the one meant (e.g. "
            f"'by {own.name.replace('_', ' ')}')",
        )


def check_unreached_value(
    lens: Lens,
    base: str,
    targets: tuple[Target, ...],
    phrase: str,
    dims: Sequence[Mention] = (),
) -> None:
    """Decline a value that names rows of several models when one of them is out of the
    measure's safe reach ("crew members at Kelp Bay", a port's and a vessel's name, the
    vessel reached only through assignments): serving the reachable one would answer
    for a place the question may not mean. A reachable column the question names
    elsewhere (one of ``dims``: "tickets by passenger for Anna Berg"), or one of the
    measured rows' own (``base``), says which one.

    Raises:
        Declined: ``AMBIGUOUS_READING``, naming every column that holds the value.
    """
    models = {t.model for t in targets}
    if len(models) < 2:
        return
    reached_targets = reachable(lens, base, targets)
    named = {(t.model, t.name) for d in dims for t in d.targets}
    if any((t.model, t.name) in named or t.model == base for t in reached_targets):
        return  # named elsewhere, or the measured rows' own column: "depots in Westfield"
    reached = {t.model for t in reached_targets}
    if reached and reached != models:
        listed = ", ".join(sorted(f"{t.model}.{t.name}" for t in targets))
        first = min(targets, key=lambda t: (t.model, t.name))
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} is a value of {listed}: say which one, with its column "
            f"(e.g. '{first.name.replace('_', ' ')} {phrase}')",
        )


def check_named_column(found: Retrieval, value: Mention, column: Mention) -> None:
    """Decline a value right before a column's phrase that does not hold it ("How many
    stations are in the Lakeside district?", 'Lakeside' a station's name and no
    district): the phrase says which column the value is of, and it is of none.

    Raises:
        Declined: ``UNKNOWN_TERM``, naming the value, the column and where it is stored.
    """
    said = " ".join(found.words[value.start : value.end])
    named = " ".join(found.words[column.start : column.end])
    stored = ", ".join(sorted({f"{t.model}.{t.name}" for t in value.targets}))
    raise Declined(
        DeclineKind.UNKNOWN_TERM,
        f"{said!r} is not a value of {named!r} (it is stored in {stored})",
    )
