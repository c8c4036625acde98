"""Values named by a row's name or identifier: "the vendor named 'Acme'", "with id 'abc123'" (pure).

Two spellings filter one row of a model by a stored value:

* ``named`` / ``called`` / ``with the name`` and a value of the model's *name column*: a dimension
  whose name or column ends in ``name`` (``business_name``, ``journalname``,
  ``first_name``) — ``the business named "Mark's Bistro"``;
* ``with id`` / ``with <model> id`` and a value of the model's *key column*: the
  dimension over its single-column ``primary_key`` — ``the business with ID
  "abc123"``, ``the customer with customer code C1``.

The value must be one the retrieval matched: a warehouse value of that column (or a
``sample_values`` entry when no profile is known). :func:`split_names` takes the
connecting words off (``named``, ``with id``), so the value stands right next to the
noun it qualifies and is read as an equality filter, like ``the West region``. A
word that names no such value declines, with the column that was looked in:

* ``named`` not followed by a value, or by a value of a column that is no name
  column (``the city named Paris`` when only ``city`` holds it);
* ``id`` not followed by a value of a key column (a number is never one: numbers
  are not matched as stored values);
* a noun before the words that names another model than the value's.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind

_NAMED = frozenset({"named", "called"})
Check = Callable[[Lens, str, str], bool]


def split_names(lens: Lens, question: str, values: DimensionValues) -> str:
    """``question`` without the words that tie a name or id value to its row.

    Returns the question as its words joined by spaces when any were taken off
    (like :func:`reconciler.reading.phrases.bounds.split_bounds`), else unchanged.

    Raises:
        Declined: ``named`` / ``id`` with no value of a name / key column after
            it, or after a noun of another model (module docstring).
    """
    found = retrieve(lens, question, values)
    covered = found.covered()
    drop: set[int] = set()
    for i, token in enumerate(found.tokens):
        if i in covered:
            continue
        if token in _NAMED:
            _value_after(lens, found, (i, i), is_name, "a name")
            drop.add(i)
        elif token == "name" and i > 1 and found.tokens[i - 2 : i] == ("with", "the"):
            _value_after(lens, found, (i - 2, i), is_name, "a name")
            drop.update((i - 2, i - 1, i))
        elif token == "id" and i > 0 and found.tokens[i - 1] == "with":
            _value_after(lens, found, (i - 1, i), is_key, "an id")
            drop.update((i - 1, i))
    for m in found.mentions:
        # "the paper with paper ID 2": a key column's phrase right before its value
        before = m.start - 1
        if before in covered or found.tokens[before : m.start] != ("with",):
            continue
        if m.kind == "dimension" and all(is_key(lens, t.model, t.name) for t in m.targets):
            value = _mention_at(found, m.end)
            if value is not None and _same_columns(m, value):
                drop.add(before)
    if not drop:
        return question
    return " ".join(w for i, w in enumerate(found.words) if i not in drop)


def _value_after(
    lens: Lens, found: Retrieval, words: tuple[int, int], check: Check, what: str
) -> None:
    """Check that the connecting words ``[first, last]`` are followed by a value of a
    column ``check`` accepts, of the model a noun right before them names (if any)."""
    first, i = words
    word = " ".join(found.words[first : i + 1])
    value = _mention_at(found, i + 1)
    if value is None and found.words[i + 1 : i + 2] and found.words[i + 1].isdigit():
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"'{word} {found.words[i + 1]}': a number is not read as {what} "
            "(only stored text values are)",
        )
    if value is None or value.kind != "value":
        after = " ".join(found.words[i + 1 : i + 4])
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"'{word} {after}': no column of the lens holds that value as {what} "
            f"(the warehouse's values are looked up)",
        )
    wrong = sorted(
        {f"{t.model}.{t.name}" for t in value.targets if not check(lens, t.model, t.name)}
    )
    if wrong:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"'{word}' is followed by a value of {', '.join(wrong)}, which is not {what} "
            f"column of its model",
        )
    noun = _noun_before(lens, found, first)
    models = {t.model for t in value.targets}
    if noun is not None and noun not in models:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"'{word}' names a value of {', '.join(sorted(models))}, not of {noun!r} "
            "the question names before it",
        )


def _noun_before(lens: Lens, found: Retrieval, k: int) -> str | None:
    """The model a model noun or a dimension phrase ending right before ``k`` names."""
    for m in found.mentions:
        if m.end == k and m.kind in ("dimension", "value"):
            return m.targets[0].model if len({t.model for t in m.targets}) == 1 else None
    nouns = model_nouns(lens)
    for n in range(k, 0, -1):
        if found.tokens[k - n : k] in nouns:
            return nouns[found.tokens[k - n : k]]
    return None


def _mention_at(found: Retrieval, start: int) -> Mention | None:
    return next((m for m in found.mentions if m.start == start), None)


def _same_columns(dimension: Mention, value: Mention) -> bool:
    named = {(t.model, t.name) for t in dimension.targets}
    return value.kind == "value" and all((t.model, t.name) in named for t in value.targets)


def is_name(lens: Lens, model: str, dimension: str) -> bool:
    """Whether ``model.dimension`` is a *name column*: a dimension whose name or
    column ends in ``name`` (``business_name``, ``journalname``, ``first_name``)."""
    col = next((c for c in lens.models[model].dimensions if c.name == dimension), None)
    return col is not None and (
        col.name.lower().endswith("name") or col.sql.lower().endswith("name")
    )


def is_key(lens: Lens, model: str, dimension: str) -> bool:
    """Whether ``model.dimension`` is the *key column*: the dimension over the
    model's single-column ``primary_key``."""
    found = lens.models[model]
    col = next((c for c in found.dimensions if c.name == dimension), None)
    return (
        col is not None
        and len(found.primary_key) == 1
        and found.primary_key[0].lower() in (col.name.lower(), col.sql.lower())
    )
