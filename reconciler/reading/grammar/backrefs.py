"""Pronouns that refer back to the ranked entity: "… and how many did he/she have?" (pure).

A ranking by a count of related rows may end by restating that count through a
pronoun. :func:`without_backrefs` takes the restatement off the question, so the
rest is read as usual (the ranking shows the count), in two forms:

* a closing clause ``[,] and how many <B> did|do|does|have|has|had <pronoun> <verb>
  [that year | in total | in all]``: "Which author had the most publications in 2021
  and how many publications did he/she have that year?";
* a closing ``associated with them`` (``related``, ``linked``, ``connected``; ``with``
  or ``to``): "the top 5 domains with the highest number of authors associated with
  them". Any other verb before the pronoun ("publications cited by them") is a
  relation of its own, and stays.

Either is taken off only when one reading is forced by the words:

* the question ranks by a count of the same ``<B>``: a ranking word (``most``,
  ``highest``, ``fewest`` …), optionally ``number of`` / ``count of``, then the
  noun of the model B (for the object form, B is the last model noun before the
  pronoun), so the count the pronoun's clause asks for is the one ranked;
* the pronoun has exactly one antecedent: one model noun before it, other than B's,
  whose number agrees (``they`` / ``them``: plural; ``he`` / ``she`` / ``he/she``,
  ``him`` / ``her``: singular). A pronoun bound inside B's own clause ("authors
  associated with them") cannot be B;
* the clause's verb is ``have`` (``has``, ``had``) or a verb the question already
  used ("taught the most courses … how many courses have they taught");
* the clause counts the same rows as the ranking: the question names no value or
  flag ("… in Nature, and how many papers did he have?" may ask for all of his), and a
  question naming a period needs ``that year`` and exactly one year ("… in 2021 and
  how many did he have?" may ask for all of his, and "in total" would); one naming no
  time takes no ``that year``.

Anything else keeps its words, and the pronoun stays an unknown word (the question
declines; :func:`pronoun_hint` says why).

A closing ordering phrase may restate a ranking the same way:

* its key may end with the pronoun clause: "ordered by the number of papers they have
  published" is "ordered by the number of papers" under the rules above, in a question
  naming no time (:func:`restated_key`);
* a plural ranking without a count ("Which authors have published the most papers")
  followed by an ordering in the same direction by the ranked measure ("…, ordered by
  the number of papers in descending order") lists every row in that order: a set of
  rows tied at the top would need no ordering (:func:`every_row_ordered`). An ordering
  by anything else, or a ranking within groups ("the most papers in each journal"),
  declines.
"""

from __future__ import annotations

import dataclasses
import re

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Retrieval, retrieve
from reconciler.assembly.text import YEAR_RE, mentions_time, stem, tokenize
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind, Plan
from reconciler.reading.lex import ASCENDING, DESCENDING, HAVE_WORDS
from reconciler.reading.phrases.ordering import Ordering
from reconciler.reading.phrases.words import Reading, plural

_PRONOUN = r"(?P<pro>he\s*/\s*she|he\s+or\s+she|he|she|they)"
_CLAUSE = re.compile(
    r"\s*,?\s+and\s+how\s+many\s+(?P<noun>[a-z][\w\s-]*?)\s+(?:did|do|does|have|has|had)\s+"
    rf"{_PRONOUN}\s+(?P<verb>[a-z]+)(?P<tail>\s+(?:that\s+year|in\s+total|in\s+all))?"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_OBJECT = re.compile(
    r"(?<=\s)(?P<verb>associated|related|linked|connected)\s+(?:with|to)\s+(?P<pro>them|him|her)"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_KEY_CLAUSE = re.compile(
    rf"^(?P<key>.+?)\s+(?:that\s+)?{_PRONOUN}\s+(?:have|has|had|did)\s+(?P<verb>[a-z]+)$",
    re.IGNORECASE,
)
_PLURAL = frozenset({"they", "them"})
_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "they", "them", "theirs"})
_COUNT_OF = (("number", "of"), ("count", "of"))


def without_backrefs(lens: Lens, question: str, values: DimensionValues) -> str:
    """``question`` without a restating pronoun clause or object (module docstring),
    or unchanged when it has none that one reading forces."""
    clause = _CLAUSE.search(question)
    if clause is not None:
        main = question[: clause.start()]
        return f"{main.rstrip(' ,')}?" if _clause_restates(lens, main, clause, values) else question
    obj = _OBJECT.search(question)
    if obj is not None:
        main = question[: obj.start()].rstrip()
        noun = _last_noun(lens, tokenize(main))
        many = obj["pro"].lower() in _PLURAL
        if (
            noun is not None
            and _ranks_by(lens, main, noun)
            and _one_antecedent(lens, retrieve(lens, main, values), noun, many)
        ):
            return f"{main.rstrip(' ,')}?"
    return question


