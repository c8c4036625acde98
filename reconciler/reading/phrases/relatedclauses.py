"""A related-rows clause said another way: "people that are not poker players" (pure).

:func:`check_clause` declines a relative clause whose words the lens does not know
("the contestants who got voted"): a listing of every row would drop it.

:mod:`reconciler.reading.grammar.relatedsets` reads a listing kept by related rows
through the existence reader, whose clause is ``who`` / ``that`` / ``which`` / ``with``
and ``have``. :func:`restate` says four other spellings of that clause in its words,
each meaning exactly the rows the clause keeps:

* membership: ``<A> who|that|which are|is [not] [a|an] <B>`` at the end of the
  question ("people that are not poker players") is ``<A> that have [no] <B>``; it
  holds only when each *B* row is one *A* row, a direct declared join from *B* to *A*
  (:func:`member_link`), and declines otherwise;
* ``having`` right after a model noun opens the clause as ``that have`` does
  ("countries having a car maker"; "having at least one car maker" is a count
  condition, :mod:`reconciler.reading.grammar.having`'s);
* ``where there is [not a single | no | not any | a] <B>`` after a noun of *A*
  ("countries where there is not a single car maker") is ``that have [no | a] <B>``;
* ``except [for] [the] <A> <clause>`` right after a noun of the same model *A*
  ("all stadiums except for stadiums having a concert in 2014") keeps the rows the
  clause does not: the clause is read and negated (:attr:`Restated.negated`).

Anything else is left as it was (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Retrieval
from reconciler.assembly.text import STOPWORDS
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import RELATIVE_WORDS
from reconciler.reading.phrases.related import link

_COPULAS = frozenset({"are", "is", "was", "were"})
_ARTICLES = frozenset({"a", "an"})


@dataclass(frozen=True)
class Restated:
    """A question with its related-rows clause said as the existence reader reads it.

    Attributes:
        text: the question's words, restated.
        negated: whether the rows kept are those the clause does not keep (``except``).
        member: the model *B* of a membership clause ("are poker players"), if any.
    """

    text: str
    negated: bool = False
    member: str | None = None


def restate(lens: Lens, found: Retrieval) -> Restated | None:
    """The question of ``found`` restated (module docstring), or ``None`` when none of
    the three spellings is in it."""
    toks = list(found.tokens)
    covered = found.covered()
    nouns = model_nouns(lens)
    edits: list[tuple[int, int, list[str]]] = []  # (start, end, words), original indices
    excepted = _except_at(toks, covered, nouns)
    if excepted is not None:
        edits.append((*excepted, []))
    having = next(
        (
            i
            for i in range(1, len(toks))
            if toks[i] == "having" and i not in covered and _noun_before(toks, i, nouns)
        ),
        None,
    )
    if having is not None:
        edits.append((having, having + 1, ["that", "have"]))
    there = _there_at(toks, covered, nouns)
    if there is not None:
        edits.append(there)
    membership = _membership(toks, nouns) if excepted is None else None
    member = None
    if membership is not None:
        at, no, member = membership
        edits.append((at, len(toks) - _noun_width(toks, nouns), ["have", "no"] if no else ["have"]))
    if not edits:
        return None
    said = list(found.words)
    for a, b, words in sorted(edits, reverse=True):
        if any(a < d and c < b for c, d, _ in edits if (c, d) != (a, b)):
            return None  # two spellings over the same words
        said[a:b] = words
    return Restated(" ".join(said), excepted is not None, member)


_NONE = (("not", "a", "single"), ("not", "any"), ("not", "a"), ("not", "an"), ("no",))
_SOME = (("a",), ("an",), ("some",), ("any",))


def _there_at(
    toks: list[str], covered: frozenset[int], nouns: dict[tuple[str, ...], str]
) -> tuple[int, int, list[str]] | None:
    """``where there is [not a single | no | a] …`` after a model noun, as the edit
    to ``that have [no | a] …``; ``None`` when there is none."""
    for i in range(1, len(toks) - 3):
        if toks[i : i + 2] != ["where", "there"] or toks[i + 2] not in _COPULAS:
            continue
        if i in covered or not _noun_before(toks, i, nouns):
            return None
        k = i + 3
        for words, said in ((w, ["that", "have", "no"]) for w in _NONE):
            if tuple(toks[k : k + len(words)]) == words:
                return i, k + len(words), said
        for words in _SOME:
            if tuple(toks[k : k + len(words)]) == words:
                return i, k + 1, ["that", "have", "a"]
        return None
    return None


def _noun_before(toks: list[str], i: int, nouns: dict[tuple[str, ...], str]) -> bool:
    return any(tuple(toks[i - n : i]) in nouns for n in range(1, min(i, 4) + 1))


def _noun_width(toks: list[str], nouns: dict[tuple[str, ...], str]) -> int:
    """Tokens in the longest model noun the question ends with (0: none)."""
    return next((n for n in range(min(len(toks), 4), 0, -1) if tuple(toks[-n:]) in nouns), 0)


def _except_at(
    toks: list[str], covered: frozenset[int], nouns: dict[tuple[str, ...], str]
) -> tuple[int, int] | None:
    """The span ``except [for] [the] <A>`` after a noun of the same model *A*, whose
    clause follows, as ``(start, end)``; ``None`` when there is none."""
    for i in range(1, len(toks)):
        if toks[i] != "except" or i in covered:
            continue
        before = next(
            (
                nouns[tuple(toks[i - n : i])]
                for n in range(min(i, 4), 0, -1)
                if tuple(toks[i - n : i]) in nouns
            ),
            None,
        )
        k = i + 1
        while k < len(toks) and toks[k] in ("for", "the", "those"):
            k += 1
        width = next(
            (n for n in range(min(len(toks) - k, 4), 0, -1) if tuple(toks[k : k + n]) in nouns),
            0,
        )
        if before is None or not width or nouns[tuple(toks[k : k + width])] != before:
            return None
        return i, k + width
    return None


def _membership(toks: list[str], nouns: dict[tuple[str, ...], str]) -> tuple[int, bool, str] | None:
    """``(index of the copula, negated, B)`` of ``… that are [not] [a] <B>`` ending the
    question, else ``None``."""
    width = _noun_width(toks, nouns)
    if not width:
        return None
    k = len(toks) - width
    model = nouns[tuple(toks[k:])]
    if k and toks[k - 1] in _ARTICLES:
        k -= 1
    no = k > 0 and toks[k - 1] == "not"
    k -= 1 if no else 0
    if k < 2 or toks[k - 1] not in _COPULAS:
        return None
    if toks[k - 2] not in RELATIVE_WORDS and not _noun_before(toks, k - 1, nouns):
        return None
    return k - 1, no, model


def member_link(lens: Lens, listed: str, member: str, values: DimensionValues) -> None:
    """Hold that each ``member`` row is one ``listed`` row: a direct declared join from
    *B* to *A* (what "people that are poker players" means).

    Raises:
        Declined: any other link, or one :func:`~reconciler.reading.phrases.related.link`
            declines.
    """
    chosen = link(lens, listed, member, values)
    if chosen.root != member or chosen.inner or chosen.outer[1].to != listed:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{listed} that are {member}: each {member} row is not one {listed} row, so "
            f"which {listed} rows are meant?",
        )


_RELATIVE = frozenset({"who", "that", "which", "whose"})


def check_clause(found: Retrieval) -> None:
    """Decline a relative clause that says nothing the lens knows ("List the contestants
    who got voted" where the lens's vocabulary drops "voted": "who got" is all that is
    left); listing every row would drop the condition the asker stated.

    ``found`` is the whole question's retrieval, before orderings and bounds are split
    off ("whose earnings is higher than 300000" keeps its fact).

    Raises:
        Declined: ``UNKNOWN_TERM``, when every word after a relative word past the
            first is a stopword and no lens phrase covers one.
    """
    toks, covered = found.tokens, found.covered()
    for i in range(1, len(toks)):
        if toks[i] in _RELATIVE and all(
            toks[k] in STOPWORDS and k not in covered for k in range(i + 1, len(toks))
        ):
            clause = " ".join(found.words[i:])
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"{clause!r} names nothing this lens knows: say what the rows did or have",
            )
