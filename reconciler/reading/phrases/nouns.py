"""Breakdowns by a dimension named like its own model's rows (pure).

A *noun dimension* is a dimension whose name or one of whose synonyms is also a noun
of its own model (:func:`~reconciler.assembly.lexicon.model_nouns`): ``track_name``
with the synonym ``track`` on model ``tracks``, ``region`` on ``regions``. The
phrase then names the model's rows, and the fast tier holds it to two rules:

* it is a breakdown only after ``by``, ``per``, ``each``, ``every`` or ``across``
  (or in a ranking): in "revenue of tracks in the Rock genre" the noun says whose
  rows are summed, and one row per track would answer another question, so that
  reading declines rather than guess (:func:`check_noun_breakdowns`);
* a breakdown by it is one row per model row, not per label: when the model declares
  a one-column ``primary_key`` that a declared column reads, the query also groups by
  that key, hidden (:func:`with_row_keys`), so two tracks that share a name keep a
  row each. A plan whose rows are matched on their shown columns later (a change
  between periods, measures on several models) cannot carry the hidden key, and
  declines. A model without a declared key keeps the grouping by its label.

One reading is forced by the words: a plural noun of the measure's own model after
``of`` or ``for`` ("average capacity of stations", "… of all the stations") names the
rows the figure is taken over, which are the measure's rows anyway: no breakdown, no
filter (:func:`own_rows`). A plural noun after a participle and ``by`` ("bookings made
by researchers from Downtown") names who did it, not a breakdown, and declines; so does
a value right after a breakdown word ("productions per director", 'Director' a role).
"""

from __future__ import annotations

import dataclasses

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import NUMBER_WORDS, PARTICIPLES
from reconciler.reading.phrases.words import plural, uninvited

EVERY = frozenset({"every", "each"})
"""Words before a singular noun that name each of its rows ("the age of every teacher")."""


def _count(token: str) -> bool:
    return token.isdigit() or token in NUMBER_WORDS


def noun_dimensions(lens: Lens) -> frozenset[tuple[str, str]]:
    """``{(model, dimension)}`` of every noun dimension of ``lens`` (module docstring)."""
    nouns = model_nouns(lens)
    out = set()
    for model in lens.models.values():
        for dim in model.dimensions:
            if any(nouns.get(tokenize(p)) == model.name for p in (dim.name, *dim.synonyms)):
                out.add((model.name, dim.name))
    return frozenset(out)


def named_rows(lens: Lens, found: Retrieval) -> tuple[int, int, str] | None:
    """``(start, end, model)`` of a noun dimension said *of* its model's rows —
    ``the cities of the stations``, where ``stations`` is both the plural of the
    dimension ``station`` and a noun of model ``stations``, ``the ages of (or for)
    every singer``, ``the countries with (or where) singers …`` (plural), ``which
    singers …`` opening the question, or ``the name of the
    airport with code 'AKO'`` — which names the model's rows, not a column to show;
    ``None`` when the question holds no such phrase. (A singular noun is then one
    row: the listing declines it unless a filter names that row.)"""
    nouns, dims = model_nouns(lens), noun_dimensions(lens)
    for m in found.mentions:
        span = found.tokens[m.start : m.end]
        models = {t.model for t in m.targets if (t.model, t.name) in dims}
        if len(models) != 1 or nouns.get(span) not in models:
            continue
        k = m.start - 1
        while k >= 0 and (found.tokens[k] in ("the", "all") or _count(found.tokens[k])):
            k -= 1  # "the names of the 3 singers with the highest …": a ranking's count
        every = k >= 0 and found.tokens[k] in EVERY  # "the ages of (or for) every singer"
        k -= every
        every = every or found.tokens[k + 1 : m.start] == ("all",)  # "for all singers"
        if k >= 0 and found.tokens[k] in (("of", "for") if every else ("of",)):
            return m.start, m.end, models.pop()
        if k >= 0 and found.tokens[k] in ("with", "where") and plural(found, m.end - 1):
            return m.start, m.end, models.pop()  # "the countries with singers above age 20"
        if k == 0 and found.tokens[k] == "which":  # "which singers have the highest …"
            return m.start, m.end, models.pop()
    return None


def check_noun_breakdowns(
    lens: Lens, found: Retrieval, breakdowns: list[Mention], rank: tuple[bool, int] | None
) -> None:
    """Decline a noun dimension asked as a breakdown without ``by``/``per``/``each`` …

    Args:
        lens: the lens.
        found: the question's retrieval.
        breakdowns: the dimension mentions asked as breakdowns.
        rank: the question's ranking, if any (a ranking's noun is its rows).

    Raises:
        Declined: naming the phrase, its model and how to ask for the breakdown.
    """
    _check_value_after_breakdown_word(found)
    nouns = noun_dimensions(lens)
    for mention in breakdowns:
        hits = [t for t in mention.targets if (t.model, t.name) in nouns]
        if hits and _agent(found, mention):
            said = " ".join(found.words[mention.start - 2 : mention.end])
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{said!r} says who did it, not a breakdown: say 'by "
                f"{found.words[mention.end - 1].rstrip('s')}' for one row each, or name "
                f"which {hits[0].model} by a value of theirs",
            )
        if hits and mention.start > 0 and found.tokens[mention.start - 1] == "per":
            word = " ".join(found.words[mention.start : mention.end])
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"'per {word}': one row per {hits[0].model} row, or an average over "
                f"{hits[0].model} (a ratio)? Say 'for each {word}' or 'divided by'",
            )
    if rank is not None:
        return
    for mention in uninvited(found, breakdowns):
        hits = [t for t in mention.targets if (t.model, t.name) in nouns]
        if not hits:
            continue
        phrase = " ".join(found.words[mention.start : mention.end])
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{phrase!r} names the rows of model {hits[0].model!r} and its dimension "
            f"{hits[0].name!r}: one row per {hits[0].model} (say 'by {phrase}'), or the "
            f"{hits[0].model} the figure is taken over?",
        )


