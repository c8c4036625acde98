"""Two tables that hold one attribute: the measure's own column, or a joined one (pure).

A breakdown phrase the lens gives a joined model's column ("region" for
``departments.region``) while the measure's own model holds an attribute of that name
(``doctors.doctor_region``, ``expr: region``) has two readings that disagree wherever
the two tables do: each row's own value, or its join partner's. The fast tier then
declines and names both, rather than read the joined one silently.
"""

from __future__ import annotations

from reconciler.assembly.lexicon import Target
from reconciler.assembly.text import tokenize
from reconciler.lens import Column, Lens
from reconciler.reading.ir import Declined


def _physical(column: Column) -> str:
    """The table column a lens column reads, lower-cased (its ``expr`` or its name)."""
    return column.sql.strip().strip('"').lower()


def check_own_attribute(lens: Lens, base: str, chosen: Target, phrase: str) -> None:
    """Decline a breakdown read from a joined model when the measure's own model holds
    an attribute of that name too: "doctors by region" with ``departments.region`` (the
    lens's "region") and ``doctors.doctor_region`` (``expr: region``, the doctor's own).
    Both tables then answer, differently where the two disagree (the issue's two tables
    holding ``region``); a join key the two models share is one attribute, not two.

    Raises:
        Declined: naming both columns.
    """
    if chosen.model == base:
        return
    model, other = lens.models[base], lens.models[chosen.model]
    col = next((c for c in other.columns() if c.name == chosen.name), None)
    if col is None:
        return
    keys = {k.lower() for j in model.joins for k in j.on} | {
        v.lower() for j in model.joins for v in j.on.values()
    }
    if _physical(col) in keys:
        return
    words = set(tokenize(phrase))
    for own in model.dimensions:
        if _physical(own) in keys:
            continue
        named = set(tokenize(own.name.replace("_", " "))) | {
            w for s in own.synonyms for w in tokenize(s)
        }
        if _physical(own) == _physical(col) or (words and words <= named):
            raise Declined(
                f"{phrase!r} reads {chosen.model}.{chosen.name} through a join, but {base} "
                f"holds its own {own.name!r}: two readings; name the one meant (e.g. "
                f"'by {own.name.replace('_', ' ')}')"
            )
