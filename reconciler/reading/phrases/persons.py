"""People in a breakdown of the ``fast`` tier: one row per person, not per name (pure).

A breakdown by a person dimension ("for each sales rep", "who has the highest …",
see :func:`~reconciler.assembly.lexicon.person_dimensions`) asks for one row per
person. A person's name is no key: two reps may share one, and grouping by the name
alone would add their figures together under it. So when the person dimension's
model declares a one-column ``primary_key`` (a dimension reading it or not), the query
also groups by that key (:attr:`~reconciler.reading.compile.Plan.hidden_keys`),
without showing it: each person keeps a row of their own, labelled by the name.

Plans of a change between periods or of measures on several models keep the
grouping by the shown columns (their rows are matched on those columns later).
"""

from __future__ import annotations

import dataclasses

from reconciler.assembly.lexicon import person_dimensions
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.phrases.words import Reading
from reconciler.reading.resolve.paths import resolve_target


def with_person_keys(lens: Lens, plan: Plan) -> Plan:
    """``plan`` with the key of every person model it breaks down by as a hidden key.

    Returns:
        The same plan when no breakdown is a person dimension of a model with a
        one-column primary key (or the plan is a change or joins several models).
    """
    if plan.change is not None or plan.joined:
        return plan
    persons = {(t.model, t.name) for t in person_dimensions(lens)}
    hidden: list[tuple[str, str]] = []
    for model, dim in plan.breakdowns:
        if (model, dim) not in persons:
            continue
        found = lens.models[model]
        key = found.primary_key
        if len(key) != 1 or key[0] == dim:
            continue
        if (model, key[0]) not in plan.breakdowns and (model, key[0]) not in hidden:
            hidden.append((model, key[0]))
    return dataclasses.replace(plan, hidden_keys=tuple(hidden)) if hidden else plan


def who_ranks(
    lens: Lens, base: str, breakdowns: list[tuple[str, str]], reading: Reading
) -> tuple[str, str]:
    """``(model, dimension)`` of the person an opening "who" ranks, the only breakdown
    it allows ("Who sold the most revenue in 2024?").

    Raises:
        Declined: no person dimension in the lens, another breakdown beside it, or no
            ranking word.
    """
    persons = person_dimensions(lens)
    if not persons:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            "'who' asks for a person, but no dimension of the lens names one",
        )
    person = resolve_target(lens, base, persons, "person", "who")
    place = (person.model, person.name)
    others = [f"{m}.{d}" for m, d in breakdowns if (m, d) != place]
    if others:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"'who' ranks {place[0]}.{place[1]}; it cannot also break down by {others[0]}",
        )
    if not reading.directions:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "'who' needs a ranking word (highest, most, lowest …)",
        )
    return place