_PER_WORDS = frozenset({"per", "each", "every", "across"})


def _check_value_after_breakdown_word(found: Retrieval) -> None:
    """Decline a value right after "per", "each", "every" or "across" ("Number of
    productions per director", 'Director' a value of the staff's role): a breakdown
    word asks for one row per value of a column, and a value is no column."""
    toks = found.tokens
    for m in found.mentions:
        k = m.start - 1
        while k >= 0 and toks[k] == "the":
            k -= 1
        if m.kind == "value" and k >= 0 and toks[k] in _PER_WORDS:
            said = " ".join(found.words[k : m.end])
            column = ", ".join(sorted({f"{t.model}.{t.name}" for t in m.targets}))
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{said!r}: {found.words[m.start]!r} is a value of {column}, not a column "
                "to break down by: name the column, or filter on the value",
            )


def _agent(found: Retrieval, mention: Mention) -> bool:
    """Whether ``mention`` is a plural noun after a participle and ``by`` ("made by
    researchers", "booked by customers"): the rows' agent, not a breakdown."""
    at = mention.start
    if at < 2 or found.tokens[at - 1] != "by" or not plural(found, mention.end - 1):
        return False
    before = found.words[at - 2]
    return before in PARTICIPLES or (before.endswith("ed") and len(before) > 4)


_OWN_OPENERS = frozenset({"of", "for"})
_SKIPPED = frozenset({"the", "all"})


def own_rows(
    lens: Lens, found: Retrieval, base: str, dims: list[Mention], ranked: bool
) -> set[Mention]:
    """The mentions of ``dims`` that only name the measure's own rows (module docstring).

    Args:
        lens: the lens.
        found: the question's retrieval.
        base: the measure's model.
        dims: the dimension mentions the question asks for.
        ranked: whether the question ranks (a ranking's noun is its rows: kept).

    Returns:
        Those mentions: a plural noun dimension of ``base``, introduced by no breakdown
        word, right after ``of`` or ``for`` (past ``the`` / ``all``).
    """
    if ranked:
        return set()
    nouns = noun_dimensions(lens)
    out = set()
    for mention in uninvited(found, dims):
        if not any((t.model, t.name) in nouns and t.model == base for t in mention.targets):
            continue
        if not plural(found, mention.end - 1):
            continue  # singular: "capacity of station" names one station
        k = mention.start - 1
        while k >= 0 and found.tokens[k] in _SKIPPED:
            k -= 1
        if k >= 0 and found.tokens[k] in _OWN_OPENERS:
            out.add(mention)
    return out


def key_column(model: Model) -> str | None:
    """The declared column that reads ``model``'s one-column ``primary_key`` (by its
    name or its expression), or ``None``."""
    if len(model.primary_key) != 1:
        return None
    key = model.primary_key[0].lower()
    for col in model.columns():
        if col.name.lower() == key or col.sql.strip().strip('"').lower() == key:
            return col.name
    return None


def one_key(model: Model) -> str | None:
    """``model``'s one-column ``primary_key`` as declared (a column of its table that no
    dimension need read: the compiler groups by it by name), or ``None``."""
    return model.primary_key[0] if len(model.primary_key) == 1 else None


def with_row_keys(lens: Lens, plan: Plan) -> Plan:
    """``plan`` grouping by the key of every noun dimension's model it breaks down by.

    Returns:
        The plan with those keys added to :attr:`Plan.hidden_keys`: the declared column
        reading the model's one-column key, else that key column itself (none added
        for a model without a one-column ``primary_key``).

    Raises:
        Declined: such a breakdown in a change between periods or across several
            models, whose rows are matched on their shown columns.
    """
    nouns = noun_dimensions(lens)
    hidden = list(plan.hidden_keys)
    for model, dim in plan.breakdowns:
        if (model, dim) not in nouns:
            continue
        key = key_column(lens.models[model]) or one_key(lens.models[model])
        if key is None or key == dim or (model, key) in plan.breakdowns:
            continue
        if plan.change is not None or plan.joined:
            raise Declined(
                DeclineKind.UNSAFE_RESULT,
                f"a breakdown by {dim!r} is one row per {model} row (two may share a "
                f"{dim}); with a change between periods or measures of several models "
                f"it is not read: ask by {key!r}",
            )
        if (model, key) not in hidden:
            hidden.append((model, key))
    return dataclasses.replace(plan, hidden_keys=tuple(hidden))


def check_counted_inside(lens: Lens, found: Retrieval, base: str) -> None:
    """Decline "How many trips started at stations in University?" read as a count of
    stations: "how many" right before a phrase of the lens (here a date, "trip started")
    that opens with another model's noun counts that model's rows, not ``base``'s.

    Raises:
        Declined: ``AMBIGUOUS_READING``, naming the model counted and the one measured.
    """
    if found.tokens[:2] != ("how", "many"):
        return
    after = next((m for m in found.mentions if m.start == 2), None)
    if after is None or after.kind in ("metric", "value"):
        return
    nouns = model_nouns(lens)
    said = found.tokens[after.start : after.end]
    counted = next((nouns[said[:n]] for n in range(len(said), 0, -1) if said[:n] in nouns), None)
    if counted is not None and counted != base:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"'how many {' '.join(found.words[2 : after.end])}' counts {counted}, but the "
            f"measure is of {base}: which rows are counted?",
        )
