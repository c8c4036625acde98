"""Comparison filters on facts: "with amount more than 100", "quantity between 2 and 5" (pure).

A fact phrase after ``with``, ``where``, ``whose``, ``having`` or ``[who|that|which]
have|has|had`` (or after ``and`` right behind another such comparison), followed by a
comparison and a whole number that no time unit follows ("with a price of over 100"
and "whose price is over 100" read the same: an article before the fact, and ``of``
or ``is`` after it), filters the rows the measure aggregates, instead of being a
measure itself:

| words | SQL |
|---|---|
| ``more``/``greater``/``higher``/``larger``/``bigger than``, ``over``, ``above`` … | ``>`` |
| ``at least``, ``no``/``not less``/``fewer``/``lower``/``smaller than`` | ``>=`` |
| ``less``/``fewer``/``lower``/``smaller than``, ``below``, ``under`` | ``<`` |
| ``at most``, ``no``/``not more``/``greater``/``higher``/``larger``/``bigger than`` | ``<=`` |
| ``between N and M`` | ``>= N AND <= M`` (inclusive) |
| ``equal to N``; a bare ``of N`` or ``is N`` ("a population of 80000") | ``=`` |

A whole number standing right between ``with``, ``having`` or ``[who|that|which]
have|has|had`` and the phrase of an integer column — a fact or a dimension whose
``data_type`` is an integer type — is how much of it the rows hold, an equality:
"the cars with 4 cylinders" reads ``cylinders = 4``, "hotels that have 5 stars"
``stars = 5``; a comparison before the number is its bound ("cars with more than 4
cylinders": ``cylinders > 4``, "that have at least 3 rooms": ``rooms >= 3``). A
column of any other type ("with 30 mpg" on a double) keeps its words, so the
question declines as before.

"in" before an integer column's phrase and whole numbers joined by "or" after it name
the rows so numbered: "students in grades 9 or 10" reads ``grade IN (9, 10)`` (one
number, "in grade 10", is read as the column's value, as before).

``over``, ``above``, ``below`` and ``under`` may also stand *before* the fact, a
whole number right after it and no introducer needed ("singers above age 20"); a
comparative adjective names the fact it compares, when the lens has a fact so named:
``older``/``younger than N`` (``age``), ``taller``/``shorter`` (``height``),
``heavier``/``lighter`` (``weight``).

:func:`split_bounds` takes these phrases off the question before it is read; the
fast tier resolves each fact from the measure's model along a safe join path (the
join-grain gate applies) and puts the condition in the WHERE. A comparison
anywhere else ("revenue more than 100", "more than 10.5") is not one of these and
keeps its words, so the question declines.

A negated comparison ("whose level is not higher than 4") is the opposite bound
(``<=``), not "anything but > 4": a row whose fact is NULL is not known to be at
most 4 and is left out, as ``<=`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reconciler.assembly.lexicon import DimensionValues, Target
from reconciler.assembly.retrieval import Mention, retrieve
from reconciler.assembly.text import GRAIN_WORDS, stem
from reconciler.lens import Lens
from reconciler.reading.phrases.naming import split_names

_INTRODUCERS = frozenset({"with", "where", "whose", "having"})
_ARTICLES = frozenset({"a", "an", "the"})
_RELATIVES = frozenset({"who", "that", "which"})
_HAVE = frozenset({"have", "has", "had"})
_IS = (("is",), ("are",), ("was",), ("were",))
_MORE = ("more", "greater", "higher", "larger", "bigger")
_LESS = ("less", "fewer", "lower", "smaller")
_COMPARATORS: tuple[tuple[tuple[str, ...], str], ...] = (
    # "no more than", "not higher than": the opposite bound
    *(((n, w, "than"), "<=") for n in ("no", "not") for w in _MORE),
    *(((n, w, "than"), ">=") for n in ("no", "not") for w in _LESS),
    (("more", "than"), ">"),
    (("greater", "than"), ">"),
    (("higher", "than"), ">"),
    (("larger", "than"), ">"),
    (("bigger", "than"), ">"),
    (("at", "least"), ">="),
    (("at", "most"), "<="),
    (("less", "than"), "<"),
    (("fewer", "than"), "<"),
    (("lower", "than"), "<"),
    (("smaller", "than"), "<"),
    (("over",), ">"),
    (("above",), ">"),
    (("exceeding",), ">"),
    (("below",), "<"),
    (("under",), "<"),
    (("equal", "to"), "="),
)
# Comparative adjectives that name the fact they compare: "singers older than 30".
_MEASURED = {
    "older": ("age", ">"),
    "younger": ("age", "<"),
    "taller": ("height", ">"),
    "shorter": ("height", "<"),
    "heavier": ("weight", ">"),
    "lighter": ("weight", "<"),
}
# One-word comparisons that may stand before the fact: "singers above age 20".
_AHEAD = {"over": ">", "above": ">", "below": "<", "under": "<"}
# Words before a whole number that make it an amount of the column after it.
_HOLDING = frozenset({"with", "having"})
_INTEGER = re.compile(r"^(?:big|small|tiny)?int(?:eger|\d*)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Bound:
    """One comparison filter: the facts its phrase may mean, and the conditions.

    Attributes:
        facts: the fact targets the phrase names (resolved against the plan's base).
        conditions: ``((operator, whole number), ...)`` — one, or two for ``between``.
        phrase: the words, for messages.
    """

    facts: tuple[Target, ...]
    conditions: tuple[tuple[str, str], ...]
    phrase: str


def split_bounds(
    lens: Lens, question: str, values: DimensionValues
) -> tuple[str, tuple[Bound, ...]]:
    """``(question without its fact comparisons, the comparisons)``; the question
    comes back as its words joined by spaces when any were taken off. The words
    tying a name or id to its row go first
    (:func:`~reconciler.reading.phrases.naming.split_names`)."""
    question = split_names(lens, question, values)
    found = retrieve(lens, question, values)
    words = found.words
    cut: list[tuple[int, int]] = []
    bounds: list[Bound] = []
    for m in found.mentions:
        facts = m.targets if m.kind == "fact" or _integers(lens, m) else m.facts
        held = _held(lens, words, m)  # "the cars with 4 cylinders"
        if held is not None and not (cut and cut[-1][1] > held[0]):
            cut.append((held[0], m.end))
            bounds.append(Bound(held[1], ((held[3], words[m.start - 1]),), held[2]))
            continue
        named = _named_in(lens, words, m)  # "students in grades 9 or 10"
        if named is not None and not (cut and cut[-1][1] > m.start - 1):
            cut.append((m.start - 1, named[0]))
            bounds.append(Bound(m.targets, named[1], " ".join(words[m.start - 1 : named[0]])))
            continue
        ahead = _ahead(words, m.start, m.end)  # "singers above age 20"
        if facts and ahead is not None and not (cut and cut[-1][1] > m.start - 1):
            cut.append((m.start - 1, m.end + 1))
            bounds.append(Bound(facts, ahead, " ".join(words[m.start - 1 : m.end + 1])))
            continue
        start = m.start - 1 if m.start and words[m.start - 1] in _ARTICLES else m.start
        before = words[start - 1] if start else ""
        joined = before == "and" and bool(cut) and cut[-1][1] == start - 1
        if before in _HAVE:  # "cars (that) have a horsepower above 150"
            start -= 2 if start >= 2 and words[start - 2] in _RELATIVES else 1
        if not facts or not (before in _INTRODUCERS | _HAVE or joined):
            continue
        # "with a price of over 100": the fact's "of" before its comparison; "whose
        # age is over 30": a verb "is" between them
        after = m.end + 1 if words[m.end : m.end + 1] in (("of",), *_IS) else m.end
        read = _comparison(words, after)
        if read is None and after > m.end:
            # "whose birth year is either 1948 or 1949"; "with a population of 80000"
            read = _any_of(words, after) or _equal(words, after)
        if read is None or (read[0] < len(words) and stem(words[read[0]]) in GRAIN_WORDS):
            continue  # "over 30 days" is a window, not a bound
        end, conditions = read
        cut.append((start, end))
        bounds.append(Bound(facts, conditions, " ".join(words[m.start : end])))
    _measured(lens, words, values, cut, bounds)
    # "above age 30 or under age 24" is no conjunction of bounds: its words stay
    pairs = [(c, b) for c, b in zip(cut, bounds, strict=True) if not _beside_or(words, c)]
    cut, bounds = [c for c, _ in pairs], [b for _, b in pairs]
    if not cut:
        return question, ()
    kept = [w for i, w in enumerate(words) if not any(a <= i < b for a, b in cut)]
    return " ".join(kept), tuple(bounds)


def _beside_or(words: tuple[str, ...], span: tuple[int, int]) -> bool:
    """Whether ``or`` stands right before or after the words ``span`` covers."""
    return "or" in (
        words[span[0] - 1] if span[0] else "",
        words[span[1]] if span[1] < len(words) else "",
    )


def _measured(
    lens: Lens,
    words: tuple[str, ...],
    values: DimensionValues,
    cut: list[tuple[int, int]],
    bounds: list[Bound],
) -> None:
    """Add to ``cut`` and ``bounds`` each comparative adjective that says which fact it
    compares ("older than 30": age, "taller than 200": height) followed by ``than`` and a
    whole number, no time unit after it, when the lens has a fact so named."""
    for i, word in enumerate(words[:-1]):
        if any(a <= i < b for a, b in cut):
            continue
        if word == "aged":  # "teachers aged 32", "aged over 30", "aged either 32 or 33"
            noun = "age"
            read = _comparison(words, i + 1) or _any_of(words, i + 1) or _equal(words, i + 1)
        elif word in _MEASURED and words[i + 1 : i + 2] == ("than",):
            noun, op = _MEASURED[word]
            number = words[i + 2] if i + 2 < len(words) and words[i + 2].isdigit() else None
            read = None if number is None else (i + 3, ((op, number),))
        else:
            continue
        if read is None or (read[0] < len(words) and stem(words[read[0]]) in GRAIN_WORDS):
            continue
        named = retrieve(lens, noun, values).mentions
        facts = tuple(t for m in named for t in (m.targets if m.kind == "fact" else m.facts))
        if facts:
            cut.append((i, read[0]))
            bounds.append(Bound(facts, read[1], " ".join(words[i : read[0]])))


def _held(
    lens: Lens, words: tuple[str, ...], m: Mention
) -> tuple[int, tuple[Target, ...], str, str] | None:
    """``(first word index, integer columns, phrase, operator)`` of a whole number
    between a holding word and the integer column phrase ``m`` ("with 4 cylinders",
    "that have 5 stars": ``=``), a comparison before the number ("with more than 4
    cylinders", "that have at least 3 rooms": its operator), else ``None``."""
    at = m.start - 1
    if at < 1 or not words[at].isdigit():
        return None
    if any(stem(w) in GRAIN_WORDS for w in words[m.start : m.end]):
        return None  # "with 5 years": a span of time, not an amount held
    op, start = "=", at - 1
    for said, compared in _COMPARATORS:
        if start - len(said) >= 0 and words[at - len(said) : at] == said:
            op, start = compared, at - len(said) - 1
            break
    if words[start] in _HAVE:
        start -= 1 if start and words[start - 1] in _RELATIVES else 0
    elif words[start] not in _HOLDING:
        return None
    named = m.targets if m.kind in ("fact", "dimension") else m.facts
    columns = tuple(t for t in named if _integer(lens, t))
    if not columns or len(columns) != len(named):
        return None
    return start, columns, " ".join(words[start + 1 : m.end]), op


def _integer(lens: Lens, target: Target) -> bool:
    """Whether ``target`` is a fact or dimension of integer type."""
    model = lens.models.get(target.model)
    if model is None or target.kind not in ("fact", "dimension"):
        return False
    column = next((c for c in model.columns() if c.name == target.name), None)
    return column is not None and bool(_INTEGER.match(column.data_type))


def _ahead(words: tuple[str, ...], start: int, end: int) -> tuple[tuple[str, str], ...] | None:
    """The condition of a one-word comparison *before* the fact at ``[start, end)`` and
    a whole number right after it, no time unit following ("above age 20"), else ``None``."""
    op = _AHEAD.get(words[start - 1]) if start else None
    number = words[end] if end < len(words) and words[end].isdigit() else None
    if op is None or number is None:
        return None
    if end + 1 < len(words) and stem(words[end + 1]) in GRAIN_WORDS:
        return None
    return ((op, number),)


def _any_of(words: tuple[str, ...], i: int) -> tuple[int, tuple[tuple[str, str], ...]] | None:
    """``(index after it, the condition)`` of whole numbers joined by one "or" at ``i``,
    "either" first or not ("either 32 or 33", "1948, 1949 or 1950": ``in``), else
    ``None``."""
    k = i + 1 if words[i : i + 1] == ("either",) else i
    said: list[str] = []
    ors = 0
    while k < len(words) and words[k].isdigit():
        said.append(words[k])
        k += 1
        if words[k : k + 1] == ("or",) and words[k + 1 : k + 2] and words[k + 1].isdigit():
            ors += 1
            k += 1
    if len(said) < 2 or ors != 1 or words[k - 2] != "or":
        return None
    return k, (("in", ",".join(said)),)


def _named_in(
    lens: Lens, words: tuple[str, ...], m: Mention
) -> tuple[int, tuple[tuple[str, str], ...]] | None:
    """``(index after it, the condition)`` of "in" before an integer column's phrase and
    whole numbers joined by "or" after it ("in grades 9 or 10"), no time unit following,
    else ``None``."""
    integer = m.kind in ("fact", "dimension") and bool(m.targets)
    if m.start < 1 or words[m.start - 1] != "in" or not integer:
        return None
    if not all(_integer(lens, t) for t in m.targets):
        return None
    read = _any_of(words, m.end)
    if read is None or (read[0] < len(words) and stem(words[read[0]]) in GRAIN_WORDS):
        return None
    return read


def _integers(lens: Lens, m: Mention) -> bool:
    """Whether ``m`` is a dimension phrase whose every column is of an integer type
    ("whose birth year is 1948": compared as a number, as a fact is)."""
    return m.kind == "dimension" and bool(m.targets) and all(_integer(lens, t) for t in m.targets)


def _equal(words: tuple[str, ...], i: int) -> tuple[int, tuple[tuple[str, str], ...]] | None:
    """``(index after it, the equality)`` of a bare whole number at ``i``, else ``None``."""
    if i < len(words) and words[i].isdigit():
        return i + 1, (("=", words[i]),)
    return None


def _comparison(words: tuple[str, ...], i: int) -> tuple[int, tuple[tuple[str, str], ...]] | None:
    """``(index after it, conditions)`` of a comparison starting at ``i``, else ``None``."""

    def number(k: int) -> str | None:
        return words[k] if k < len(words) and words[k].isdigit() else None

    if words[i : i + 1] == ("between",):
        low, high = number(i + 1), number(i + 3)
        if low is not None and high is not None and words[i + 2] == "and":
            return i + 4, ((">=", low), ("<=", high))
        return None
    for phrase, op in _COMPARATORS:
        if words[i : i + len(phrase)] == phrase:
            value = number(i + len(phrase))
            return (i + len(phrase) + 1, ((op, value),)) if value is not None else None
    return None