def restated_key(
    lens: Lens, question: str, ordering: Ordering, values: DimensionValues
) -> Ordering:
    """``ordering`` with its key's closing pronoun clause taken off when the clause
    restates the count the question ranks by (module docstring), else unchanged."""
    match = _KEY_CLAUSE.match(ordering.key or "")
    if match is None:
        return ordering
    toks = tokenize(match["key"])
    noun = toks[2:] if toks[:2] in _COUNT_OF else toks[3:] if toks[1:3] in _COUNT_OF else ()
    verb = match["verb"].lower()
    if (
        noun in model_nouns(lens)
        and _ranks_by(lens, question, noun)
        and _one_antecedent(
            lens, retrieve(lens, question, values), noun, match["pro"].lower() in _PLURAL
        )
        and (verb in HAVE_WORDS or stem(verb) in tokenize(question))
        and _unconditioned(retrieve(lens, question, values))
        and not mentions_time(tokenize(question))
    ):
        return dataclasses.replace(ordering, key=match["key"])
    return ordering


def every_row_ordered(before: Plan, reading: Reading, ordered: Plan) -> Plan:
    """``ordered`` (``before`` with its closing ordering), held to the rule that a
    ranking without a count the ordering restated orders by the ranked measure.

    Raises:
        Declined: the ranking was dropped for the ordering, but the ordering is by
            another column or in the other direction, or the ranking is within groups.
    """
    if not reading.directions or before.rank is not None:
        return ordered
    if len(before.breakdowns) + (before.grain is not None) != 1:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a ranking without a count within groups ('the most … in each …'): say how many "
            "rows per group, or ask for the counts alone",
        )
    descending = next(iter(reading.directions))
    if ordered.order != (before.measure.name, descending):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a ranking without a count, then an ordering by something else: say how many "
            "rows (top 5 …), or order by the ranked measure",
        )
    return ordered


def pronoun_hint(unknown: list[str]) -> str:
    """A hint for a decline whose unknown words hold a pronoun, else ``""``."""
    pronoun = next((w for w in unknown if w.lower() in _PRONOUNS), None)
    if pronoun is None:
        return ""
    return (
        f" ('{pronoun}' is read only when it restates the count the question ranks by, "
        "with one noun it can refer to; say the noun instead)"
    )


def _clause_restates(lens: Lens, main: str, clause: re.Match[str], values: DimensionValues) -> bool:
    """Whether the closing ``and how many …`` clause restates the count ``main`` ranks by."""
    noun = tokenize(clause["noun"])
    verb = clause["verb"].lower()
    toks = tokenize(main)
    tail = (clause["tail"] or "").split()
    found = retrieve(lens, main, values)
    return (
        _ranks_by(lens, main, noun)
        and _one_antecedent(lens, found, noun, clause["pro"].lower() in _PLURAL)
        and (verb in HAVE_WORDS or stem(verb) in toks)
        and _pinned(toks, tail)
        and _unconditioned(found)
    )


def _unconditioned(found: Retrieval) -> bool:
    """Whether the question names no value or flag: "which author had the most papers in
    Nature, and how many papers did he have" may ask for all of his, or those in Nature."""
    return not any(m.kind in ("value", "flag") for m in found.mentions)


def _pinned(toks: tuple[str, ...], tail: list[str]) -> bool:
    """Whether the clause's ``tail`` counts over the same time as the question
    (``toks``): "that year" when it names exactly one year and no other time words, no
    tail or "in total" when it names no time at all."""
    if not mentions_time(toks):
        return tail[-1:] != ["year"]
    years = [t for t in toks if YEAR_RE.match(t)]
    others = [t for t in toks if t != "year" and not YEAR_RE.match(t)]
    return tail[-1:] == ["year"] and len(years) == 1 and not mentions_time(others)


def _nouns_at(lens: Lens, toks: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """``(start, end, model)`` of each model noun in ``toks``, longest first at each place."""
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(toks):
        width = next((n for n in range(longest, 0, -1) if toks[i : i + n] in nouns), 0)
        if width:
            out.append((i, i + width, nouns[toks[i : i + width]]))
            i += width
        else:
            i += 1
    return out


def _last_noun(lens: Lens, toks: tuple[str, ...]) -> tuple[str, ...] | None:
    found = _nouns_at(lens, toks)
    return toks[found[-1][0] : found[-1][1]] if found else None


def _ranks_by(lens: Lens, main: str, noun: tuple[str, ...]) -> bool:
    """Whether ``main`` ranks by a count of the model ``noun`` names."""
    if noun not in model_nouns(lens):
        return False
    toks = tokenize(main)
    for i, t in enumerate(toks):
        if t not in DESCENDING and t not in ASCENDING:
            continue
        after = toks[i + 1 :]
        if after[:2] in _COUNT_OF:
            after = after[2:]
        if after[: len(noun)] == noun:
            return True
    return False


def _one_antecedent(lens: Lens, found: Retrieval, noun: tuple[str, ...], many: bool) -> bool:
    """Whether exactly one model noun of the question ``found`` other than ``noun``'s
    model agrees in number with the pronoun (``many``: plural)."""
    counted = model_nouns(lens)[noun]
    candidates = {
        (start, model)
        for start, end, model in _nouns_at(lens, found.tokens)
        if model != counted and plural(found, end - 1) == many
    }
    return len(candidates) == 1
